// Package acp is `scv acp`: it becomes `scv-server acp`, SCV as an Agent
// Client Protocol agent for editors (docs/acp.md).
package acp

import (
	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/client"
)

// Options are the inputs of `scv acp`.
type Options struct {
	// Args are passed to `scv-server acp` unchanged, flags included.
	Args []string
}

// NewCmdACP returns the acp command. runF replaces the behaviour in tests.
func NewCmdACP(f *cmdutil.Factory, runF func(*Options) error) *cobra.Command {
	opts := &Options{}
	return &cobra.Command{
		Use:   "acp [flags]",
		Short: "Serve the Agent Client Protocol on stdio, for editors such as Zed",
		Long: `Run SCV as an ACP agent: ACP v1 (JSON-RPC 2.0, one message per line) on stdin
and stdout, logs on stderr. Editors start it as an agent server, e.g. in Zed:
	"agent_servers": { "SCV": { "command": "scv", "args": ["acp"] } }

scv replaces itself with "scv-server acp" and passes every argument through:
	scv acp [--approval-policy on-risk|never|auto] [--log-level debug|info|warn|error]
See docs/acp.md for what is supported and the exit codes.`,
		// Every flag, --help included, belongs to scv-server.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			if runF != nil {
				return runF(opts)
			}
			return run(f, opts)
		},
	}
}

func run(f *cmdutil.Factory, opts *Options) error {
	path, err := f.FindBinary(client.Server)
	if err != nil {
		return err
	}
	// Exec, not a child: the editor's pipes and signals reach the server
	// with no relay in between.
	return f.Exec(path, append([]string{client.Server, "acp"}, opts.Args...))
}
