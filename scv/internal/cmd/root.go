// Package cmd is the scv command tree and Main, which maps its errors to the
// exit codes of package cli.
package cmd

import (
	"context"
	"os"

	"github.com/scv-cli/scv/scv/internal/cmd/acp"
	"github.com/scv-cli/scv/scv/internal/cmd/appserver"
	"github.com/scv-cli/scv/scv/internal/cmd/config"
	"github.com/scv-cli/scv/scv/internal/cmd/daemon"
	"github.com/scv-cli/scv/scv/internal/cmd/exec"
	"github.com/scv-cli/scv/scv/internal/cmd/server"
	"github.com/scv-cli/scv/scv/internal/cmd/version"
	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	sharedversion "github.com/scv-cli/scv/shared/version"
	"github.com/spf13/cobra"
)

// Main runs scv with the process's arguments and returns its exit code.
func Main() cli.Code {
	return Run(cmdutil.New(), os.Args[1:])
}

// Run runs scv with args and returns its exit code. It is the only place
// an error becomes an exit code.
func Run(f *cmdutil.Factory, args []string) cli.Code {
	root := NewCmdRoot(f, nil)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(context.Background())
	return Program.Exit(f.IO.ErrOut, cmd, err)
}

// Program is how scv reports errors: "scv: message" on stderr, followed by
// a --help hint for usage errors; nothing for an error the command already
// reported.
var Program = cli.Program{Name: "scv"}

// NewCmdRoot returns the root command with every subcommand. runTUI
// replaces the no-argument behaviour in tests.
func NewCmdRoot(f *cmdutil.Factory, runTUI func() error) *cobra.Command {
	var useDaemon, noDaemon bool
	var attach string
	root := &cobra.Command{
		Use:   "scv",
		Short: "SCV, a terminal agent runtime",
		Long: `SCV is a terminal agent runtime. Run scv with no arguments for the terminal UI,
or "scv exec PROMPT" to run one turn headless.

Exit codes: 0 ok, 1 error or failed turn, 2 usage error, 130 interrupted.`,
		Version:       sharedversion.Version,
		Args:          cli.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runTUI != nil {
				return runTUI()
			}
			return tuiRun(f, useDaemon, noDaemon, attach)
		},
	}
	root.Flags().BoolVar(&useDaemon, "daemon", false, "run the terminal UI on the running daemon (scv daemon start), whose sessions outlive it (daemon.use = \"auto\")")
	root.Flags().BoolVar(&noDaemon, "no-daemon", false, "run the terminal UI on a server of its own even when a daemon runs (daemon.use = \"never\")")
	root.Flags().StringVar(&attach, "attach", "", "run the terminal UI on the session `ID` open in the daemon (scv status lists them), with its recent events; a session not open there is resumed")
	root.MarkFlagsMutuallyExclusive("daemon", "no-daemon")
	root.SetVersionTemplate(version.Line() + "\n")
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	// Subcommands inherit this, so every flag mistake exits 2.
	root.SetFlagErrorFunc(cli.FlagErrorFunc)
	// Completion scripts can come later; a hidden "completion" command
	// would only be one more thing to keep working.
	root.CompletionOptions.DisableDefaultCmd = true

	root.AddCommand(
		newCmdAgents(f, nil),
		config.NewCmdConfig(f, nil, nil),
		exec.NewCmdExec(f, nil),
		newCmdMCP(f, nil),
		server.NewCmdServer(f, nil),
		acp.NewCmdACP(f, nil),
		appserver.NewCmdAppServer(f, nil),
		appserver.NewCmdDebug(f, nil),
		daemon.NewCmdDaemon(f),
		daemon.NewCmdUpdate(f),
		version.NewCmdVersion(f),
	)
	root.AddCommand(daemon.NewCmdsTopLevel(f)...)
	return root
}

// tuiRun becomes scv-tui, which inherits the terminal.
func tuiRun(f *cmdutil.Factory, useDaemon, noDaemon bool, attach string) error {
	path, err := f.FindBinary(client.TUI)
	if err != nil {
		return err
	}
	argv := []string{client.TUI}
	if useDaemon {
		argv = append(argv, "--daemon")
	}
	if noDaemon {
		argv = append(argv, "--no-daemon")
	}
	if attach != "" {
		argv = append(argv, "--attach", attach)
	}
	return f.Exec(path, argv)
}
