// Package paths locates SCV's instance directory (SCV_HOME, by default
// ~/.scv) and the files inside it, and reads the environment only through
// the Env interface so that tests never touch the real process environment.
//
// Layout (spec decision 4):
//
//	$SCV_HOME/config.toml        user configuration
//	$SCV_HOME/agents/<name>/     private homes of delegated agents
//	$SCV_HOME/state/             sessions, delegations, conversations, ...
//	$SCV_HOME/run/               the daemon's socket, lock and daemon.json
//	<workspace>/.scv/config.toml project configuration
//
// Everything SCV creates under SCV_HOME is private: directories 0700 (see
// EnsureDir), files 0600 (see package atomicfile).
package paths

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Names of the environment variables and files this package knows.
const (
	// HomeEnv is the environment variable that overrides the instance
	// directory. It must hold an absolute path.
	HomeEnv = "SCV_HOME"
	// DirName is the name of the instance directory under the user's home
	// directory, and of the project directory under a workspace.
	DirName = ".scv"
	// ConfigFileName is the name of the configuration file, both in the
	// instance directory and in a project directory.
	ConfigFileName = "config.toml"
	// StateDirName is the name of the state directory in the instance
	// directory.
	StateDirName = "state"
	// AgentsDirName is the name of the directory holding the private homes
	// of delegated agents.
	AgentsDirName = "agents"
	// RunDirName is the name of the daemon's run directory in the instance
	// directory: its socket, lock and description (docs/daemon.md).
	RunDirName = "run"
	// DirMode is the mode of every directory SCV creates under SCV_HOME.
	DirMode fs.FileMode = 0o700
)

// Env is read access to environment variables. Use OSEnv for the process
// environment and MapEnv in tests.
type Env interface {
	// Getenv returns the value of the variable, or "" when it is unset.
	Getenv(key string) string
	// LookupEnv returns the value of the variable and whether it is set.
	LookupEnv(key string) (string, bool)
}

type osEnv struct{}

func (osEnv) Getenv(key string) string            { return os.Getenv(key) }
func (osEnv) LookupEnv(key string) (string, bool) { return os.LookupEnv(key) }

// OSEnv returns an Env that reads the process environment.
func OSEnv() Env { return osEnv{} }

type mapEnv map[string]string

func (m mapEnv) Getenv(key string) string { return m[key] }

func (m mapEnv) LookupEnv(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}

// MapEnv returns an Env holding a copy of m; later changes to m are not
// seen. A nil or empty map is an empty environment.
func MapEnv(m map[string]string) Env {
	c := make(mapEnv, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// Home returns SCV's instance directory: the value of SCV_HOME when it is set
// and not empty (it must be an absolute path), otherwise ~/.scv, where ~ is
// the HOME variable of env (USERPROFILE on Windows). The directory is not
// created; see EnsureDir. The result is cleaned.
func Home(env Env) (string, error) {
	if env == nil {
		env = OSEnv()
	}
	if v := env.Getenv(HomeEnv); v != "" {
		if !filepath.IsAbs(v) {
			hint := ""
			if strings.HasPrefix(v, "~") {
				hint = " (the shell did not expand ~; write $HOME instead)"
			}
			return "", fmt.Errorf("%s must be an absolute path, but it is %q%s; set it to a directory such as /home/you/.scv or unset it to use ~/.scv", HomeEnv, v, hint)
		}
		return filepath.Clean(v), nil
	}
	homeVar := "HOME"
	if runtime.GOOS == "windows" {
		homeVar = "USERPROFILE"
	}
	h := env.Getenv(homeVar)
	if h == "" {
		return "", fmt.Errorf("cannot locate the SCV instance directory: neither %s nor %s is set; set %s to an absolute path", HomeEnv, homeVar, HomeEnv)
	}
	if !filepath.IsAbs(h) {
		return "", fmt.Errorf("cannot locate the SCV instance directory: %s is %q, which is not an absolute path; set %s to an absolute path", homeVar, h, HomeEnv)
	}
	return filepath.Join(h, DirName), nil
}

// ConfigFile returns the user configuration file in the instance directory
// home: home/config.toml.
func ConfigFile(home string) string { return filepath.Join(home, ConfigFileName) }

// StateDir returns the state directory in the instance directory home:
// home/state.
func StateDir(home string) string { return filepath.Join(home, StateDirName) }

// RunDir returns the daemon's run directory in the instance directory
// home: home/run (mode 0700).
func RunDir(home string) string { return filepath.Join(home, RunDirName) }

// SocketFile returns the daemon's Unix socket: home/run/scv.sock.
func SocketFile(home string) string { return filepath.Join(RunDir(home), "scv.sock") }

// DaemonLockFile returns the file the daemon holds an exclusive flock on,
// so that one daemon runs per instance directory: home/run/daemon.lock.
func DaemonLockFile(home string) string { return filepath.Join(RunDir(home), "daemon.lock") }

// DaemonInfoFile returns the running daemon's description (pid, version,
// start time, socket): home/run/daemon.json.
func DaemonInfoFile(home string) string { return filepath.Join(RunDir(home), "daemon.json") }

// RestartFile returns the list of sessions a planned restart saved for the
// next daemon to resume: home/run/restart.json.
func RestartFile(home string) string { return filepath.Join(RunDir(home), "restart.json") }

// AgentsDir returns the directory of the delegated agents' private homes in
// the instance directory home: home/agents.
func AgentsDir(home string) string { return filepath.Join(home, AgentsDirName) }

// AgentDir returns the private home of the delegated agent name:
// home/agents/<name>. The name must be a single path element: not empty, not
// "." or "..", and without path separators or NUL bytes.
func AgentDir(home, name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`+"\x00") {
		return "", fmt.Errorf("agent name %q cannot be used as a directory name; use a name without slashes, such as %q", name, "codex")
	}
	return filepath.Join(AgentsDir(home), name), nil
}

// ProjectDir returns the project directory of a workspace: workspace/.scv.
func ProjectDir(workspace string) string { return filepath.Join(workspace, DirName) }

// ProjectConfigFile returns the project configuration file of a workspace:
// workspace/.scv/config.toml.
func ProjectConfigFile(workspace string) string {
	return filepath.Join(ProjectDir(workspace), ConfigFileName)
}

// EnsureDir creates the directory path and any missing parents with mode
// 0700. A directory it creates gets exactly 0700 whatever the umask; the mode
// of a directory that already exists is left alone. It is an error for path,
// or one of its parents, to exist as something other than a directory.
func EnsureDir(path string) error {
	if path == "" {
		return errors.New("paths: EnsureDir: empty path")
	}
	path = filepath.Clean(path)
	if fi, err := os.Stat(path); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("cannot create directory %s: a file of that name exists; move it away", path)
		}
		return nil
	}
	if err := os.MkdirAll(path, DirMode); err != nil {
		return fmt.Errorf("cannot create directory %s: %w", path, err)
	}
	// MkdirAll applies the umask; make sure the leaf is exactly 0700 (the
	// parents it created are at most 0700 already).
	if err := os.Chmod(path, DirMode); err != nil {
		return fmt.Errorf("cannot set the mode of directory %s to %v: %w", path, DirMode, err)
	}
	return nil
}
