package cmdutil

import (
	"context"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// runAttached runs an agent's own command with the terminal attached. When
// the caller's stdin is a terminal the command gets it as it is. When it
// is not (a script, a pipe, a session without a tty), the command still
// gets a terminal: a pseudo-terminal whose input is the caller's stdin and
// whose output goes to the caller's stdout, because the agents' sign-in
// flows (Claude Code's and Codex's login screens, Grok's device code)
// refuse to run, or hang, without one.
func runAttached(ctx context.Context, in io.Reader, out, errOut *os.File, path string, args, env []string, dir string) error {
	c := exec.CommandContext(ctx, path, args...)
	c.Env, c.Dir = env, dir
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		c.Stdin, c.Stdout, c.Stderr = f, out, errOut
		return c.Run()
	}
	return RunInPTY(c, in, out)
}

// ptySize is the window a pseudo-terminal reports: a common terminal's.
var ptySize = &pty.Winsize{Rows: 40, Cols: 120}

// RunInPTY runs c on a new pseudo-terminal (its stdin, stdout and stderr,
// and its controlling terminal) while copying in to the terminal and the
// terminal's output to out, and returns c's error once it has exited and
// its output is drained. c must not have been started. The copy from in
// ends with c: a reader that never returns (a terminal nobody types into)
// is left to the caller's process, never waited for.
func RunInPTY(c *exec.Cmd, in io.Reader, out io.Writer) error {
	master, err := pty.StartWithSize(c, ptySize)
	if err != nil {
		return err
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		// Ends with EIO, Linux's way of saying that every process holding
		// the terminal's other side has closed it, or when master closes.
		_, _ = io.Copy(out, master)
	}()
	if in != nil {
		go func() {
			// Ends when in ends or the terminal closes (a write fails).
			_, _ = io.Copy(master, in)
		}()
	}
	werr := c.Wait()
	select {
	case <-drained:
	case <-time.After(drainGrace):
		// A descendant still holds the terminal: stop reading it.
	}
	_ = master.Close()
	<-drained
	return werr
}

// drainGrace bounds the wait for a pseudo-terminal's last output once its
// command has exited.
const drainGrace = 2 * time.Second
