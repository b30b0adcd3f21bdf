package cmd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	"github.com/scv-cli/scv/scv-tui/internal/app"
	"github.com/scv-cli/scv/scv-tui/internal/client"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/protocol"
)

// scriptModel is a model whose Update is a test's function.
type scriptModel struct {
	opts   app.Options
	update func(m *scriptModel, msg tea.Msg) tea.Cmd
}

func (m *scriptModel) Init() tea.Cmd                           { return nil }
func (m *scriptModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) { return m, m.update(m, msg) }
func (m *scriptModel) View() tea.View                          { return tea.NewView("test") }

// runSession runs session.run with a shell script as the server and a
// model of update, on a pipe instead of a terminal. It returns the log
// and run's error.
func runSession(t *testing.T, script string, update func(m *scriptModel, msg tea.Msg) tea.Cmd) (log string, err error) {
	return runSessionInput(t, script, true, update)
}

// runSessionInput is runSession, without any input unless withInput.
func runSessionInput(t *testing.T, script string, withInput bool, update func(m *scriptModel, msg tea.Msg) tea.Cmd, signals ...os.Signal) (log string, err error) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "tui-server.log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	s := &session{
		flags:   Flags{Dir: t.TempDir()},
		logPath: logPath,
		logFile: logFile,
		log:     slog.New(slog.NewTextHandler(logFile, nil)),
		client:  client.New(client.Config{Path: "/bin/sh", Args: []string{"-c", script}, LogPath: logPath}),
		newModel: func(o app.Options) tea.Model {
			return &scriptModel{opts: o, update: update}
		},
		signals: signals,
	}
	in, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	defer inW.Close()
	var input io.Reader
	if withInput {
		input = in
	}
	err = s.run(context.Background(), input, io.Discard)
	data, _ := os.ReadFile(logPath)
	return string(data), err
}

// echoServer answers initialize and exits 0 at the end of its input.
const echoServer = `read line
echo '{"type":"initialized","request_id":"1","protocol_version":3,"server":{"name":"x","version":"0"}}'
cat >/dev/null`

func TestRunQuitsCleanly(t *testing.T) {
	log, err := runSession(t, echoServer, func(m *scriptModel, msg tea.Msg) tea.Cmd {
		switch msg := msg.(type) {
		case app.ServerStarted:
			if err := m.opts.Send(&protocol.Initialize{RequestID: "1", ProtocolVersion: 3}); err != nil {
				t.Errorf("Send: %v", err)
			}
		case app.ServerEvent:
			if msg.Event.Kind() == protocol.TypeInitialized {
				return tea.Quit
			}
		case app.ServerProblem:
			t.Errorf("problem: %v", msg.Err)
			return tea.Quit
		}
		return nil
	})
	if err != nil {
		t.Errorf("run = %v", err)
	}
	// The server was shut down by closing its stdin, not killed.
	if !strings.Contains(log, "exited with status 0") {
		t.Errorf("the log does not show a clean server exit:\n%s", log)
	}
}

func TestRunRestarts(t *testing.T) {
	starts := 0
	log, err := runSession(t, echoServer, func(m *scriptModel, msg tea.Msg) tea.Cmd {
		if _, ok := msg.(app.ServerStarted); ok {
			starts++
			if starts == 3 {
				return tea.Quit
			}
			restart := m.opts.Restart
			return func() tea.Msg {
				if err := restart(); err != nil {
					t.Errorf("Restart: %v", err)
				}
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("run = %v", err)
	}
	if n := strings.Count(log, "started /bin/sh"); n != 3 {
		t.Errorf("%d server starts in the log, want 3:\n%s", n, log)
	}
}

func TestRunReportsTheServersConfigError(t *testing.T) {
	_, err := runSession(t, `echo 'config.toml:2: unknown key "x"' >&2; exit 78`, func(m *scriptModel, msg tea.Msg) tea.Cmd {
		if p, ok := msg.(app.ServerProblem); ok && p.Exited {
			return tea.Quit
		}
		return nil
	})
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != cli.Failure ||
		ee.Error() != "scv-server could not start because of a configuration error:\nconfig.toml:2: unknown key \"x\"" {
		t.Errorf("run = %#v, want the server's message", err)
	}
}

func TestRunRecoversFromAPanic(t *testing.T) {
	// No input: Bubble Tea v2.1.1 closes its input reader on the panic
	// path without waiting for the goroutine reading it (a data race and
	// a leaked goroutine inside the library, harmless just before exit).
	log, err := runSessionInput(t, echoServer, false, func(m *scriptModel, msg tea.Msg) tea.Cmd {
		if _, ok := msg.(app.ServerStarted); ok {
			panic("a bug in the model")
		}
		return nil
	})
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != cli.Failure || !strings.Contains(ee.Error(), "internal error (a bug)") || !strings.Contains(ee.Error(), "the server was shut down") {
		t.Errorf("run = %v, want the internal-error message", err)
	}
	if !strings.Contains(log, "exited with status 0") {
		t.Errorf("the server was not shut down cleanly after the panic:\n%s", log)
	}
}

func TestRunServerMissing(t *testing.T) {
	s := &session{client: client.New(client.Config{Path: filepath.Join(t.TempDir(), "nope")})}
	if err := s.run(context.Background(), nil, io.Discard); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("run = %v", err)
	}
}

func TestRunTUINeedsATerminal(t *testing.T) {
	if term.IsTerminal(os.Stdout.Fd()) && term.IsTerminal(os.Stdin.Fd()) {
		t.Skip("the test runs on a terminal, so RunTUI would take it over")
	}
	err := RunTUI(context.Background(), Flags{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "needs a terminal") || !strings.Contains(err.Error(), "scv exec") {
		t.Errorf("RunTUI without a terminal = %v", err)
	}
}

func TestRunQuitsOnASignal(t *testing.T) {
	log, err := runSessionInput(t, echoServer, true, func(m *scriptModel, msg tea.Msg) tea.Cmd {
		if _, ok := msg.(app.ServerStarted); ok {
			return func() tea.Msg {
				_ = syscall.Kill(os.Getpid(), syscall.SIGUSR1)
				return nil
			}
		}
		return nil
	}, syscall.SIGUSR1)
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != cli.Interrupted || ee.Err != nil {
		t.Errorf("run = %#v, want a quiet exit with code %d", err, cli.Interrupted)
	}
	if !strings.Contains(log, "quitting on a signal") || !strings.Contains(log, "exited with status 0") {
		t.Errorf("the log does not show the signal and a clean server exit:\n%s", log)
	}
}
