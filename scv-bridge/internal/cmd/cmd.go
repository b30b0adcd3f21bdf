// Package cmd is the scv-bridge command line. The binary is a placeholder until
// its feature lands (see shared/placeholder).
package cmd

import (
	"os"

	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/placeholder"
)

// Command describes scv-bridge.
var Command = placeholder.Command{
	Name:     "scv-bridge",
	Short:    "SCV's chat bridge (not built yet)",
	Long:     "scv-bridge will relay chat conversations to SCV sessions. It is not built yet;\nthe chat bridge lands in a later issue.",
	NotBuilt: "the chat bridge is not built yet; it lands in a later issue",
}

// Main runs scv-bridge with the process's arguments and returns its exit code.
func Main() cli.Code {
	return Command.Run(os.Args[1:], os.Stdout, os.Stderr)
}
