// Package cmd is the scv command tree and Main, which maps its errors to the
// exit codes of package cli.
package cmd

import (
	"context"
	"os"
	"strings"

	"github.com/scv-cli/scv/scv/internal/cmd/acp"
	"github.com/scv-cli/scv/scv/internal/cmd/appserver"
	"github.com/scv-cli/scv/scv/internal/cmd/channels"
	"github.com/scv-cli/scv/scv/internal/cmd/config"
	"github.com/scv-cli/scv/scv/internal/cmd/daemon"
	"github.com/scv-cli/scv/scv/internal/cmd/exec"
	"github.com/scv-cli/scv/scv/internal/cmd/server"
	"github.com/scv-cli/scv/scv/internal/cmd/setup"
	"github.com/scv-cli/scv/scv/internal/cmd/version"
	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/paths"
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
	var o tuiOptions
	root := &cobra.Command{
		Use:   "scv [flags] [PROMPT]",
		Short: "SCV, a terminal agent runtime",
		Long: `SCV is a terminal agent runtime. Run scv for the terminal UI (with PROMPT, it
starts with that prompt), or "scv exec PROMPT" to run one turn headless.

Exit codes: 0 ok, 1 error or failed turn, 2 usage error, 130 interrupted.`,
		Example: `  scv
  scv "fix the failing tests"
  scv -C ~/src/app --model gpt-4.1
  scv --resume 0b6f4c2e-9d1a-4e8b-a7c3-5f2d1e0c9b84`,
		Version:       sharedversion.Version,
		Args:          tuiArgs(&o),
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runTUI != nil {
				return runTUI()
			}
			return tuiRun(f, o)
		},
	}
	fl := root.Flags()
	fl.StringVarP(&o.dir, "cd", "C", "", "run in `DIR` instead of the current directory")
	fl.StringVar(&o.resume, "resume", "", "continue the stored session `ID` of this workspace")
	fl.StringVar(&o.model, "model", "", "use model `M` instead of the configured one")
	fl.StringVar(&o.logFile, "log-file", "", "append the server's stderr to `PATH` (default $SCV_HOME/logs/tui-server.log)")
	fl.BoolVar(&o.daemon, "daemon", false, "run the terminal UI on the running daemon (scv daemon start), whose sessions outlive it (daemon.use = \"auto\")")
	fl.BoolVar(&o.noDaemon, "no-daemon", false, "run the terminal UI on a server of its own even when a daemon runs (daemon.use = \"never\")")
	fl.StringVar(&o.attach, "attach", "", "run the terminal UI on the session `ID` open in the daemon (scv status lists them), with its recent events; a session not open there is resumed")
	_ = root.RegisterFlagCompletionFunc("model", completeModels)
	_ = root.RegisterFlagCompletionFunc("resume", completeSessions(f))
	_ = root.MarkFlagDirname("cd")
	root.MarkFlagsMutuallyExclusive("daemon", "no-daemon")
	root.MarkFlagsMutuallyExclusive("attach", "resume")
	root.SuggestionsMinimumDistance = 2
	root.SetVersionTemplate(version.Line() + "\n")
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	// Subcommands inherit this, so every flag mistake exits 2.
	root.SetFlagErrorFunc(cli.FlagErrorFunc)
	// `scv completion bash|zsh|fish|powershell` prints a completion script
	// (cobra's, which knows every command and flag).
	root.CompletionOptions.HiddenDefaultCmd = false

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
		channels.NewCmdChannels(f, nil),
		version.NewCmdVersion(f),
		setup.NewCmdSetup(f),
	)
	root.AddCommand(daemon.NewCmdsTopLevel(f)...)
	return root
}

// tuiOptions are the terminal UI's flags and PROMPT, passed on to scv-tui.
type tuiOptions struct {
	dir, resume, model, logFile, attach, prompt string
	daemon, noDaemon                            bool
}

// tuiArgs takes the optional PROMPT of the terminal UI; a subcommand's
// name is a subcommand, not a prompt.
func tuiArgs(o *tuiOptions) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) > 1:
			return cli.UsageErrorf("scv takes at most one PROMPT, got %d arguments: quote a prompt of several words, or see scv --help for the commands", len(args))
		case len(args) == 1 && strings.TrimSpace(args[0]) == "":
			return cli.UsageErrorf("the PROMPT is empty; leave it out to start without one")
		case len(args) == 1 && cmd.ArgsLenAtDash() != 0 && !strings.ContainsAny(args[0], " \t\n"):
			// One word that looks like a mistyped command is more likely
			// that than a prompt; after "--" it is a prompt.
			if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
				return cli.UsageErrorf("unknown command %q for \"scv\"; did you mean %s? (to start the UI with the prompt %q, run: scv -- %s)",
					args[0], strings.Join(near, " or "), args[0], args[0])
			}
			o.prompt = args[0]
		case len(args) == 1:
			o.prompt = args[0]
		}
		return nil
	}
}

// tuiRun becomes scv-tui, which inherits the terminal.
func tuiRun(f *cmdutil.Factory, o tuiOptions) error {
	path, err := f.FindBinary(client.TUI)
	if err != nil {
		return err
	}
	if o.resume == "" && o.attach == "" && f.StdinIsTerminal != nil && f.StdinIsTerminal() {
		if err := setup.Offer(context.Background(), &setup.Options{IO: f.IO, Env: paths.OSEnv()}); err != nil {
			return err
		}
	}
	argv := []string{client.TUI}
	for _, fl := range []struct{ name, value string }{{"--cd", o.dir}, {"--resume", o.resume}, {"--model", o.model}, {"--log-file", o.logFile}, {"--attach", o.attach}} {
		if fl.value != "" {
			argv = append(argv, fl.name+"="+fl.value)
		}
	}
	if o.daemon {
		argv = append(argv, "--daemon")
	}
	if o.noDaemon {
		argv = append(argv, "--no-daemon")
	}
	if o.prompt != "" {
		argv = append(argv, "--", o.prompt)
	}
	return f.Exec(path, argv)
}
