// Package cli is the command-line kit every SCV binary is built from, in
// the style of the GitHub CLI: commands return errors, and one function
// (Program.Exit) turns an error into the message on stderr and the exit
// code. The table of exit codes below is the whole contract of every
// binary (docs/cli.md):
//
//	0    OK               the command did what it was asked
//	1    Failure          any other error (a failed turn, a missing binary,
//	                      a feature that is not built yet)
//	2    Usage            the command line was wrong
//	3    VersionMismatch  scv-server: the client speaks no protocol version
//	                      the server does
//	78   Config           scv-server: the configuration is invalid (EX_CONFIG)
//	130  Interrupted      a signal or Ctrl+C stopped the run (128 + SIGINT)
package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
)

// Code is a process exit status.
type Code int

// The exit codes of the SCV binaries.
const (
	OK              Code = 0
	Failure         Code = 1
	Usage           Code = 2
	VersionMismatch Code = 3
	// Daemon is the daemon not in the state a command needs: a second
	// `scv-server daemon` on one SCV_HOME, or `scv daemon status` with no
	// daemon running (docs/daemon.md).
	Daemon      Code = 4
	Config      Code = 78
	Interrupted Code = 130
)

// UsageError is a mistake on the command line. Program.Exit prints it
// followed by a hint to run --help, and exits with Usage.
type UsageError struct {
	Err error
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// UsageErrorf returns a *UsageError with a formatted message.
func UsageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// IsUsage reports whether err is, or wraps, a *UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// InterruptedError ends a run that was interrupted or cancelled. Its
// message says what was stopped; it exits with Interrupted.
type InterruptedError struct {
	Msg string
}

func (e *InterruptedError) Error() string { return e.Msg }

// ExitError ends the program with an exit code of its own. Err is what is
// printed; nil prints nothing (the code says it all, or the message was
// shown already).
type ExitError struct {
	Code Code
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// WithCode returns an *ExitError: err (nil for no message) with code.
func WithCode(code Code, err error) error {
	return &ExitError{Code: code, Err: err}
}

// Exitf returns an *ExitError with code whose message is written for a
// person to read as it is, full sentences and final period included (an
// error string to be wrapped would not end with one).
func Exitf(code Code, format string, args ...any) error {
	return &ExitError{Code: code, Err: message(fmt.Sprintf(format, args...))}
}

// message is an error that is only a message.
type message string

func (m message) Error() string { return string(m) }

// reportedError wraps an error whose message was already shown, so Exit
// keeps its exit code without printing it twice.
type reportedError struct {
	err error
}

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

// Reported marks err as already shown to the user. It returns nil for nil.
func Reported(err error) error {
	if err == nil {
		return nil
	}
	return &reportedError{err: err}
}

// IsReported reports whether err was marked with Reported.
func IsReported(err error) bool {
	var r *reportedError
	return errors.As(err, &r)
}

// CodeOf returns the exit code for err: OK for nil; else the code of the
// first *ExitError in its chain, Usage for a *UsageError, Interrupted for
// an *InterruptedError, and Failure otherwise.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if IsUsage(err) {
		return Usage
	}
	var i *InterruptedError
	if errors.As(err, &i) {
		return Interrupted
	}
	return Failure
}

// Program is how one binary reports errors.
type Program struct {
	// Name starts every message: "scv", "scv agents", "scv-server".
	Name string
	// NoUsageHint leaves out the "Run '… --help' for usage." line after a
	// usage error (scv-server, whose stderr is a log).
	NoUsageHint bool
}

// Exit prints err on w the one way SCV prints errors, "NAME: message",
// followed for a usage error by a hint to run cmd's --help, and returns
// its exit code (CodeOf). It prints nothing for nil, for an error marked
// Reported, or for an *ExitError without a message. cmd is the command
// that failed (cobra's ExecuteC); nil leaves out the hint.
func (p Program) Exit(w io.Writer, cmd *cobra.Command, err error) Code {
	code := CodeOf(err)
	if err == nil || IsReported(err) {
		return code
	}
	var ee *ExitError
	if errors.As(err, &ee) && ee.Err == nil {
		return code
	}
	fmt.Fprintf(w, "%s: %v\n", p.Name, err)
	if code == Usage && !p.NoUsageHint && cmd != nil {
		fmt.Fprintf(w, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// IOStreams are the standard streams of a command.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// ExactArgs is cobra.ExactArgs(n) whose error is a usage error carrying msg.
func ExactArgs(n int, msg string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return UsageErrorf("%s", msg)
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
		return UsageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return UsageErrorf("%q takes no arguments, got %q", cmd.CommandPath(), args[0])
}

// FlagErrorFunc makes cobra's flag-parsing errors usage errors; set it on
// the root command (subcommands inherit it).
func FlagErrorFunc(_ *cobra.Command, err error) error {
	return &UsageError{Err: err}
}
