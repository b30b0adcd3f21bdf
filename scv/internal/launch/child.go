package launch

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Child is a server started as a child process that speaks the protocol on
// its stdin and stdout. The caller owns it: it must read Stdout until EOF or
// error and call Stop exactly once, which always reaps the process.
type Child struct {
	// Stdin is the server's protocol input. Closing it asks the server to
	// exit.
	Stdin io.WriteCloser
	// Stdout is the server's protocol output.
	Stdout io.Reader

	cmd      *exec.Cmd
	stopOnce sync.Once
	stopErr  error
}

// ErrKilled is wrapped by Stop's error when the server had to be killed.
var ErrKilled = errors.New("killed")

// StartChild starts the program at path with args. Its stderr goes to
// stderr (nil discards it). The child runs in its own process group so a
// Ctrl-C typed at the terminal reaches only scv, which then cancels the turn
// over the protocol instead of the server dying mid-write.
func StartChild(path string, args []string, stderr io.Writer) (*Child, error) {
	cmd := exec.Command(path, args...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Bounds Wait when a descendant keeps the stderr pipe open after the
	// server exits (only when stderr is not an *os.File).
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	return &Child{Stdin: stdin, Stdout: stdout, cmd: cmd}, nil
}

// Stop closes the server's stdin, which asks it to exit, and waits for it
// at most grace; then it kills the process group and waits again. It
// returns the server's exit error (nil for status 0), wrapping ErrKilled
// when it had to kill. Stop closes Stdout, which ends a pending read; later
// calls return the first result.
func (c *Child) Stop(grace time.Duration) error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(grace) })
	return c.stopErr
}

func (c *Child) stop(grace time.Duration) error {
	_ = c.Stdin.Close()
	done := make(chan error, 1)
	// Exits when Wait returns, which the kill below guarantees.
	go func() { done <- c.cmd.Wait() }()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
	}
	c.Kill()
	err := <-done
	return fmt.Errorf("%w after it did not exit within %s of its stdin closing: %v", ErrKilled, grace, err)
}

// Kill sends SIGKILL to the server's process group, so helpers it started in
// the same group go with it. It does not wait; Stop does.
func (c *Child) Kill() {
	if p := c.cmd.Process; p != nil {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		_ = p.Kill()
	}
}

// Pid returns the server's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }
