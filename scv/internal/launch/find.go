// Package launch finds and starts the other SCV binaries. scv is a thin
// front door: the server and the terminal UI are separate executables that
// scripts/build.sh puts side by side in bin/, so scv looks for them next to
// itself first and on $PATH second.
package launch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/scv-cli/scv/shared/paths"
)

// Names of the sibling binaries.
const (
	Server = "scv-server"
	TUI    = "scv-tui"
	Agents = "scv-agents"
)

// overrideEnv names, per binary, the environment variable that points at it
// directly. Tests and unusual installs use it to skip the search.
var overrideEnv = map[string]string{
	Server: "SCV_SERVER_BIN",
	TUI:    "SCV_TUI_BIN",
	Agents: "SCV_AGENTS_BIN",
}

// OverrideEnv returns the environment variable that overrides the path of
// the binary name, or "" when it has none.
func OverrideEnv(name string) string { return overrideEnv[name] }

// NotFoundError says a sibling binary is missing and where scv looked.
type NotFoundError struct {
	Name string
	// Dir is the directory of the running scv, "" when it is unknown.
	Dir string
}

func (e *NotFoundError) Error() string {
	next := "next to scv"
	if e.Dir != "" {
		next = fmt.Sprintf("next to scv (in %s)", e.Dir)
	}
	msg := fmt.Sprintf("%s not found: looked %s and on $PATH; build it with scripts/build.sh, which puts every SCV binary in bin/", e.Name, next)
	if env := overrideEnv[e.Name]; env != "" {
		msg += fmt.Sprintf(", or set %s to its path", env)
	}
	return msg
}

// Finder locates sibling binaries. Its fields are the operating-system calls
// it makes, so tests can replace them; the zero Finder uses the real ones.
type Finder struct {
	// Executable returns the path of the running program (os.Executable).
	Executable func() (string, error)
	// LookPath searches $PATH (exec.LookPath).
	LookPath func(file string) (string, error)
	// Getenv reads the environment (os.Getenv).
	Getenv func(key string) string
}

// Find returns the path of the binary name. The override variable wins when
// it is set; then the directory of the running executable, with symlinks
// resolved so a symlinked scv still finds its real siblings; then $PATH.
func (f *Finder) Find(name string) (string, error) {
	getenv, executable, lookPath := f.Getenv, f.Executable, f.LookPath
	if getenv == nil {
		getenv = os.Getenv
	}
	if executable == nil {
		executable = os.Executable
	}
	if lookPath == nil {
		lookPath = exec.LookPath
	}

	if env := overrideEnv[name]; env != "" {
		if p := getenv(env); p != "" {
			if err := paths.CheckExecutable(p); err != nil {
				return "", fmt.Errorf("%s=%s: %w", env, p, err)
			}
			return p, nil
		}
	}

	var dir string
	if self, err := executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		dir = filepath.Dir(self)
		p := filepath.Join(dir, name)
		if paths.CheckExecutable(p) == nil {
			return p, nil
		}
	}

	if p, err := lookPath(name); err == nil {
		return p, nil
	}
	return "", &NotFoundError{Name: name, Dir: dir}
}
