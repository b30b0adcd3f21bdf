// Package cmd is the scv-agents command line. The binary is a placeholder until
// its feature lands (see shared/placeholder).
package cmd

import (
	"os"

	"github.com/scv-cli/scv/shared/placeholder"
)

// Command describes scv-agents.
var Command = placeholder.Command{
	Name:     "scv-agents",
	Short:    "SCV's delegated-agent supervisor (not built yet)",
	Long:     "scv-agents will run the agent CLIs that SCV delegates to. It is not built yet;\ndelegated agents land in a later issue.",
	NotBuilt: "delegated agents are not built yet; they land in a later issue",
}

// Main runs scv-agents with the process's arguments and returns its exit code.
func Main() placeholder.Code {
	return Command.Run(os.Args[1:], os.Stdout, os.Stderr)
}
