package client

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/shared/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func sh(t *testing.T, script string, stderr io.Writer) *Process {
	t.Helper()
	p, err := Start(Command{Path: "/bin/sh", Args: []string{"-c", script}, Stderr: stderr})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProcessEchoAndStop(t *testing.T) {
	t.Parallel()
	var stderr testkit.Buffer
	p := sh(t, "cat; echo bye >&2", &stderr)
	if _, err := io.WriteString(p.Stdin(), "hello\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(p.Stdout, buf); err != nil {
		t.Fatal(err)
	}
	if string(buf) != "hello\n" {
		t.Errorf("read %q", buf)
	}
	if err := p.Stop(context.Background(), 5*time.Second); err != nil {
		t.Errorf("Stop = %v, want nil", err)
	}
	if err := p.Stop(context.Background(), 0); err != nil {
		t.Errorf("a second Stop = %v, want the first result", err)
	}
	if got := stderr.String(); got != "bye\n" {
		t.Errorf("stderr = %q, want it passed through", got)
	}
}

func TestProcessExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script  string
		code    int
		signal  string
		text    string
		config  bool
		version bool
	}{
		{script: "exit 0"},
		{script: "exit 1", code: 1, text: "exit status 1"},
		{script: "exit 3", code: 3, text: "exit status 3", version: true},
		{script: "echo 'config.toml:2: bad' >&2; exit 78", code: 78, text: "exit status 78", config: true},
		{script: "kill -TERM $$", code: -1, signal: "SIGTERM", text: "signal: terminated"},
		{script: "kill -KILL $$", code: -1, signal: "SIGKILL", text: "signal: killed"},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			p := sh(t, tt.script, nil)
			// Stderr is a pipe the caller reads when Command.Stderr is nil.
			errText, _ := io.ReadAll(p.Stderr)
			if _, err := io.ReadAll(p.Stdout); err != nil {
				t.Fatal(err)
			}
			<-p.Exited()
			err := p.Stop(context.Background(), 5*time.Second)
			if tt.text == "" {
				if err != nil || p.ExitError() != nil {
					t.Fatalf("Stop = %v, want nil", err)
				}
				return
			}
			var ee *ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("Stop = %v, want an *ExitError", err)
			}
			if ee.Code != tt.code || ee.Signal != tt.signal || err.Error() != tt.text ||
				ee.ConfigError() != tt.config || ee.VersionMismatch() != tt.version {
				t.Errorf("ExitError = %+v (%q)", ee, err)
			}
			var xe *exec.ExitError
			if !errors.As(err, &xe) {
				t.Errorf("%v does not wrap os/exec's *ExitError", err)
			}
			if tt.config && !strings.Contains(string(errText), "config.toml:2: bad") {
				t.Errorf("stderr = %q", errText)
			}
		})
	}
}

func TestProcessKilledAfterGrace(t *testing.T) {
	t.Parallel()
	// The shell ignores stdin's end and keeps a grandchild in its group.
	p := sh(t, "sleep 30 & wait", io.Discard)
	pgid := p.Pid()
	start := time.Now()
	err := p.Stop(context.Background(), 100*time.Millisecond)
	if !errors.Is(err, ErrKilled) || !strings.Contains(err.Error(), "killed after it did not exit within 100ms of its stdin closing: signal: killed") {
		t.Fatalf("Stop = %v, want ErrKilled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %s", d)
	}
	waitGroupGone(t, pgid)
}

func TestProcessStopCutShortByContext(t *testing.T) {
	t.Parallel()
	p := sh(t, "trap '' TERM; sleep 30 & wait", io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Stop(ctx, time.Hour); !errors.Is(err, ErrKilled) {
		t.Fatalf("Stop = %v, want ErrKilled at once", err)
	}
	waitGroupGone(t, p.Pid())
}

// A reader blocked on Stdout ends when Stop closes it, even while a
// grandchild still holds the pipe's other end.
func TestProcessStopEndsAPendingRead(t *testing.T) {
	t.Parallel()
	p := sh(t, "sleep 30 &", io.Discard)
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(p.Stdout)
		done <- err
	}()
	<-p.Exited()
	_ = p.Stop(context.Background(), time.Second)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the read did not end")
	}
	p.KillGroup()
}

func waitGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("process group still alive after Stop")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartFailure(t *testing.T) {
	t.Parallel()
	_, err := Start(Command{Path: "/nonexistent/scv-server"})
	if err == nil || !strings.Contains(err.Error(), "starting /nonexistent/scv-server") {
		t.Fatalf("Start = %v", err)
	}
}
