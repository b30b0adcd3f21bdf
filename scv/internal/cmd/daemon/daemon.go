// Package daemon is `scv daemon`: run, start, stop, status, restart,
// install and uninstall the daemon (docs/daemon.md). The daemon itself is
// `scv-server daemon`; these commands exec it, start it detached, or talk
// to it through its socket, its daemon.json and signals.
package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
	"github.com/scv-cli/scv/shared/textcut"
)

// Signals of a planned restart (docs/daemon.md): SIGUSR2 waits for running
// turns (up to daemon.restart_timeout_seconds), SIGUSR1 does not.
const (
	SignalRestart      = syscall.SIGUSR2
	SignalRestartForce = syscall.SIGUSR1
)

// depthVar is the delegation depth a delegated run inherits.
const depthVar = "SCV_DELEGATION_DEPTH"

// errDelegated refuses daemon management to a delegated run.
var errDelegated = errors.New("a delegated run may not start, stop, restart, install or run the daemon: do it from your own shell")

// NewCmdDaemon returns `scv daemon`.
func NewCmdDaemon(f *cmdutil.Factory) *cobra.Command {
	env := paths.OSEnv()
	cmd := &cobra.Command{
		Use:   "daemon COMMAND",
		Short: "Run and manage the daemon: one runtime per user that sessions outlive clients in",
		Long: `The daemon is one SCV runtime per user and SCV_HOME, serving the protocol on
$SCV_HOME/run/scv.sock. Sessions live in it, not in the client that started them.
	scv daemon run                 the daemon in the foreground (what a service manager runs)
	scv daemon start               start it in the background (log: $SCV_HOME/logs/daemon.log)
	scv daemon stop                stop it (running turns are cancelled after a grace period)
	scv daemon restart [--force]   planned restart: wait for running turns, then re-exec
	scv daemon status [--json]     pid, version, uptime, clients, sessions, delegations (exit 4: not running)
	scv daemon install|uninstall   a systemd user unit (scv.service)
start, stop, restart and status are also top-level: scv start, scv status, ...
See docs/daemon.md.`,
	}
	cmd.AddCommand(newCmdRun(f, env), newCmdStart(f, env), newCmdStop(f, env), newCmdStatus(f, env),
		newCmdRestart(f, env), newCmdInstall(f, env), newCmdUninstall(f, env))
	return cmd
}

// NewCmdsTopLevel returns `scv start`, `scv stop`, `scv restart` and `scv
// status`: the names issue 15 and the README use for the daily commands.
// They are the same commands as `scv daemon start|stop|restart|status`
// (built by the same functions, so they cannot drift apart).
func NewCmdsTopLevel(f *cmdutil.Factory) []*cobra.Command {
	env := paths.OSEnv()
	return []*cobra.Command{newCmdStart(f, env), newCmdStop(f, env), newCmdRestart(f, env), newCmdStatus(f, env)}
}

// home returns SCV_HOME, refusing a delegated run when manage is set.
func home(env paths.Env, manage bool) (string, error) {
	if manage {
		if v := env.Getenv(depthVar); v != "" {
			if n, err := strconv.Atoi(v); err != nil || n > 0 {
				return "", fmt.Errorf("%w (%s=%s)", errDelegated, depthVar, v)
			}
		}
	}
	return paths.Home(env)
}

func newCmdRun(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	return &cobra.Command{
		Use:                "run [flags]",
		Short:              "Run the daemon in the foreground (scv-server daemon)",
		DisableFlagParsing: true,
		RunE: func(_ *cobra.Command, args []string) error {
			if _, err := home(env, true); err != nil {
				return err
			}
			path, err := f.FindBinary(client.Server)
			if err != nil {
				return err
			}
			// Exec: the service manager's signals reach the daemon itself.
			return f.Exec(path, append([]string{client.Server, "daemon"}, args...))
		},
	}
}

// startTimeout bounds the wait for a started daemon to listen.
const startTimeout = 15 * time.Second

func newCmdStart(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	return &cobra.Command{
		Use:   "start",
		Short: "Start the daemon in the background",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			h, err := home(env, true)
			if err != nil {
				return err
			}
			if info, err := client.DaemonRunning(h); err == nil {
				fmt.Fprintf(f.IO.Out, "The daemon already runs (pid %d, socket %s).\n", info.Pid, info.Socket)
				return nil
			}
			info, err := Start(f, h)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "Started the daemon (pid %d, socket %s, log %s).\n", info.Pid, info.Socket, LogFile(h))
			return nil
		},
	}
}

// LogFile is the started daemon's stderr: $SCV_HOME/logs/daemon.log.
func LogFile(home string) string { return filepath.Join(home, "logs", "daemon.log") }

// Start starts `scv-server daemon` detached from the terminal (its own
// session, stdin /dev/null, output appended to LogFile) and waits until it
// listens.
func Start(f *cmdutil.Factory, home string) (daemonfile.Info, error) {
	path, err := f.FindBinary(client.Server)
	if err != nil {
		return daemonfile.Info{}, err
	}
	if err := paths.EnsureDir(filepath.Dir(LogFile(home))); err != nil {
		return daemonfile.Info{}, err
	}
	logf, err := openLog(home)
	if err != nil {
		return daemonfile.Info{}, err
	}
	defer logf.Close()
	offset, _ := logf.Seek(0, io.SeekEnd)
	c := exec.Command(path, "daemon")
	c.Stdout, c.Stderr = logf, logf
	c.Dir = "/"
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return daemonfile.Info{}, fmt.Errorf("starting %s daemon: %w", path, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	deadline := time.After(startTimeout)
	for {
		if info, err := daemonfile.Read(home); err == nil && info.Pid == c.Process.Pid {
			return info, nil
		}
		select {
		case err := <-exited:
			return daemonfile.Info{}, fmt.Errorf("the daemon exited at start (%v): %s", err, logTail(LogFile(home), offset))
		case <-deadline:
			return daemonfile.Info{}, fmt.Errorf("the daemon (pid %d) did not listen within %v; see %s", c.Process.Pid, startTimeout, LogFile(home))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// openLog opens LogFile for appending as every log under SCV_HOME is
// opened (statefile.OpenLog): never through a symbolic link, which would
// make the daemon append to a file outside SCV_HOME, only a regular file,
// and moved to daemon.log.old at a start that finds it over 8 MiB.
func openLog(home string) (*os.File, error) {
	f, err := statefile.OpenLog(LogFile(home))
	if err != nil {
		return nil, fmt.Errorf("opening the daemon's log: %w", err)
	}
	return f, nil
}

// logTailBytes is how much of the log's end a failed start shows.
const logTailBytes = 2000

// logTail returns what the log gained after offset, trimmed, at most its
// last logTailBytes. Only that much is read: the log keeps every earlier
// run's output and may be large.
func logTail(file string, offset int64) string {
	f, err := statefile.Open(filepath.Dir(file), filepath.Base(file), os.O_RDONLY, 0, statefile.NoLinks)
	if err != nil {
		return "see " + file
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < offset {
		return "see " + file
	}
	from := max(offset, fi.Size()-logTailBytes)
	data, err := io.ReadAll(io.NewSectionReader(f, from, fi.Size()-from))
	if err != nil {
		return "see " + file
	}
	if from > offset {
		return "…" + strings.TrimSpace(textcut.TrimPartialStart(string(data)))
	}
	return strings.TrimSpace(string(data))
}

// runningDaemon returns SCV_HOME (refused in delegated runs) and its
// daemon; running is false when none runs.
func runningDaemon(env paths.Env) (h string, info daemonfile.Info, running bool, err error) {
	if h, err = home(env, true); err != nil {
		return "", info, false, err
	}
	info, rerr := client.DaemonRunning(h)
	return h, info, rerr == nil, nil
}

// stopTimeout bounds the wait for a stopped daemon to exit.
const stopTimeout = 30 * time.Second

func newCmdStop(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	return &cobra.Command{
		Use:   "stop",
		Short: "Stop the daemon (running turns are cancelled)",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			h, info, running, err := runningDaemon(env)
			if err != nil {
				return err
			}
			if !running {
				fmt.Fprintln(f.IO.Out, "No daemon is running.")
				return nil
			}
			if err := syscall.Kill(info.Pid, syscall.SIGTERM); err != nil {
				return fmt.Errorf("stopping the daemon (pid %d): %w", info.Pid, err)
			}
			for deadline := time.Now().Add(stopTimeout); ; time.Sleep(20 * time.Millisecond) {
				if _, err := client.DaemonRunning(h); err != nil {
					break
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("the daemon (pid %d) is still running %v after SIGTERM; kill it with `kill -9 %d` if it is stuck", info.Pid, stopTimeout, info.Pid)
				}
			}
			fmt.Fprintf(f.IO.Out, "Stopped the daemon (pid %d).\n", info.Pid)
			return nil
		},
	}
}

func newCmdStatus(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show the daemon's pid, version, uptime, clients, sessions and delegated runs",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			h, err := home(env, false)
			if err != nil {
				return err
			}
			if _, err := client.DaemonRunning(h); err != nil {
				if asJSON {
					fmt.Fprintln(f.IO.Out, `{"running":false}`)
				} else {
					fmt.Fprintln(f.IO.Out, "No daemon is running (start one with `scv start`).")
				}
				return cli.Reported(cli.WithCode(cli.Daemon, err))
			}
			st, err := client.QueryDaemonStatus(h, 5*time.Second)
			if err != nil {
				return err
			}
			dels := delegations(h, f.IO.ErrOut)
			if asJSON {
				b, err := json.MarshalIndent(statusJSON{Running: true, Pid: st.Pid, Version: st.Version, StartedAt: st.StartedAt,
					Socket: st.Socket, Clients: st.Clients, Sessions: st.Sessions, OrphansStopped: st.OrphansStopped, Draining: st.Draining,
					Delegations: dels}, "", "  ")
				if err != nil {
					return err
				}
				fmt.Fprintln(f.IO.Out, string(b))
				return nil
			}
			printStatus(f.IO.Out, st, dels, time.Now())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}
