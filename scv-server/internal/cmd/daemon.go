package cmd

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv-server/internal/daemon"
	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/server"
)

// errDelegated refuses the daemon to a delegated run (tools.md, "Nested
// SCV"): a delegated agent must not start the user's runtime.
var errDelegated = errors.New("a delegated run may not run a daemon")

// newCmdDaemon is `scv-server daemon`, what `scv daemon run` execs: the
// runtime in the foreground, serving the protocol on $SCV_HOME/run/scv.sock
// until SIGTERM, SIGINT or SIGHUP (docs/daemon.md).
func newCmdDaemon(stdio IO) *cobra.Command {
	var (
		policy   string
		logLevel string
	)
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Run the daemon in the foreground: the protocol on $SCV_HOME/run/scv.sock",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if v := stdio.Env.Getenv(delegate.DepthVar); v != "" {
				if n, err := strconv.Atoi(v); err != nil || n > 0 {
					return fmt.Errorf("%w (%s=%s): run the daemon from your own shell, not from an agent", errDelegated, delegate.DepthVar, v)
				}
			}
			log, err := newLogger(stdio.ErrOut, logLevel, stdio.Env)
			if err != nil {
				return usageError{err}
			}
			return daemon.Run(cmd.Context(), daemon.Options{
				Server: server.Options{Env: stdio.Env, ApprovalPolicy: policy, Logger: log},
			})
		},
	}
	cmd.Flags().StringVar(&policy, "approval-policy", "", "override tools.approval_policy: on-risk, never or auto")
	cmd.Flags().StringVar(&logLevel, "log-level", "", "log level on stderr: debug, info, warn or error (default warn, or $SCV_LOG_LEVEL)")
	return cmd
}
