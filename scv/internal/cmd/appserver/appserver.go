// Package appserver is `scv app-server` and `scv debug`: they become
// `scv-server app-server` and `scv-server debug`, SCV's App Server for
// desktop apps and IDE shells (docs/app-server.md).
package appserver

import (
	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/client"
)

// Options are the inputs of the commands.
type Options struct {
	// Args are passed to scv-server unchanged, flags included, after the
	// command's own name.
	Args []string
}

// NewCmdAppServer returns the app-server command. runF replaces the
// behaviour in tests.
func NewCmdAppServer(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	return passthrough(f, runF, "app-server", &cobra.Command{
		Use:   "app-server --listen stdio [flags] | app-server schema --out DIR | app-server generate-ts --out DIR",
		Short: "Serve the App Server protocol (JSON-RPC over JSON lines) for desktop apps and IDE shells",
		Long: `Run SCV's App Server: JSON-RPC 2.0, one message per line, on stdin and stdout; logs on stderr.
	scv app-server --listen stdio [--model M] [--provider P] [--timeout-seconds 90] [--daemon]
	scv app-server schema --out DIR        # DIR/json/*.json
	scv app-server generate-ts --out DIR   # DIR/scv_app_server.ts
scv replaces itself with "scv-server app-server" and passes every argument through.
See docs/app-server.md.`,
	})
}

// NewCmdDebug returns the debug command (`scv debug app-server
// send-message TEXT`).
func NewCmdDebug(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	return passthrough(f, runF, "debug", &cobra.Command{
		Use:   "debug app-server send-message TEXT",
		Short: "Run one scripted turn through the App Server and print the JSON lines both ways",
		Long: `scv debug app-server send-message "hello" runs a scripted model in a throw-away SCV home and prints
every JSON-RPC line of one App Server session ("<<" from the client, ">>" from the server), for
comparing a client's messages. scv replaces itself with "scv-server debug".`,
	})
}

// passthrough makes cmd exec `scv-server <name> ARGS...`.
func passthrough(f *cmdutil.Factory, runF func(*Options) error, name string, cmd *cobra.Command) *cobra.Command {
	opts := &Options{}
	// Every flag, --help included, belongs to scv-server.
	cmd.DisableFlagParsing = true
	cmd.RunE = func(_ *cobra.Command, args []string) error {
		opts.Args = args
		if runF != nil {
			return runF(opts)
		}
		path, err := f.FindBinary(client.Server)
		if err != nil {
			return err
		}
		// Exec, not a child: the client's pipes and signals reach the
		// server with no relay in between.
		return f.Exec(path, append([]string{client.Server, name}, opts.Args...))
	}
	return cmd
}
