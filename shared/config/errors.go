package config

import (
	"errors"
	"fmt"
)

// ErrAPIKeyMissing is wrapped by ResolveAPIKey's error when the environment
// variable named by api_key_env is not set.
var ErrAPIKeyMissing = errors.New("API key not set")

// Error is one problem with a configuration file or an environment variable.
// Load returns one *Error, or several joined with errors.Join; use
// errors.As to inspect the first.
type Error struct {
	// File is the configuration file; empty when the value came from the
	// environment.
	File string
	// Line and Column locate the problem in File (1-based; 0 when unknown).
	Line, Column int
	// Key is the dotted key concerned, such as "tools.approval_policy";
	// empty for syntax errors.
	Key string
	// Env is the environment variable concerned, when the value came from
	// the environment.
	Env string
	// Message is a sentence saying what is wrong and how to fix it.
	Message string
	// Err is the underlying error, if any.
	Err error
}

// Error returns "file:line: message" (or "file:line:column: message" for
// syntax errors, "environment variable X: message" for the environment).
func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0 && e.Key == "" && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Message)
	case e.File != "":
		return location(e.File, e.Line) + ": " + e.Message
	case e.Env != "":
		return "environment variable " + e.Env + ": " + e.Message
	default:
		return "config: " + e.Message
	}
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Diagnostic is a warning about the configuration: something was ignored or
// looks wrong, but loading went on.
type Diagnostic struct {
	// File and Line locate the problem (Line 0 when unknown; File empty for
	// the environment).
	File string
	Line int
	// Key is the dotted key concerned, if any.
	Key string
	// Message is a sentence saying what happened and what to do.
	Message string
}

// String returns "file:line: message", or just the message when no file is
// concerned.
func (d Diagnostic) String() string {
	if d.File == "" {
		return d.Message
	}
	return location(d.File, d.Line) + ": " + d.Message
}
