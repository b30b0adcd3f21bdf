// Package cmd is the scv-agents command tree (`scv agents …`) and Main,
// which maps its errors to exit codes: 0 ok, 1 failure, 2 usage.
package cmd

import (
	"context"
	"os"

	"github.com/scv-cli/scv/scv-agents/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	sharedversion "github.com/scv-cli/scv/shared/version"
	"github.com/spf13/cobra"
)

// Main runs scv-agents with the process's arguments and returns its exit
// code.
func Main() int { return Run(cmdutil.New(), os.Args[1:]) }

// Run runs scv-agents with args and returns its exit code. It is the only
// place an error becomes an exit code.
func Run(f *cmdutil.Factory, args []string) int {
	root := NewCmdRoot(f)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(context.Background())
	return int(program.Exit(f.IO.ErrOut, cmd, err))
}

// program is how scv-agents reports errors, under the name the user typed
// most likely ("scv agents").
var program = cli.Program{Name: "scv agents"}

// NewCmdRoot returns the root command with every subcommand.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "scv-agents",
		Short: "Manage SCV's delegated agents: running delegations, transcripts and sign-ins",
		Long: `Manage the agent CLIs SCV delegates to (also reachable as "scv agents").

Each agent keeps its state and sign-in in a private home under
$SCV_HOME/agents/<name>, separate from your own login.

Exit codes: 0 ok, 1 failure, 2 usage error.`,
		Version:       sharedversion.Version,
		Args:          cli.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		// Runnable, so that cobra checks Args: a mistyped subcommand is a
		// usage error rather than the help text and exit 0.
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	root.SetVersionTemplate("scv-agents {{.Version}}\n")
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(cli.FlagErrorFunc)
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		NewCmdPs(f, nil),
		NewCmdKill(f, nil),
		NewCmdGC(f, nil),
		NewCmdStatus(f, nil),
		NewCmdLogin(f, nil),
		NewCmdLogout(f, nil),
		NewCmdImport(f, nil),
	)
	return root
}
