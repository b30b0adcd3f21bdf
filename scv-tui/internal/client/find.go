package client

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/scv-cli/scv/shared/paths"
)

const (
	// ServerName is the name of the server binary.
	ServerName = "scv-server"
	// ServerBinEnv names the variable that points at a server binary when
	// none sits next to scv-tui.
	ServerBinEnv = "SCV_SERVER_BIN"
)

// Finder locates the server binary. Its fields are the operating-system
// calls it makes, so tests can replace them; the zero Finder uses the real
// ones.
type Finder struct {
	Executable func() (string, error)            // os.Executable
	Getenv     func(key string) string           // os.Getenv
	LookPath   func(file string) (string, error) // exec.LookPath
}

// NotFoundError says where the server binary was looked for.
type NotFoundError struct {
	Dir    string // the directory of the running executable, "" when unknown
	EnvVal string // the value of SCV_SERVER_BIN, "" when unset
	EnvErr error  // why that value could not be used
}

func (e *NotFoundError) Error() string {
	next := "next to scv-tui"
	if e.Dir != "" {
		next = fmt.Sprintf("next to scv-tui (in %s)", e.Dir)
	}
	if e.EnvVal != "" {
		return fmt.Sprintf("%s=%s cannot be run: %v; point it at the scv-server binary, or unset it to use the one next to scv-tui", ServerBinEnv, e.EnvVal, e.EnvErr)
	}
	env := fmt.Sprintf("%s is not set", ServerBinEnv)
	return fmt.Sprintf("%s not found: %s, and it is neither %s nor on $PATH; build it with scripts/build.sh, which puts every SCV binary in bin/, or set %s to its path",
		ServerName, env, next, ServerBinEnv)
}

// Find returns the path of scv-server: $SCV_SERVER_BIN when set (an error
// when that cannot run), else the one next to the running executable
// (symlinks resolved, so a symlinked scv-tui finds its real siblings), else
// the one on PATH; the same order scv uses.
func (f Finder) Find() (string, error) {
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
	nf := &NotFoundError{}
	// The override wins, as in scv itself: an explicit path that cannot
	// run is an error, not a reason to run another binary.
	if v := getenv(ServerBinEnv); v != "" {
		nf.EnvVal = v
		if nf.EnvErr = paths.CheckExecutable(v); nf.EnvErr == nil {
			return v, nil
		}
		return "", nf
	}
	if self, err := executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		nf.Dir = filepath.Dir(self)
		p := filepath.Join(nf.Dir, ServerName)
		if paths.CheckExecutable(p) == nil {
			return p, nil
		}
	}
	if p, err := lookPath(ServerName); err == nil {
		return p, nil
	}
	return "", nf
}
