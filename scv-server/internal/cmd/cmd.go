// Package cmd is the scv-server command line: `scv-server --stdio` serves
// the protocol on standard input and output, `scv-server schema --out DIR`
// writes the protocol's JSON Schema. Run maps errors to the exit codes of
// the CLI kit (shared/cli) in one place.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv-server/internal/daemon"
	"github.com/scv-cli/scv/scv-server/internal/dialect/ndjson"
	"github.com/scv-cli/scv/scv-server/internal/logwriter"
	"github.com/scv-cli/scv/scv-server/internal/server"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/protocol/schema"
	"github.com/scv-cli/scv/shared/version"
)

// IO is the process's standard streams and environment.
type IO struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	Env    paths.Env
}

// Main runs the command with os.Args and returns the exit code.
//
// Before anything can write to stdout or stderr, SIGPIPE is asked for on a
// channel: a write to a closed pipe on fd 1 or 2 then fails with EPIPE
// instead of killing the process (os/signal), so neither a client that
// closed stdout nor a stderr whose reader is gone can kill the server.
// Notify, unlike Ignore, leaves children with the default SIGPIPE. The log
// goes through a logwriter, so a stderr nobody reads never blocks it.
func Main() int {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	errOut := logwriter.New(os.Stderr, 0)
	code := Run(os.Args[1:], IO{In: os.Stdin, Out: os.Stdout, ErrOut: errOut, Env: paths.OSEnv()})
	errOut.Close(logFlushTimeout)
	return code
}

// logFlushTimeout bounds the wait at exit for the log to reach stderr.
const logFlushTimeout = 2 * time.Second

// shutdownSignals end the server the way the end of input does: running
// turns are cancelled, their processes reaped and their ends written,
// then the process exits 1. SIGHUP is the terminal closing.
var shutdownSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// Run runs the command with args and returns the exit code.
func Run(args []string, stdio IO) int {
	ctx, stop := signal.NotifyContext(context.Background(), shutdownSignals...)
	defer stop()
	root := NewCmdRoot(stdio)
	root.SetArgs(args)
	root.SetOut(stdio.ErrOut) // help and usage never touch the protocol stream
	root.SetErr(stdio.ErrOut)
	err := root.ExecuteContext(ctx)
	return int(program.Exit(stdio.ErrOut, nil, classify(err)))
}

// program is how scv-server reports errors: "scv-server: message" on
// stderr, without a --help hint (its stderr is a log).
var program = cli.Program{Name: "scv-server", NoUsageHint: true}

// classify gives the server's errors their exit codes of the CLI kit's
// table: 3 for a client that speaks no version of ours, 78 for a
// configuration refused before any input was read; a run ended by a signal
// exits 1 without a message (the signal said it all).
func classify(err error) error {
	switch {
	case err == nil, cli.IsUsage(err):
		return err
	case errors.Is(err, ndjson.ErrVersionMismatch):
		return cli.WithCode(cli.VersionMismatch, err)
	case errors.As(err, new(*daemon.AlreadyRunningError)):
		return cli.WithCode(cli.Daemon, err)
	case errors.Is(err, errDelegated):
		return cli.WithCode(cli.Usage, err)
	case errors.Is(err, server.ErrConfig):
		return cli.WithCode(cli.Config, err)
	case errors.Is(err, context.Canceled):
		return cli.WithCode(cli.Failure, nil)
	}
	return err
}

// NewCmdRoot returns the root command.
func NewCmdRoot(stdio IO) *cobra.Command {
	var (
		useStdio   bool
		policy     string
		logLevel   string
		cpuProfile string
	)
	root := &cobra.Command{
		Use:           "scv-server --stdio",
		Short:         "SCV's agent runtime, serving the SCV protocol",
		Long:          "scv-server runs SCV's agent loop behind a newline-delimited JSON protocol on standard input and output (see docs/protocol.md).",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !useStdio {
				return cli.UsageErrorf("nothing to do: run `scv-server --stdio` to serve the protocol on stdin and stdout (see --help)")
			}
			log, err := newLogger(stdio.ErrOut, logLevel, stdio.Env)
			if err != nil {
				return &cli.UsageError{Err: err}
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return cli.UsageErrorf("--cpuprofile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("starting the CPU profile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			return server.RunStdio(cmd.Context(), server.Options{Env: stdio.Env, ApprovalPolicy: policy, Logger: log}, stdio.In, stdio.Out)
		},
	}
	root.Flags().BoolVar(&useStdio, "stdio", false, "serve the protocol on standard input and output")
	root.Flags().StringVar(&policy, "approval-policy", "", "override tools.approval_policy: on-risk, never or auto")
	root.Flags().StringVar(&logLevel, "log-level", "", "log level on stderr: debug, info, warn or error (default warn, or $SCV_LOG_LEVEL)")
	root.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile to this file (for performance work)")
	_ = root.Flags().MarkHidden("cpuprofile")
	root.SetFlagErrorFunc(cli.FlagErrorFunc)
	root.AddCommand(newCmdSchema(stdio), newCmdVersion(stdio), newCmdACP(stdio), newCmdAppServer(stdio), newCmdDebug(stdio), newCmdDaemon(stdio), newCmdConnect(stdio), newCmdMCP(stdio))
	return root
}

func newCmdACP(stdio IO) *cobra.Command {
	var policy, logLevel string
	var useDaemon bool
	cmd := &cobra.Command{
		Use:   "acp",
		Short: "Serve the Agent Client Protocol on stdin and stdout, for editors such as Zed",
		Long: `scv-server acp serves ACP v1 (JSON-RPC 2.0, one message per line) on standard input and output,
over the same session runtime as --stdio; logs go to stderr (see docs/acp.md).

Exit codes: 0 at the end of input, 1 on a runtime failure or a signal, 2 on a usage error,
78 when the configuration cannot be loaded (reported on stderr before any input is read).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(stdio.ErrOut, logLevel, stdio.Env)
			if err != nil {
				return &cli.UsageError{Err: err}
			}
			if useDaemon {
				if policy != "" {
					return &cli.UsageError{Err: errors.New("--approval-policy cannot be used with --daemon: the daemon's sessions follow its own configuration; switch the session's mode from the editor instead")}
				}
				done, err := throughDaemon(stdio, log, acpDialect)
				if done || err != nil {
					return err
				}
			}
			return server.RunACP(cmd.Context(), server.Options{Env: stdio.Env, ApprovalPolicy: policy, Logger: log}, stdio.In, stdio.Out)
		},
	}
	cmd.Flags().StringVar(&policy, "approval-policy", "", "override tools.approval_policy: on-risk, never or auto (the session's starting mode)")
	cmd.Flags().BoolVar(&useDaemon, "daemon", false, "run the sessions in the running daemon (they outlive the editor); without a daemon, serve them here")
	cmd.Flags().StringVar(&logLevel, "log-level", "", "log level on stderr: debug, info, warn or error (default warn, or $SCV_LOG_LEVEL)")
	return cmd
}

func newCmdMCP(stdio IO) *cobra.Command {
	mcpCmd := &cobra.Command{Use: "mcp", Short: "The configured MCP servers", Args: cobra.NoArgs}
	var asJSON bool
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "Start the configured MCP servers, print their status and tools, stop them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(stdio.ErrOut, "", stdio.Env)
			if err != nil {
				return &cli.UsageError{Err: err}
			}
			return server.ListMCP(cmd.Context(), stdio.Env, stdio.Out, asJSON, log)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "one JSON object a line: name, transport, state, error, tools, skipped")
	mcpCmd.AddCommand(list)
	return mcpCmd
}

func newCmdSchema(stdio IO) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "schema --out DIR",
		Short: "Write the JSON Schema of every protocol message into DIR",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if out == "" {
				return cli.UsageErrorf("schema needs --out DIR")
			}
			if err := schema.Write(out); err != nil {
				return err
			}
			fmt.Fprintf(stdio.ErrOut, "wrote the protocol schema to %s\n", out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write the schema files into")
	return cmd
}

func newCmdVersion(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintf(stdio.Out, "scv-server %s (protocol versions %d-%d)\n", version.Version, protocol.Oldest, protocol.Latest)
			return nil
		},
	}
}

func newLogger(w io.Writer, level string, env paths.Env) (*slog.Logger, error) {
	if level == "" {
		level = env.Getenv("SCV_LOG_LEVEL")
	}
	var l slog.Level
	switch strings.ToLower(level) {
	case "", "warn", "warning":
		l = slog.LevelWarn
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "error":
		l = slog.LevelError
	default:
		return nil, fmt.Errorf("unknown log level %q: use debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
