// Package cmdutil holds what every scv-agents command is built from: the
// Factory of dependencies (streams, environment, the instance directory,
// how to run an agent's own command, how to read a secret). The exit
// codes and cobra helpers are the CLI kit's (shared/cli). Commands take a
// *Factory instead of reaching for os.Stdout or os.Environ, so tests can
// hand them fakes (the GitHub CLI's Factory pattern).
package cmdutil

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/paths"
	"golang.org/x/term"
)

// IOStreams are the standard streams of a command (the CLI kit's).
type IOStreams = cli.IOStreams

// Factory carries the dependencies of the commands.
type Factory struct {
	IO *IOStreams
	// Env reads the environment.
	Env paths.Env
	// Environ is the environment delegated agents' private environments
	// are built from (os.Environ).
	Environ func() []string
	// StdinIsTerminal reports whether stdin is a terminal a person can
	// answer prompts on.
	StdinIsTerminal func() bool
	// ReadSecret reads one line from the terminal without echo, after
	// printing prompt on stderr.
	ReadSecret func(prompt string) (string, error)
	// RunAttached runs an agent's own command with the terminal attached
	// and returns its error (an *exec.ExitError for a non-zero exit).
	RunAttached func(ctx context.Context, path string, args, env []string, dir string) error
	// RunCaptured runs an agent's own command with its output captured
	// (never printed) and returns the output and its exit code.
	RunCaptured func(ctx context.Context, path string, args, env []string, dir string) ([]byte, int, error)
}

// New returns the Factory of the real process.
func New() *Factory {
	return &Factory{
		IO:              &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Env:             paths.OSEnv(),
		Environ:         os.Environ,
		StdinIsTerminal: func() bool { return term.IsTerminal(int(os.Stdin.Fd())) },
		ReadSecret: func(prompt string) (string, error) {
			fmt.Fprint(os.Stderr, prompt)
			b, err := term.ReadPassword(int(os.Stdin.Fd()))
			fmt.Fprintln(os.Stderr)
			return strings.TrimSpace(string(b)), err
		},
		RunAttached: func(ctx context.Context, path string, args, env []string, dir string) error {
			return runAttached(ctx, os.Stdin, os.Stdout, os.Stderr, path, args, env, dir)
		},
		RunCaptured: runCaptured,
	}
}

// maxCaptured bounds what RunCaptured keeps of a status command's output.
const maxCaptured = 64 << 10

func runCaptured(ctx context.Context, path string, args, env []string, dir string) ([]byte, int, error) {
	c := exec.CommandContext(ctx, path, args...)
	c.Env, c.Dir = env, dir
	c.Stdin = nil
	var out limitedBuffer
	c.Stdout, c.Stderr = &out, &out
	err := c.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.b, ee.ExitCode(), nil
	}
	if err != nil {
		return out.b, -1, err
	}
	return out.b, 0, nil
}

type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxCaptured - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(len(p), room)]...)
	}
	return len(p), nil
}

// Home returns the instance directory (SCV_HOME or ~/.scv).
func (f *Factory) Home() (string, error) { return paths.Home(f.Env) }

// ReadLine reads one line from stdin, for answers and keys piped in.
func (f *Factory) ReadLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		if errors.Is(err, io.EOF) {
			return "", errors.New("stdin ended before an answer was read")
		}
		return "", err
	}
	return strings.TrimSpace(line), nil
}
