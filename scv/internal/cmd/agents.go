package cmd

import (
	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/client"
	"github.com/spf13/cobra"
)

// agentsBinary is the sibling binary behind `scv agents`.
const agentsBinary = client.Agents

// newCmdAgents returns `scv agents`, which becomes scv-agents with every
// argument passed through. runF replaces the behaviour in tests.
func newCmdAgents(f *cmdutil.Factory, runF func(args []string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "agents COMMAND [flags]",
		Short: "Manage delegated agents: ps, kill, gc, status, login, logout, import",
		Long: `Manage the agent CLIs SCV delegates to (the same as scv-agents):
	scv agents ps [--all]                     running delegations of this instance
	scv agents kill HANDLE | --orphans        stop a delegated run, or every orphan
	scv agents gc [--dry-run] [--older-than D] [AGENT]
	scv agents status                         every agent's sign-in state
	scv agents login NAME [-- ARGS]           sign an agent in, in its private home
	scv agents logout NAME
	scv agents import codex|grok|pi --from-scv-provider|scv
Run "scv agents --help" for the full help.`,
		// Every flag, --help included, belongs to scv-agents.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(args)
			}
			path, err := f.FindBinary(agentsBinary)
			if err != nil {
				return err
			}
			// Exec, as for scv server: the terminal (login prompts, keys
			// read without echo) and signals reach scv-agents directly.
			return f.Exec(path, append([]string{agentsBinary}, args...))
		},
	}
}
