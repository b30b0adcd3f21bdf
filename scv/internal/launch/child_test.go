package launch

import (
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestChildEchoAndStop(t *testing.T) {
	t.Parallel()
	c, err := StartChild("/bin/sh", []string{"-c", "cat; echo bye >&2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(c.Stdin, "hello\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(c.Stdout, buf); err != nil {
		t.Fatal(err)
	}
	if string(buf) != "hello\n" {
		t.Errorf("read %q", buf)
	}
	if err := c.Stop(5 * time.Second); err != nil {
		t.Errorf("Stop = %v, want nil", err)
	}
	// A second Stop returns the same result without waiting again.
	if err := c.Stop(0); err != nil {
		t.Errorf("second Stop = %v", err)
	}
}

func TestChildExitStatus(t *testing.T) {
	t.Parallel()
	var stderr strings.Builder
	c, err := StartChild("/bin/sh", []string{"-c", "echo oops >&2; exit 3"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(c.Stdout); err != nil {
		t.Fatal(err)
	}
	err = c.Stop(5 * time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("Stop = %v, want exit status 3", err)
	}
	if got := stderr.String(); got != "oops\n" {
		t.Errorf("stderr = %q, want it passed through", got)
	}
}

func TestChildKilledAfterGrace(t *testing.T) {
	// The shell ignores stdin EOF and keeps a grandchild in its group.
	c, err := StartChild("/bin/sh", []string{"-c", "sleep 30 & wait"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	pgid := c.Pid()
	start := time.Now()
	err = c.Stop(100 * time.Millisecond)
	if !errors.Is(err, ErrKilled) {
		t.Fatalf("Stop = %v, want ErrKilled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %s", d)
	}
	// The whole group is gone, grandchild included; allow it a moment to
	// be reaped by init.
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("process group still alive after Stop")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
