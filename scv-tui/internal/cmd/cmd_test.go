package cmd

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/scv-cli/scv/scv-tui/internal/app"
	"github.com/scv-cli/scv/scv-tui/internal/client"
	"github.com/scv-cli/scv/shared/cli"
	sclient "github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCommandLine(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		runErr   error
		want     *Flags // the flags run got; nil: run not called
		wantCode int
		wantOut  string   // substring of stdout
		wantErr  []string // substrings of stderr
	}{
		{name: "no arguments", want: &Flags{Dir: wd}},
		{name: "all flags", args: []string{"-C", dir, "--resume", "abc", "--model", "m1", "--log-file", "rel.log"},
			want: &Flags{Dir: dir, Resume: "abc", Model: "m1", LogFile: filepath.Join(wd, "rel.log")}},
		{name: "--cd long", args: []string{"--cd", dir}, want: &Flags{Dir: dir}},
		{name: "a prompt", args: []string{"fix the tests"}, want: &Flags{Dir: wd, Prompt: "fix the tests"}},
		{name: "two arguments", args: []string{"one", "two"}, wantCode: 2,
			wantErr: []string{"scv-tui: scv-tui takes at most one PROMPT, got 2 arguments", "Run 'scv-tui --help' for usage."}},
		{name: "an empty prompt", args: []string{" "}, wantCode: 2, wantErr: []string{"the PROMPT is empty"}},
		{name: "unknown flag", args: []string{"--nope"}, wantCode: 2, wantErr: []string{"unknown flag: --nope", "--help"}},
		{name: "missing directory", args: []string{"-C", filepath.Join(dir, "missing")}, wantCode: 2, wantErr: []string{"--cd " + filepath.Join(dir, "missing") + ": no such directory"}},
		{name: "not a directory", args: []string{"-C", file}, wantCode: 2, wantErr: []string{"not a directory"}},
		{name: "version", args: []string{"--version"}, wantOut: "scv-tui "},
		{name: "help", args: []string{"--help"}, wantOut: "--log-file"},
		{name: "run fails", runErr: errors.New("boom"), want: &Flags{Dir: wd}, wantCode: 1, wantErr: []string{"scv-tui: boom\n"}},
		{name: "run exits quietly", runErr: cli.WithCode(cli.Interrupted, nil), want: &Flags{Dir: wd}, wantCode: 130},
		{name: "run exits with a message", runErr: cli.WithCode(cli.Failure, errors.New("bad config")), want: &Flags{Dir: wd}, wantCode: 1, wantErr: []string{"scv-tui: bad config\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *Flags
			run := func(_ context.Context, f Flags) error {
				got = &f
				return tt.runErr
			}
			var out, errOut bytes.Buffer
			code := Run(tt.args, &out, &errOut, run)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr %q", code, tt.wantCode, errOut.String())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("run got %+v, want %+v", got, tt.want)
			}
			if !strings.Contains(out.String(), tt.wantOut) {
				t.Errorf("stdout %q does not contain %q", out.String(), tt.wantOut)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errOut.String(), w) {
					t.Errorf("stderr %q does not contain %q", errOut.String(), w)
				}
			}
			if tt.wantErr == nil && errOut.Len() > 0 {
				t.Errorf("unexpected stderr %q", errOut.String())
			}
		})
	}
}

func TestSetup(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	bin := filepath.Join(t.TempDir(), "scv-server")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	// Not found anywhere: the message names every place.
	t.Setenv("PATH", t.TempDir())
	_, err := setup(Flags{Dir: ws}, paths.MapEnv(map[string]string{"SCV_HOME": home}))
	var nf *sclient.NotFoundError
	if !errors.As(err, &nf) || !strings.Contains(err.Error(), "SCV_SERVER_BIN") {
		t.Fatalf("setup without a server = %v", err)
	}

	s, err := setup(Flags{Dir: ws}, paths.MapEnv(map[string]string{"SCV_HOME": home, "SCV_SERVER_BIN": bin}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.closeLog()
	if want := filepath.Join(home, "logs", "tui-server.log"); s.logPath != want {
		t.Errorf("log path %s, want %s", s.logPath, want)
	}
	if st, err := os.Stat(s.logPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("log file: %v, %v", st, err)
	}
	if s.hist == nil {
		t.Fatal("no history")
	}
	if err := s.hist.Add("first prompt"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "state", "prompt-history")); err != nil {
		t.Errorf("history directory: %v", err)
	}
	if err := s.client.Close(context.Background()); err != nil {
		t.Error(err)
	}

	// --log-file wins; a relative SCV_HOME costs the history, not the UI.
	logFile := filepath.Join(t.TempDir(), "x", "my.log")
	s2, err := setup(Flags{Dir: ws, LogFile: logFile}, paths.MapEnv(map[string]string{"SCV_HOME": "relative", "SCV_SERVER_BIN": bin}))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.closeLog()
	if s2.logPath != logFile || s2.hist != nil {
		t.Errorf("log path %s (want %s), history %v (want none)", s2.logPath, logFile, s2.hist)
	}
	_ = s2.client.Close(context.Background())
	// Without --log-file the relative SCV_HOME is an error.
	if _, err := setup(Flags{Dir: ws}, paths.MapEnv(map[string]string{"SCV_HOME": "relative", "SCV_SERVER_BIN": bin})); err == nil || !strings.Contains(err.Error(), "SCV_HOME") {
		t.Errorf("setup with a relative SCV_HOME = %v", err)
	}
}

// TestPump runs a shell script as the server and checks what reaches the
// program, in order.
func TestPump(t *testing.T) {
	script := `read line
echo '{"type":"initialized","request_id":"r1","protocol_version":3,"server":{"name":"x","version":"0"}}'
echo 'not json'
echo 'scv-server: config.toml:1: bad key' >&2
exit 78`
	c := client.New(client.Config{Path: "/bin/sh", Args: []string{"-c", script}, Dir: t.TempDir()})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	msgs := make(chan tea.Msg, 16)
	pu := newPump(c)
	go pu.run(func(m tea.Msg) { msgs <- m }, func() { t.Error("kill called") })
	if err := c.Send(&protocol.Initialize{RequestID: "r1", ProtocolVersion: 3}); err != nil {
		t.Fatal(err)
	}
	recv := func() tea.Msg {
		t.Helper()
		select {
		case m := <-msgs:
			return m
		case <-time.After(30 * time.Second):
			t.Fatal("nothing reached the program in 30s")
		}
		return nil
	}
	if m, ok := recv().(app.ServerStarted); !ok {
		t.Fatalf("first %#v, want ServerStarted", m)
	}
	if m, ok := recv().(app.ServerEvent); !ok || m.Event.Kind() != protocol.TypeInitialized {
		t.Fatalf("second %#v, want the initialized event", m)
	}
	if m, ok := recv().(app.ServerProblem); !ok || m.Exited || !strings.Contains(m.Err.Error(), "not json") {
		t.Fatalf("third %#v, want a problem naming the line", m)
	}
	m, ok := recv().(app.ServerProblem)
	if !ok || !m.Exited || !strings.Contains(m.Err.Error(), "configuration error:\nscv-server: config.toml:1: bad key") {
		t.Fatalf("fourth %#v, want the exit with the server's message", m)
	}
	if ee := pu.lastExit(); ee == nil || !ee.ConfigError() {
		t.Errorf("lastExit = %v", ee)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Errorf("Close = %v", err)
	}
	pu.wait()
}

// TestServerArgsDaemon: the TUI relays to the daemon (scv-server connect)
// only when one runs and daemon.use (auto by default) or --daemon says so;
// --no-daemon and daemon.use = "never" keep a server of its own, and
// "always" without a daemon is an error that says how to start one.
func TestServerArgsDaemon(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := paths.MapEnv(map[string]string{"SCV_HOME": home})
	log := slog.New(slog.DiscardHandler)
	check := func(name string, f Flags, want []string) {
		t.Helper()
		a, err := serverArgs(f, env, log)
		if err != nil || !slices.Equal(a, want) {
			t.Fatalf("%s: %q, %v; want %q", name, a, err, want)
		}
	}
	setUse := func(use string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[daemon]\nuse = \""+use+"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	check("auto without a daemon", Flags{}, nil)
	check("--daemon without a daemon", Flags{Daemon: true}, nil)
	setUse("always")
	if _, err := serverArgs(Flags{}, env, log); err == nil || !strings.Contains(err.Error(), "scv daemon start") {
		t.Fatalf("always without a daemon: %v", err)
	}
	check("--no-daemon overrides always", Flags{NoDaemon: true}, nil)

	if err := paths.EnsureDir(paths.RunDir(home)); err != nil {
		t.Fatal(err)
	}
	if err := daemonfile.Write(home, daemonfile.Info{Pid: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	check("always with a daemon", Flags{}, []string{"connect"})
	setUse("auto")
	check("auto with a daemon", Flags{}, []string{"connect"})
	check("--no-daemon with a daemon", Flags{NoDaemon: true}, nil)
	setUse("never")
	check("never with a daemon", Flags{}, nil)
	check("--daemon overrides never", Flags{Daemon: true}, []string{"connect"})
	setUse("sometimes")
	check("a configuration that does not load", Flags{}, nil)
}
