// Package exitcode is the one place where scv turns an error into a process
// exit status. Commands return typed errors; only Main (internal/cmd) asks
// this package for a code, so the table below is the whole contract:
//
//	0    OK           the command did what it was asked (a turn completed)
//	1    Failure      any error: a turn failed, the server refused a request
//	                  or exited early, a sibling binary is missing
//	2    Usage        the command line was wrong (unknown flag or command,
//	                  missing or empty prompt, bad --approval-policy)
//	130  Interrupted  SIGINT or SIGTERM stopped the run, or the server
//	                  reported the turn cancelled (128 + SIGINT, as shells do)
package exitcode

import (
	"errors"
	"fmt"
)

// Code is a process exit status.
type Code int

// The exit statuses of scv.
const (
	OK      Code = 0
	Failure Code = 1
	Usage   Code = 2
	// NotRunning is `scv daemon status` when no daemon runs (as
	// systemctl status says 3 for an inactive unit).
	NotRunning  Code = 3
	Interrupted Code = 130
)

// UsageError is a mistake on the command line. Main prints it followed by a
// hint to run --help, and exits with Usage.
type UsageError struct {
	Err error
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// UsageErrorf returns a *UsageError with a formatted message.
func UsageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// InterruptedError ends a run that was interrupted or cancelled. Its
// message says what was stopped; Main prints it and exits with Interrupted.
type InterruptedError struct {
	Msg string
}

func (e *InterruptedError) Error() string { return e.Msg }

// reportedError wraps an error whose message the command already printed,
// so Main keeps the exit code without printing it twice.
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

// IsUsage reports whether err is, or wraps, a *UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// For returns the exit status for err: OK for nil, and otherwise the code
// of the first typed error in its chain, Failure by default.
func For(err error) Code {
	if err == nil {
		return OK
	}
	var u *UsageError
	if errors.As(err, &u) {
		return Usage
	}
	var i *InterruptedError
	if errors.As(err, &i) {
		return Interrupted
	}
	var c *CodeError
	if errors.As(err, &c) {
		return c.Code
	}
	return Failure
}

// CodeError is an error that exits with its own code.
type CodeError struct {
	Code Code
	Err  error
}

func (e *CodeError) Error() string { return e.Err.Error() }
func (e *CodeError) Unwrap() error { return e.Err }
