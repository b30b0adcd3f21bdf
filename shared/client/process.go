package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/scv-cli/scv/shared/cli"
)

// Command says how to start a server process.
type Command struct {
	Path string   // the binary (Finder.Find(Server))
	Args []string // its arguments, such as "--stdio"
	Dir  string   // its working directory; "" is this process's
	Env  []string // its environment; nil is this process's
	// Stderr receives the server's stderr. nil makes a pipe the caller
	// reads from Process.Stderr (and must read to the end, or close).
	Stderr io.Writer
	// Starter, when set, starts the prepared command instead of
	// cmd.Start: a server that runs another server as its child (a nested
	// SCV) starts it through its own process registry, so its zombie
	// collector leaves the child to this Process's wait. It may replace
	// SysProcAttr's Setpgid with Setsid (a group of its own either way).
	Starter func(cmd *exec.Cmd) error
}

// Process is a server started as a child process that speaks the protocol
// on its stdin and stdout. It is kept apart from the byte stream (Stream)
// so a Conn can run over a process's pipes as over a socket.
//
// The child runs in its own process group: a Ctrl-C typed at the terminal
// reaches only the client, which shuts the server down itself, and Stop can
// kill the server together with anything it started.
//
// One goroutine per process waits for its exit; it ends when the process
// does, which Stop guarantees.
type Process struct {
	cmd *exec.Cmd
	// Stdout is the server's protocol output. Reading it to the end is
	// the caller's; Stop closes it once the process is gone.
	Stdout *os.File
	// Stderr is the read end of the server's stderr when Command.Stderr
	// was nil, else nil.
	Stderr *os.File
	stdin  *os.File

	stdinOnce sync.Once
	exited    chan struct{} // closed when Wait has returned
	waitErr   error         // Wait's result, read after exited

	stopOnce sync.Once
	stopErr  error
}

// ErrKilled is wrapped by Stop's error when the server had to be killed.
var ErrKilled = errors.New("killed")

// Start starts the server described by c.
func Start(c Command) (p *Process, err error) {
	var closers []*os.File
	fail := func(err error) (*Process, error) {
		for _, f := range closers {
			_ = f.Close()
		}
		return nil, fmt.Errorf("starting %s: %w", c.Path, err)
	}
	// Plain pipes rather than cmd.*Pipe: Wait must not close our ends, so
	// what the server wrote before it exited can still be read.
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	closers = append(closers, stdinR, stdinW)
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	closers = append(closers, stdoutR, stdoutW)
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	childEnds := []*os.File{stdinR, stdoutW}
	var stderrR *os.File
	if c.Stderr != nil {
		cmd.Stderr = c.Stderr
		// Bounds Wait when a descendant keeps the stderr pipe open after
		// the server exits (only when Stderr is not an *os.File).
		cmd.WaitDelay = time.Second
	} else {
		var stderrW *os.File
		if stderrR, stderrW, err = os.Pipe(); err != nil {
			return fail(err)
		}
		closers = append(closers, stderrR, stderrW)
		cmd.Stderr = stderrW
		childEnds = append(childEnds, stderrW)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := cmd.Start
	if c.Starter != nil {
		start = func() error { return c.Starter(cmd) }
	}
	if err := start(); err != nil {
		return fail(err)
	}
	for _, f := range childEnds {
		_ = f.Close()
	}
	p = &Process{cmd: cmd, Stdout: stdoutR, Stderr: stderrR, stdin: stdinW, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid returns the server's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stdin is the server's protocol input. Closing it (CloseStdin) asks the
// server to exit.
func (p *Process) Stdin() io.Writer { return p.stdin }

// CloseStdin closes the server's input: end of input, which asks it to
// exit. Later calls do nothing.
func (p *Process) CloseStdin() error {
	var err error
	p.stdinOnce.Do(func() { err = p.stdin.Close() })
	return err
}

// Stream returns the process's pipes as one byte stream for a Conn:
// reads from its stdout, writes to its stdin; Close closes its stdin.
func (p *Process) Stream() io.ReadWriteCloser { return processStream{p} }

type processStream struct{ p *Process }

func (s processStream) Read(b []byte) (int, error)  { return s.p.Stdout.Read(b) }
func (s processStream) Write(b []byte) (int, error) { return s.p.stdin.Write(b) }
func (s processStream) Close() error                { return s.p.CloseStdin() }

// Exited is closed when the process has exited and was reaped.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitError returns how the process ended once Exited is closed: nil for
// status 0, else an *ExitError. Before that it returns nil.
func (p *Process) ExitError() error {
	select {
	case <-p.exited:
	default:
		return nil
	}
	return exitError(p.cmd.ProcessState, p.waitErr)
}

// KillGroup sends SIGKILL to the server's process group, so helpers it
// started in the same group go with it. It does not wait; Stop does.
func (p *Process) KillGroup() {
	if pr := p.cmd.Process; pr != nil {
		_ = syscall.Kill(-pr.Pid, syscall.SIGKILL)
		_ = pr.Kill()
	}
}

// Stop ends the server: it closes its stdin (end of input, which asks it
// to exit), waits at most grace for it, then kills its process group and
// waits again; ctx ending cuts the grace short. It then closes Stdout (and
// Stderr when it is a pipe), which ends a pending read. It returns how the
// server ended (ExitError), wrapping ErrKilled when it had to kill. Later
// calls return the first result.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(ctx, grace) })
	return p.stopErr
}

func (p *Process) stop(ctx context.Context, grace time.Duration) error {
	defer func() {
		_ = p.Stdout.Close()
		if p.Stderr != nil {
			_ = p.Stderr.Close()
		}
	}()
	_ = p.CloseStdin()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return p.ExitError()
	case <-timer.C:
	case <-ctx.Done():
	}
	p.KillGroup()
	<-p.exited
	return fmt.Errorf("%w after it did not exit within %s of its stdin closing: %v", ErrKilled, grace, exitError(p.cmd.ProcessState, p.waitErr))
}

// ExitError says how a server process ended when it did not exit 0.
type ExitError struct {
	Code   int    // exit status; -1 when a signal killed it or it could not be waited for
	Signal string // the signal that killed it, if one did
	State  *os.ProcessState
	Err    error // why it could not be waited for, if so
}

func exitError(st *os.ProcessState, waitErr error) error {
	if st == nil {
		if waitErr == nil {
			return nil
		}
		return &ExitError{Code: -1, Err: waitErr}
	}
	if st.Success() {
		// A WaitDelay expiry on a leftover stderr writer is no failure.
		return nil
	}
	ee := &ExitError{Code: st.ExitCode(), State: st, Err: waitErr}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ee.Signal = signalName(ws.Signal())
	}
	return ee
}

// signalName is sig as people write it ("SIGKILL"); syscall.Signal's String
// is a description ("killed") that reads badly after "killed by signal".
func signalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return "signal " + strconv.Itoa(int(sig))
}

// Error is the process state as os/exec words it ("exit status 3",
// "signal: killed").
func (e *ExitError) Error() string {
	if e.State != nil {
		return e.State.String()
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

func (e *ExitError) Unwrap() error { return e.Err }

// Status describes how the process ended, as a log line says it.
func (e *ExitError) Status() string {
	switch {
	case e == nil:
		return "exited with status 0"
	case e.Signal != "":
		return "was killed by signal " + e.Signal
	case e.Code >= 0:
		return fmt.Sprintf("exited with status %d", e.Code)
	case e.Err != nil:
		return fmt.Sprintf("ended (%v)", e.Err)
	}
	return "ended"
}

// ConfigError reports whether the server refused its configuration (exit
// 78, EX_CONFIG); its message is on its stderr.
func (e *ExitError) ConfigError() bool { return e.Code == int(cli.Config) }

// VersionMismatch reports whether the server refused the client's
// protocol version (exit 3).
func (e *ExitError) VersionMismatch() bool { return e.Code == int(cli.VersionMismatch) }
