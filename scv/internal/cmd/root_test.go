package cmd

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/version"
)

// fakeFactory returns a Factory whose binaries are found at /bin/<name>
// unless missing lists them, and whose Exec records its call instead of
// replacing the test process.
// TestCompletionScript: scv prints a shell completion script that knows
// its commands.
func TestCompletionScript(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish"} {
		f, out, errOut, _ := fakeFactory()
		if code := Run(f, []string{"completion", shell}); code != cli.OK || !strings.Contains(out.String(), "scv") {
			t.Errorf("scv completion %s: exit %d, %d bytes, stderr %q", shell, code, out.Len(), errOut)
		}
	}
}

func fakeFactory(missing ...string) (*cmdutil.Factory, *bytes.Buffer, *bytes.Buffer, *[]string) {
	out, errOut := &bytes.Buffer{}, &bytes.Buffer{}
	var execd []string
	f := &cmdutil.Factory{
		IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut},
		FindBinary: func(name string) (string, error) {
			if slices.Contains(missing, name) {
				return "", &client.NotFoundError{Name: name, Self: "scv", Dir: "/opt/scv/bin", EnvVar: client.OverrideEnv(name)}
			}
			return "/bin/" + name, nil
		},
		Exec: func(path string, argv []string) error {
			execd = append([]string{path}, argv...)
			return nil
		},
		StdinIsTerminal: func() bool { return false },
	}
	return f, out, errOut, &execd
}

func TestRun(t *testing.T) {
	t.Parallel()
	versionLine := "scv " + version.Version + " (protocol 4)\n"
	tests := []struct {
		name      string
		args      []string
		missing   []string
		execErr   error
		wantCode  cli.Code
		wantOut   string
		wantErr   []string // substrings of stderr
		wantExecd []string // path, then argv
	}{
		{name: "version", args: []string{"version"}, wantOut: versionLine},
		{name: "--version", args: []string{"--version"}, wantOut: versionLine},
		{
			name: "no args runs the TUI", args: nil,
			wantExecd: []string{"/bin/scv-tui", "scv-tui"},
		},
		{
			name: "--daemon runs the TUI on the daemon", args: []string{"--daemon"},
			wantExecd: []string{"/bin/scv-tui", "scv-tui", "--daemon"},
		},
		{
			name: "--no-daemon runs the TUI on a server of its own", args: []string{"--no-daemon"},
			wantExecd: []string{"/bin/scv-tui", "scv-tui", "--no-daemon"},
		},
		{
			name: "daemon run execs scv-server daemon", args: []string{"daemon", "run", "--log-level", "info"},
			wantExecd: []string{"/bin/scv-server", "scv-server", "daemon", "--log-level", "info"},
		},
		{
			name: "no TUI", args: nil, missing: []string{client.TUI}, wantCode: cli.Failure,
			wantErr: []string{"scv: scv-tui not found", "/opt/scv/bin", "$PATH", "scripts/build.sh"},
		},
		{
			name: "server passes every argument through", args: []string{"server", "--stdio", "--approval-policy", "never", "--help"},
			wantExecd: []string{"/bin/scv-server", "scv-server", "--stdio", "--approval-policy", "never", "--help"},
		},
		{
			name: "acp becomes scv-server acp", args: []string{"acp", "--approval-policy", "never", "--help"},
			wantExecd: []string{"/bin/scv-server", "scv-server", "acp", "--approval-policy", "never", "--help"},
		},
		{
			name: "app-server becomes scv-server app-server", args: []string{"app-server", "--timeout-seconds=30", "--listen", "stdio"},
			wantExecd: []string{"/bin/scv-server", "scv-server", "app-server", "--timeout-seconds=30", "--listen", "stdio"},
		},
		{
			name: "debug becomes scv-server debug", args: []string{"debug", "app-server", "send-message", "hello"},
			wantExecd: []string{"/bin/scv-server", "scv-server", "debug", "app-server", "send-message", "hello"},
		},
		{
			name: "no server", args: []string{"server", "--stdio"}, missing: []string{client.Server}, wantCode: cli.Failure,
			wantErr: []string{"scv-server not found", "SCV_SERVER_BIN"},
		},
		{
			name: "exec failure", args: []string{"server", "--stdio"}, execErr: errors.New("exec /bin/scv-server: permission denied"),
			wantCode: cli.Failure, wantErr: []string{"scv: exec /bin/scv-server: permission denied"},
		},
		{
			name: "mistyped command", args: []string{"stauts"}, wantCode: cli.Usage,
			wantErr: []string{`scv: unknown command "stauts" for "scv"; did you mean start or status?`, "scv -- stauts", "Run 'scv --help' for usage."},
		},
		{
			name: "a prompt starts the TUI with it", args: []string{"fix the failing tests"},
			wantExecd: []string{"/bin/scv-tui", "scv-tui", "--", "fix the failing tests"},
		},
		{
			name: "a one-word prompt after --", args: []string{"--", "stauts"},
			wantExecd: []string{"/bin/scv-tui", "scv-tui", "--", "stauts"},
		},
		{
			name: "the TUI's flags pass through", args: []string{"-C", "/w", "--model", "m1", "--resume", "abc", "hello"},
			wantExecd: []string{"/bin/scv-tui", "scv-tui", "--cd=/w", "--resume=abc", "--model=m1", "--", "hello"},
		},
		{
			name: "two prompts", args: []string{"one", "two"}, wantCode: cli.Usage,
			wantErr: []string{"scv takes at most one PROMPT, got 2 arguments"},
		},
		{
			name: "unknown flag", args: []string{"--bogus"}, wantCode: cli.Usage,
			wantErr: []string{"unknown flag: --bogus"},
		},
		{
			name: "exec without prompt", args: []string{"exec"}, wantCode: cli.Usage,
			wantErr: []string{"exec needs one PROMPT argument", "Run 'scv exec --help' for usage."},
		},
		{
			name: "exec bad flag", args: []string{"exec", "--nope", "hi"}, wantCode: cli.Usage,
			wantErr: []string{"unknown flag: --nope", "Run 'scv exec --help'"},
		},
		{
			name: "version takes no args", args: []string{"version", "x"}, wantCode: cli.Usage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, out, errOut, execd := fakeFactory(tt.missing...)
			if tt.execErr != nil {
				f.Exec = func(string, []string) error { return tt.execErr }
			}
			code := Run(f, tt.args)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if out.String() != tt.wantOut {
				t.Errorf("stdout = %q, want %q", out, tt.wantOut)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(errOut.String(), s) {
					t.Errorf("stderr %q does not contain %q", errOut, s)
				}
			}
			if tt.wantErr == nil && tt.wantCode == cli.OK && errOut.Len() > 0 {
				t.Errorf("unexpected stderr %q", errOut)
			}
			if !slices.Equal(*execd, tt.wantExecd) {
				t.Errorf("exec = %q, want %q", *execd, tt.wantExecd)
			}
		})
	}
}
