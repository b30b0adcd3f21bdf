package main_test

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFIFOConfigDoesNotHang: a FIFO in place of $SCV_HOME/config.toml used
// to hang the server at start-up, reading it. It is a configuration error
// now, reported before any input is read: exit 78.
func TestFIFOConfigDoesNotHang(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(home, "config.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runBeforeInput(t, home)
	if code != 78 || stdout != "" || !strings.Contains(stderr, "config.toml: is a named pipe (FIFO), not a regular file; remove it") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// runBeforeInput runs scv-server --stdio of home without ever writing its
// input, and returns its exit code (-1 for a signal) and output; it fails
// the test when the server does not exit within 20 s.
func runBeforeInput(t *testing.T, home string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, "--stdio")
	cmd.Env = []string{"SCV_HOME=" + home}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	in, _ := cmd.StdinPipe()
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("scv-server did not exit before its input; stderr: %s", errOut.String())
	}
	return code, out.String(), errOut.String()
}
