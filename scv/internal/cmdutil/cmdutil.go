// Package cmdutil holds what every scv command is built from: the Factory of
// dependencies, the I/O streams, and small cobra helpers. Commands take a
// *Factory instead of reaching for os.Stdout or os.Exec themselves, so a
// test can hand them buffers and fakes (the cli/cli Factory pattern).
package cmdutil

import (
	"io"
	"os"

	"github.com/scv-cli/scv/scv/internal/exitcode"
	"github.com/scv-cli/scv/scv/internal/launch"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// IOStreams are the standard streams of a command.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Factory carries the dependencies of the commands.
type Factory struct {
	IO *IOStreams
	// FindBinary returns the path of a sibling SCV binary (launch.Server,
	// launch.TUI).
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
	finder := &launch.Finder{}
	return &Factory{
		IO:              &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		FindBinary:      finder.Find,
		Exec:            launch.Exec,
		StdinIsTerminal: func() bool { return term.IsTerminal(int(os.Stdin.Fd())) },
	}
}

// ExactArgs is cobra.ExactArgs(n) whose error is a usage error carrying msg.
func ExactArgs(n int, msg string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return exitcode.UsageErrorf("%s", msg)
		}
		return nil
	}
}

// NoArgs refuses positional arguments with a usage error. On a command with
// subcommands an argument is most likely a mistyped subcommand, so it says
// so.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return exitcode.UsageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return exitcode.UsageErrorf("%q takes no arguments, got %q", cmd.CommandPath(), args[0])
}

// FlagErrorFunc makes cobra's flag-parsing errors usage errors.
func FlagErrorFunc(_ *cobra.Command, err error) error {
	return &exitcode.UsageError{Err: err}
}
