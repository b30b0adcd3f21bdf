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
	cmd := exec.Command(bin, "--stdio")
	cmd.Env = []string{"SCV_HOME=" + home}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
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
		if !errors.As(err, &ee) || ee.ExitCode() != 78 {
			t.Fatalf("exit = %v, want 78; stderr: %s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatal("scv-server hung on a FIFO config.toml")
	}
	if stdout.Len() != 0 || !strings.Contains(stderr.String(), "config.toml: is a named pipe (FIFO), not a regular file; remove it") {
		t.Fatalf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}
