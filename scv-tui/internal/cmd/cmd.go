// Package cmd is the scv-tui command line. The binary is a placeholder until
// its feature lands (see shared/placeholder).
package cmd

import (
	"os"

	"github.com/scv-cli/scv/shared/placeholder"
)

// Command describes scv-tui.
var Command = placeholder.Command{
	Name:     "scv-tui",
	Short:    "SCV's terminal UI (not built yet)",
	Long:     "scv-tui will be SCV's terminal UI, a client of scv-server. It is not built yet;\nuntil it is, `scv exec PROMPT` runs a turn headless.",
	NotBuilt: "the terminal UI is not built yet; use `scv exec`",
}

// Main runs scv-tui with the process's arguments and returns its exit code.
func Main() placeholder.Code {
	return Command.Run(os.Args[1:], os.Stdout, os.Stderr)
}
