package client

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/scv-cli/scv/shared/paths"
)

// Names of the SCV binaries that find each other.
const (
	Server = "scv-server"
	TUI    = "scv-tui"
	Agents = "scv-agents"
	// Bridge is the chat bridge, which `scv channels login` runs.
	Bridge = "scv-bridge"
)

// overrideEnv names, per binary, the environment variable that points at
// it directly. Tests and unusual installs use it to skip the search.
var overrideEnv = map[string]string{
	Server: "SCV_SERVER_BIN",
	TUI:    "SCV_TUI_BIN",
	Agents: "SCV_AGENTS_BIN",
}

// OverrideEnv returns the environment variable that overrides the path of
// the binary name, or "" when it has none.
func OverrideEnv(name string) string { return overrideEnv[name] }

// Finder locates the sibling SCV binaries: the one sibling-binary finder
// of scv, scv-tui and every other client. Its function fields are the
// operating-system calls it makes, so tests can replace them; nil uses the
// real ones.
type Finder struct {
	// Self is the name of the running program for messages ("scv",
	// "scv-tui"); "" uses the base name of the running executable.
	Self       string
	Executable func() (string, error)            // os.Executable
	Getenv     func(key string) string           // os.Getenv
	LookPath   func(file string) (string, error) // exec.LookPath
}

// NotFoundError says a sibling binary cannot be run and where it was
// looked for.
type NotFoundError struct {
	Name   string // the binary looked for, such as scv-server
	Self   string // the running program, such as scv-tui
	Dir    string // the directory of the running executable, "" when unknown
	EnvVar string // the variable that overrides its path, "" when none
	EnvVal string // that variable's value, "" when unset
	EnvErr error  // why that value cannot be run
}

func (e *NotFoundError) Error() string {
	self := e.Self
	if self == "" {
		self = "this program"
	}
	next := "next to " + self
	if e.Dir != "" {
		next = fmt.Sprintf("next to %s (in %s)", self, e.Dir)
	}
	if e.EnvVal != "" {
		return fmt.Sprintf("%s=%s cannot be run: %v; point it at the %s binary, or unset it to use the one next to %s",
			e.EnvVar, e.EnvVal, e.EnvErr, e.Name, self)
	}
	msg := fmt.Sprintf("%s not found: ", e.Name)
	if e.EnvVar != "" {
		msg += fmt.Sprintf("%s is not set, and ", e.EnvVar)
	}
	msg += fmt.Sprintf("it is neither %s nor on $PATH; build it with scripts/build.sh, which puts every SCV binary in bin/", next)
	if e.EnvVar != "" {
		msg += fmt.Sprintf(", or set %s to its path", e.EnvVar)
	}
	return msg
}

func (e *NotFoundError) Unwrap() error { return e.EnvErr }

// Find returns the path of the binary name: the override variable when it
// is set (an error when that cannot run: an explicit path is not a reason
// to run another binary), else the one next to the running executable
// (symbolic links resolved, so a symlinked scv finds its real siblings),
// else the one on $PATH. Errors are *NotFoundError.
func (f Finder) Find(name string) (string, error) {
	executable, getenv, lookPath := f.Executable, f.Getenv, f.LookPath
	if executable == nil {
		executable = os.Executable
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	nf := &NotFoundError{Name: name, Self: f.Self, EnvVar: overrideEnv[name]}
	if nf.EnvVar != "" {
		if v := getenv(nf.EnvVar); v != "" {
			nf.EnvVal = v
			if nf.EnvErr = paths.CheckExecutable(v); nf.EnvErr == nil {
				return v, nil
			}
			return "", nf
		}
	}
	if self, err := executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		if nf.Self == "" {
			nf.Self = filepath.Base(self)
		}
		nf.Dir = filepath.Dir(self)
		p := filepath.Join(nf.Dir, name)
		if paths.CheckExecutable(p) == nil {
			return p, nil
		}
	}
	if p, err := lookPath(name); err == nil {
		return p, nil
	}
	return "", nf
}
