// Package cmdutil holds what every scv command is built from: the Factory of
// dependencies and the I/O streams (the cobra helpers and exit codes are
// the CLI kit's, shared/cli). Commands take a *Factory instead of reaching
// for os.Stdout or os.Exec themselves, so a test can hand them buffers and
// fakes (the cli/cli Factory pattern).
package cmdutil

import (
	"os"
	"strconv"

	"github.com/scv-cli/scv/scv/internal/launch"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"golang.org/x/term"
)

// IOStreams are the standard streams of a command (the CLI kit's).
type IOStreams = cli.IOStreams

// Factory carries the dependencies of the commands.
type Factory struct {
	IO *IOStreams
	// FindBinary returns the path of a sibling SCV binary (client.Server,
	// client.TUI).
	FindBinary func(name string) (string, error)
	// Exec replaces the process with the program at path; argv includes
	// argv[0]. It returns only on failure.
	Exec func(path string, argv []string) error
	// StdinIsTerminal reports whether stdin is a terminal a person can
	// answer prompts on.
	StdinIsTerminal func() bool
}

// New returns the Factory of the real process.
func New() *Factory {
	finder := client.Finder{Self: "scv"}
	return &Factory{
		IO:              &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		FindBinary:      finder.Find,
		Exec:            launch.Exec,
		StdinIsTerminal: func() bool { return term.IsTerminal(int(os.Stdin.Fd())) },
	}
}

// Turns says how many turns a session has, as people write it: "1 turn",
// "3 turns" (session listings in completions and in exec --continue).
func Turns(n int) string {
	if n == 1 {
		return "1 turn"
	}
	return strconv.Itoa(n) + " turns"
}
