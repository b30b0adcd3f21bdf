// Package cmd is the scv-tui command line: it finds scv-server, starts it
// as a child process through package client, and runs the Bubble Tea
// program of package app on the terminal, pumping the server's events into
// it. `scv` with no arguments execs scv-tui in the user's directory.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/version"
	"github.com/spf13/cobra"
)

// Flags are the command line of scv-tui.
type Flags struct {
	Dir     string // --cd/-C: the workspace; "" is the current directory
	Resume  string // --resume: a stored session to continue
	Attach  string // --attach: a session open in the daemon to join
	Model   string // --model: a model override
	Prompt  string // PROMPT: sent once the session is ready
	LogFile string // --log-file: where the server's stderr goes
	// Daemon (--daemon) talks to the running daemon through `scv-server
	// connect` instead of starting a server of its own, when one runs.
	Daemon bool
	// NoDaemon (--no-daemon) starts a server of its own even when a
	// daemon runs. Without either flag, daemon.use decides.
	NoDaemon bool
}

// Main runs scv-tui with the process's arguments and returns its exit
// code.
func Main() int {
	return Run(os.Args[1:], os.Stdout, os.Stderr, RunTUI)
}

// Run parses args and calls run with the flags; it is the only place an
// error becomes an exit code. Tests pass their own run.
func Run(args []string, stdout, stderr io.Writer, run func(context.Context, Flags) error) int {
	root := NewCommand(run)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	c, err := root.ExecuteC()
	return int(program.Exit(stderr, c, err))
}

// program is how scv-tui reports errors: "scv-tui: message", with a
// --help hint after a usage error; a *cli.ExitError without a message
// (Ctrl+C) prints nothing.
var program = cli.Program{Name: "scv-tui"}

// NewCommand returns the scv-tui command; run does the work.
func NewCommand(run func(context.Context, Flags) error) *cobra.Command {
	var f Flags
	c := &cobra.Command{
		Use:   "scv-tui [flags] [PROMPT]",
		Short: "SCV's terminal UI",
		Long: `scv-tui is SCV's interactive terminal UI. It starts scv-server --stdio as a
child process in the workspace (the current directory, or --cd) and talks
to it with the SCV protocol. "scv" with no arguments runs it.

The server's stderr goes to a log file ($SCV_HOME/logs/tui-server.log by
default, or --log-file), never onto the screen; /help shows where.

Exit codes: 0 ok, 1 error, 2 usage error, 130 interrupted.`,
		Version:       version.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return &cli.UsageError{Err: fmt.Errorf("scv-tui takes at most one PROMPT, got %d arguments; quote a prompt of several words", len(args))}
			}
			if len(args) == 1 {
				if strings.TrimSpace(args[0]) == "" {
					return &cli.UsageError{Err: errors.New("the PROMPT is empty; leave it out to start without one")}
				}
				f.Prompt = args[0]
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := workspace(f.Dir)
			if err != nil {
				return err
			}
			f.Dir = dir
			if f.LogFile != "" {
				if f.LogFile, err = filepath.Abs(f.LogFile); err != nil {
					return fmt.Errorf("--log-file: %w", err)
				}
			}
			return run(cmd.Context(), f)
		},
	}
	c.SetVersionTemplate("scv-tui " + version.Version + "\n")
	c.SetFlagErrorFunc(cli.FlagErrorFunc)
	c.CompletionOptions.DisableDefaultCmd = true
	fl := c.Flags()
	fl.StringVarP(&f.Dir, "cd", "C", "", "run in `DIR` instead of the current directory")
	fl.StringVar(&f.Resume, "resume", "", "continue the stored session `ID` of this workspace")
	fl.StringVar(&f.Attach, "attach", "", "join the session `ID` open in the daemon (scv status lists them), replaying its recent events; a session not open there is resumed")
	fl.StringVar(&f.Model, "model", "", "use model `M` instead of the configured one")
	fl.StringVar(&f.LogFile, "log-file", "", "append the server's stderr to `PATH` (default $SCV_HOME/logs/tui-server.log)")
	fl.BoolVar(&f.Daemon, "daemon", false, "use the running daemon (scv daemon start), whose sessions outlive the UI; without one, start a server as usual (daemon.use = \"auto\")")
	fl.BoolVar(&f.NoDaemon, "no-daemon", false, "start a server of its own even when a daemon runs (daemon.use = \"never\")")
	c.MarkFlagsMutuallyExclusive("daemon", "no-daemon")
	c.MarkFlagsMutuallyExclusive("attach", "resume")
	return c
}

// workspace returns the absolute workspace directory (paths.ResolveWorkspace),
// refusing one that does not exist; a bad --cd is a usage error.
func workspace(dir string) (string, error) {
	abs, err := paths.ResolveWorkspace(dir, false)
	var we *paths.WorkspaceError
	if err == nil || !errors.As(err, &we) {
		return abs, err
	}
	switch {
	case dir == "":
		return "", fmt.Errorf("cannot tell the current directory: %w", we.Err)
	case we.Step == paths.WorkspaceAbs:
		return "", &cli.UsageError{Err: fmt.Errorf("--cd %s: %w", dir, we.Err)}
	case we.Step == paths.WorkspaceNotDir:
		return "", &cli.UsageError{Err: fmt.Errorf("--cd %s: not a directory", dir)}
	}
	return "", &cli.UsageError{Err: fmt.Errorf("--cd %s: no such directory", dir)}
}
