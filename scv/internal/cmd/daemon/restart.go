package daemon

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/paths"
)

func newCmdRestart(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "restart [--force]",
		Short: "Planned restart: wait for running turns, save the sessions, re-exec, resume them",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			h, info, running, err := runningDaemon(env)
			if err != nil {
				return err
			}
			if !running {
				info, err := Start(f, h)
				if err != nil {
					return err
				}
				fmt.Fprintf(f.IO.Out, "No daemon was running; started one (pid %d).\n", info.Pid)
				return nil
			}
			next, err := restart(f, env, h, info, force)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "Restarted the daemon (pid %d, version %s).\n", next.Pid, next.Version)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "do not wait for running turns: cancel them (their prompts stay stored)")
	return cmd
}

// restart asks the daemon of info for a planned restart and waits until
// it is back.
func restart(f *cmdutil.Factory, env paths.Env, h string, info daemonfile.Info, force bool) (daemonfile.Info, error) {
	wait := 10 * time.Minute
	if cfg, _, err := config.Load(config.LoadOptions{Home: h, Env: env}); err == nil {
		wait = cfg.Daemon.RestartTimeout()
	}
	sig := SignalRestart
	if force {
		sig, wait = SignalRestartForce, 0
	}
	if err := syscall.Kill(info.Pid, sig); err != nil {
		return daemonfile.Info{}, fmt.Errorf("asking the daemon (pid %d) to restart: %w", info.Pid, err)
	}
	if !force {
		fmt.Fprintf(f.IO.ErrOut, "Waiting for running turns to finish (at most %v; --force does not wait)…\n", wait)
	}
	return waitRestarted(h, info, wait+30*time.Second)
}

// NewCmdUpdate returns `scv update`: a planned restart of the daemon onto
// the scv-server now installed, when its version differs from the running
// daemon's.
func NewCmdUpdate(f *cmdutil.Factory) *cobra.Command {
	env := paths.OSEnv()
	var force bool
	cmd := &cobra.Command{
		Use:   "update [--force]",
		Short: "Restart the daemon onto the scv-server now installed, when its version differs",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			h, info, running, err := runningDaemon(env)
			if err != nil {
				return err
			}
			if !running {
				fmt.Fprintln(f.IO.Out, "No daemon is running; nothing to update (clients start the installed scv-server themselves).")
				return nil
			}
			path, err := f.FindBinary(client.Server)
			if err != nil {
				return err
			}
			installed, err := serverVersion(path)
			if err != nil {
				return err
			}
			if installed == info.Version {
				fmt.Fprintf(f.IO.Out, "The daemon already runs version %s, the one installed.\n", installed)
				return nil
			}
			next, err := restart(f, env, h, info, force)
			if err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "Updated the daemon from version %s to %s (pid %d).\n", info.Version, next.Version, next.Pid)
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "do not wait for running turns: cancel them (their prompts stay stored)")
	return cmd
}

// serverVersion runs `scv-server version` and returns the version it
// prints ("scv-server VERSION (protocol versions A-B)").
func serverVersion(path string) (string, error) {
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		return "", fmt.Errorf("asking %s for its version: %w", path, err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 2 || fields[0] != "scv-server" {
		return "", fmt.Errorf("%s version printed %q, not \"scv-server VERSION\"", path, strings.TrimSpace(string(out)))
	}
	return fields[1], nil
}

// waitRestarted waits until daemon.json describes a daemon started after
// old (the same pid after a re-exec, or another under a service manager).
func waitRestarted(home string, old daemonfile.Info, timeout time.Duration) (daemonfile.Info, error) {
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		if info, err := client.DaemonRunning(home); err == nil && (info.Pid != old.Pid || info.StartedAt.After(old.StartedAt) || info.Version != old.Version || info.Instance != old.Instance) {
			return info, nil
		}
		if time.Now().After(deadline) {
			return daemonfile.Info{}, fmt.Errorf("the daemon did not come back within %v; see %s", timeout, LogFile(home))
		}
	}
}
