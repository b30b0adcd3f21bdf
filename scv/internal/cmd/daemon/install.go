package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/paths"
)

// UnitName is the systemd user unit `scv daemon install` writes.
const UnitName = "scv.service"

// UnitFile returns where the user unit goes: $XDG_CONFIG_HOME/systemd/user
// (~/.config/systemd/user by default).
func UnitFile(env paths.Env) (string, error) {
	dir := env.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		h := env.Getenv("HOME")
		if h == "" || !filepath.IsAbs(h) {
			return "", errors.New("neither XDG_CONFIG_HOME nor an absolute HOME is set; cannot place the systemd user unit")
		}
		dir = filepath.Join(h, ".config")
	}
	return filepath.Join(dir, "systemd", "user", UnitName), nil
}

// Unit returns the unit's text. A service manager loads no shell profile,
// so every path is absolute and SCV_HOME is set explicitly; variables the
// daemon needs (API keys named by api_key_env) go in the optional
// $SCV_HOME/daemon.env.
func Unit(server, home string) string {
	return fmt.Sprintf(`# Written by scv daemon install; scv daemon uninstall removes it.
[Unit]
Description=SCV daemon: one agent runtime per user (docs/daemon.md)

[Service]
Type=simple
ExecStart=%s daemon
Environment=SCV_HOME=%s
EnvironmentFile=-%s
Restart=on-failure
RestartSec=2
KillSignal=SIGTERM
TimeoutStopSec=30

[Install]
WantedBy=default.target
`, quoteUnit(server), quoteUnit(home), quoteUnit(filepath.Join(home, "daemon.env")))
}

// quoteUnit quotes a path for a unit file when it has spaces.
func quoteUnit(p string) string {
	if strings.ContainsAny(p, " \t\"\\") {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`
	}
	return p
}

// systemctl runs `systemctl --user args`, returning its combined output.
func systemctl(args ...string) (string, error) {
	out, err := exec.Command("systemctl", append([]string{"--user"}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func newCmdInstall(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	var noEnable bool
	cmd := &cobra.Command{
		Use:   "install [--no-enable]",
		Short: "Install the daemon as a systemd user service (scv.service)",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			h, err := home(env, true)
			if err != nil {
				return err
			}
			server, err := f.FindBinary(client.Server)
			if err != nil {
				return err
			}
			if server, err = filepath.Abs(server); err != nil {
				return err
			}
			file, err := UnitFile(env)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return fmt.Errorf("creating %s: %w", filepath.Dir(file), err)
			}
			if err := atomicfile.WriteFile(file, []byte(Unit(server, h)), 0o644); err != nil {
				return fmt.Errorf("writing %s: %w", file, err)
			}
			fmt.Fprintf(f.IO.Out, "Wrote %s.\n", file)
			if noEnable {
				fmt.Fprintf(f.IO.Out, "Enable it with: systemctl --user daemon-reload && systemctl --user enable --now %s\n", UnitName)
				return nil
			}
			if out, err := systemctl("daemon-reload"); err != nil {
				fmt.Fprintf(f.IO.Out, "systemctl --user does not work here (%v: %s).\nStart the daemon by hand with `scv daemon start` (or `scv daemon run` in the foreground), for example from your login profile.\n", err, out)
				return nil
			}
			if out, err := systemctl("enable", "--now", UnitName); err != nil {
				return fmt.Errorf("systemctl --user enable --now %s: %v: %s", UnitName, err, out)
			}
			fmt.Fprintf(f.IO.Out, "Enabled and started %s; `systemctl --user status %s` shows it.\n", UnitName, UnitName)
			return nil
		},
	}
	cmd.Flags().BoolVar(&noEnable, "no-enable", false, "only write the unit file")
	return cmd
}

func newCmdUninstall(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	return &cobra.Command{
		Use:   "uninstall",
		Short: "Remove the systemd user service",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if _, err := home(env, true); err != nil {
				return err
			}
			file, err := UnitFile(env)
			if err != nil {
				return err
			}
			if _, err := systemctl("disable", "--now", UnitName); err == nil {
				fmt.Fprintf(f.IO.Out, "Stopped and disabled %s.\n", UnitName)
			}
			if err := os.Remove(file); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					fmt.Fprintf(f.IO.Out, "No unit at %s.\n", file)
					return nil
				}
				return err
			}
			_, _ = systemctl("daemon-reload")
			fmt.Fprintf(f.IO.Out, "Removed %s.\n", file)
			return nil
		},
	}
}
