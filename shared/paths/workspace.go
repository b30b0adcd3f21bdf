package paths

import (
	"fmt"
	"os"
	"path/filepath"
)

// WorkspaceStep is the step of ResolveWorkspace that failed.
type WorkspaceStep int

// The steps of ResolveWorkspace, in order.
const (
	// WorkspaceAbs: the path could not be made absolute (the current
	// directory is unknown).
	WorkspaceAbs WorkspaceStep = iota
	// WorkspaceResolve: its symbolic links could not be resolved (it does
	// not exist, or a component cannot be read). Canonical only.
	WorkspaceResolve
	// WorkspaceStat: it could not be read (it does not exist).
	WorkspaceStat
	// WorkspaceNotDir: it is not a directory.
	WorkspaceNotDir
)

// WorkspaceError says why a workspace directory cannot be used. Its
// message is the one scv prints; other callers (scv-tui's --cd, the
// server's session.start cwd) say it in their own words from its fields.
type WorkspaceError struct {
	Dir  string        // the directory as given ("." for the current one)
	Abs  string        // its absolute path, "" when Step is WorkspaceAbs
	Step WorkspaceStep // what failed
	Err  error         // the underlying error; nil for WorkspaceNotDir
}

func (e *WorkspaceError) Error() string {
	switch e.Step {
	case WorkspaceAbs:
		return fmt.Sprintf("resolving the workspace %s: %v", e.Dir, e.Err)
	case WorkspaceNotDir:
		return fmt.Sprintf("workspace %s is not a directory", e.Abs)
	}
	return fmt.Sprintf("workspace: %v", e.Err)
}

func (e *WorkspaceError) Unwrap() error { return e.Err }

// ResolveWorkspace is the one resolver of a workspace directory (the
// -C/--cd flags of every command, and the cwd of session.start): dir, or
// the current directory when dir is "", made absolute and checked to be a
// directory. With canonical, symbolic links are resolved too and the real
// path is returned, as the server keys sessions and project configuration
// by it; otherwise the absolute path is returned as the user wrote it (the
// server resolves it). Errors are *WorkspaceError.
func ResolveWorkspace(dir string, canonical bool) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", &WorkspaceError{Dir: dir, Step: WorkspaceAbs, Err: err}
	}
	path := abs
	if canonical {
		if path, err = filepath.EvalSymlinks(abs); err != nil {
			return "", &WorkspaceError{Dir: dir, Abs: abs, Step: WorkspaceResolve, Err: err}
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", &WorkspaceError{Dir: dir, Abs: abs, Step: WorkspaceStat, Err: err}
	}
	if !st.IsDir() {
		return "", &WorkspaceError{Dir: dir, Abs: abs, Step: WorkspaceNotDir}
	}
	return path, nil
}
