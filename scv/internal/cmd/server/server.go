// Package server is `scv server`: it becomes scv-server.
package server

import (
	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/client"
	"github.com/spf13/cobra"
)

// Options are the inputs of `scv server`.
type Options struct {
	// Args are passed to scv-server unchanged, flags included.
	Args []string
}

// NewCmdServer returns the server command. runF replaces the behaviour in
// tests.
func NewCmdServer(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	return &cobra.Command{
		Use:   "server --stdio [flags]",
		Short: "Run the SCV server on stdio (the same as scv-server)",
		Long: `Run the SCV server, speaking the SCV protocol on stdin and stdout.

scv replaces itself with the scv-server binary and passes every argument
through, so this is the same server as running scv-server directly:
	scv server --stdio [--approval-policy on-risk|never|auto] [--log-level debug|info|warn|error]
Run "scv server --help" for the server's own help.`,
		// Every flag, --help included, belongs to scv-server.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			if runF != nil {
				return runF(opts)
			}
			return serverRun(f, opts)
		},
	}
}

func serverRun(f *cmdutil.Factory, opts *Options) error {
	path, err := f.FindBinary(client.Server)
	if err != nil {
		return err
	}
	// Exec, not a child process: the client's pipes and signals then reach
	// the real server, with no relay in between that could reorder, buffer
	// or outlive it.
	return f.Exec(path, append([]string{client.Server}, opts.Args...))
}
