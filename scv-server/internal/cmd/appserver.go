package cmd

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv-server/internal/dialect/appserver"
	"github.com/scv-cli/scv/scv-server/internal/server"
	"github.com/scv-cli/scv/shared/cli"
)

// defaultTimeoutSeconds is --timeout-seconds' default: the model
// request timeout of App Server turns.
const defaultTimeoutSeconds = 90

// newCmdAppServer is `scv-server app-server`: the App Server (JSON-RPC
// 2.0 over JSON lines, docs/app-server.md) on stdin and stdout, and its
// schema and generate-ts subcommands.
func newCmdAppServer(stdio IO) *cobra.Command {
	var listen, model, provider, policy, logLevel string
	var timeout int
	var useDaemon bool
	cmd := &cobra.Command{
		Use:   "app-server --listen stdio [--model M] [--provider P] [--timeout-seconds N]",
		Short: "Serve the App Server protocol (JSON-RPC over JSON lines) for desktop apps and IDE shells",
		Long: `scv-server app-server serves the App Server protocol v1 (JSON-RPC 2.0, one message per line) on
standard input and output, over the same session runtime as --stdio; stdout is protocol only, logs
go to stderr (see docs/app-server.md). The configuration and the model are resolved before any input
is read; the end of input cancels running turns, sends their turn/completed and exits 0.

Exit codes: 0 at the end of input, 1 on a runtime failure or a signal, 2 on a usage error,
78 when the configuration cannot be loaded.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listen != "stdio" {
				return cli.UsageErrorf("--listen %q: the App Server listens on stdio only (--listen stdio); use --daemon for the daemon's socket", listen)
			}
			if timeout <= 0 {
				return cli.UsageErrorf("--timeout-seconds must be a positive number of seconds, not %d", timeout)
			}
			log, err := newLogger(stdio.ErrOut, logLevel, stdio.Env)
			if err != nil {
				return &cli.UsageError{Err: err}
			}
			if useDaemon {
				if model != "" || provider != "" || policy != "" || cmd.Flags().Changed("timeout-seconds") {
					return &cli.UsageError{Err: errors.New("--model, --provider, --timeout-seconds and --approval-policy cannot be used with --daemon: the daemon's sessions follow its own configuration")}
				}
				done, err := throughDaemon(stdio, log, appServerDialect)
				if done || err != nil {
					return err
				}
			}
			return server.RunAppServer(cmd.Context(), server.Options{Env: stdio.Env, ApprovalPolicy: policy, Logger: log,
				Provider: provider, Model: model, TimeoutSeconds: timeout}, stdio.In, stdio.Out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "", "transport: stdio (required)")
	f.StringVar(&model, "model", "", "the model of the provider (default: the provider's configured model)")
	f.StringVar(&provider, "provider", "", "the provider, a [providers.NAME] of the configuration (default: provider.active)")
	f.IntVar(&timeout, "timeout-seconds", defaultTimeoutSeconds, "the timeout of one model request, in seconds")
	f.StringVar(&policy, "approval-policy", "", "override tools.approval_policy for the agentKey \"default\": on-risk, never or auto")
	f.BoolVar(&useDaemon, "daemon", false, "run the threads in the running daemon (they outlive the client); without a daemon, serve them here")
	f.StringVar(&logLevel, "log-level", "", "log level on stderr: debug, info, warn or error (default warn, or $SCV_LOG_LEVEL)")
	cmd.AddCommand(newCmdAppServerSchema(stdio, "schema", "Write the JSON Schema of the App Server protocol into DIR/json", appserver.WriteSchema),
		newCmdAppServerSchema(stdio, "generate-ts", "Write the TypeScript definitions of the App Server protocol into DIR", appserver.WriteTS))
	return cmd
}

func newCmdAppServerSchema(stdio IO, use, short string, write func(string) error) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   use + " --out DIR",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if out == "" {
				return cli.UsageErrorf("%s needs --out DIR", use)
			}
			if err := write(out); err != nil {
				return err
			}
			fmt.Fprintf(stdio.ErrOut, "wrote the App Server %s to %s\n", map[string]string{"schema": "JSON Schema", "generate-ts": "TypeScript definitions"}[use], out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "directory to write into")
	return cmd
}

// newCmdDebug is `scv-server debug app-server send-message TEXT`.
func newCmdDebug(stdio IO) *cobra.Command {
	debug := &cobra.Command{Use: "debug", Short: "Tools for debugging clients", Args: cobra.NoArgs}
	app := &cobra.Command{Use: "app-server", Short: "Debug the App Server protocol", Args: cobra.NoArgs}
	send := &cobra.Command{
		Use:   "send-message TEXT",
		Short: "Run one scripted turn through the App Server and print the JSON lines both ways",
		Long: `Runs a scripted model and a throw-away SCV home, sends initialize, thread/start, turn/start with TEXT
and thread/read, and prints every line as it crosses: "<<" from the client, ">>" from the server.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return server.DebugAppServer(cmd.Context(), args[0], stdio.Out)
		},
	}
	app.AddCommand(send)
	debug.AddCommand(app)
	return debug
}
