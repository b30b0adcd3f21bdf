package cmd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/shared/cli"

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
		// Test knobs, hidden: the real daemon's intervals are minutes.
		reconcileEvery, idleEvery, sessionIdle, detachWait time.Duration
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
				return &cli.UsageError{Err: err}
			}
			err = daemon.Run(cmd.Context(), daemon.Options{
				Server:         server.Options{Env: stdio.Env, ApprovalPolicy: policy, Logger: log, DetachWait: detachWait},
				ReconcileEvery: reconcileEvery,
				IdleEvery:      idleEvery,
				SessionIdle:    sessionIdle,
			})
			if errors.Is(err, daemon.ErrRestart) {
				// A planned restart: the same pid, the binary now
				// installed at the executable's path (os.Executable drops
				// the " (deleted)" of a replaced binary), the same flags.
				exe, xerr := os.Executable()
				if xerr != nil {
					return fmt.Errorf("planned restart: cannot find the executable: %w", xerr)
				}
				log.Info("Planned restart: executing the daemon again", "executable", exe)
				return fmt.Errorf("planned restart: executing %s: %w", exe, syscall.Exec(exe, os.Args, os.Environ()))
			}
			return err
		},
	}
	cmd.Flags().StringVar(&policy, "approval-policy", "", "override tools.approval_policy: on-risk, never or auto")
	cmd.Flags().StringVar(&logLevel, "log-level", "", "log level on stderr: debug, info, warn or error (default warn, or $SCV_LOG_LEVEL)")
	cmd.Flags().DurationVar(&reconcileEvery, "reconcile-every", 0, "how often to reconcile orphans (tests)")
	cmd.Flags().DurationVar(&idleEvery, "idle-every", 0, "how often to look for idle sessions (tests)")
	cmd.Flags().DurationVar(&sessionIdle, "session-idle", 0, "override daemon.session_idle_seconds (tests)")
	cmd.Flags().DurationVar(&detachWait, "detach-wait", 0, "how long an event waits for a full client queue before the client is detached (tests)")
	for _, f := range []string{"reconcile-every", "idle-every", "session-idle", "detach-wait"} {
		_ = cmd.Flags().MarkHidden(f)
	}
	return cmd
}
