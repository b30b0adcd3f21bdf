// Package launch makes scv become another SCV binary (`scv server`, `scv`
// with no arguments, `scv agents`): it replaces the process. Finding the
// binaries is the client kit's (shared/client.Finder).
package launch

import (
	"os"
	"syscall"
)

// Exec replaces the running process with the program at path, with argv as
// its arguments (argv[0] included) and the current environment. It returns
// only on failure. scv uses it where it must become another binary rather
// than wrap it: `scv server` is then indistinguishable from scv-server to
// the client on its stdio, signals included.
func Exec(path string, argv []string) error {
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return &os.PathError{Op: "exec", Path: path, Err: err}
	}
	return nil
}
