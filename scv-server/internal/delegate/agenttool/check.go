package agenttool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/scv-cli/scv/shared/delegate/adapters"
)

// The checks of a call's arguments that need no session state.

// validModel and validEffort are the adapters' checks (tools.md,
// "Choosing an agent"), shared with the configuration's.
func validModel(m string) bool { return adapters.ValidateModel(m) == nil }

func validEffort(e string) bool { return adapters.ValidateEffort(e) == nil }

// checkPrompt refuses a prompt no CLI can take as its last argument.
func checkPrompt(p string) error {
	switch {
	case blank(p):
		return errors.New("prompt is empty: give the agent its brief (what to do, and everything it needs to do it)")
	case strings.HasPrefix(p, "-"):
		return errors.New(`prompt starts with "-", which the agent's CLI could read as an option; begin it with a word instead`)
	case strings.IndexByte(p, 0) >= 0:
		return errors.New("prompt has a NUL byte, which no program argument can hold; remove it")
	case !utf8.ValidString(p):
		return errors.New("prompt is not valid UTF-8; send it as text")
	}
	return nil
}

// resolveCwd resolves cwd (relative to the workspace, or absolute),
// following symlinks, to an existing directory inside the workspace.
func resolveCwd(ws, cwd string) (string, error) {
	if strings.IndexByte(cwd, 0) >= 0 {
		return "", errors.New("cwd has a NUL byte; give a directory inside the workspace")
	}
	p := cwd
	if !filepath.IsAbs(p) {
		p = filepath.Join(ws, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("cwd %q does not exist; give an existing directory inside the workspace %s, or omit cwd to run in the workspace root", cwd, ws)
		}
		return "", fmt.Errorf("cwd %q cannot be resolved (%v); give an existing directory inside the workspace %s", cwd, err, ws)
	}
	if !within(ws, real) {
		return "", fmt.Errorf("cwd %q resolves to %s, outside the workspace %s; give a directory inside the workspace", cwd, real, ws)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("cwd %q cannot be read (%v); give an existing directory inside the workspace %s", cwd, err, ws)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("cwd %q is a file, not a directory; give a directory inside the workspace %s", cwd, ws)
	}
	return real, nil
}

// within reports whether path is root or below it (both clean, absolute).
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}
