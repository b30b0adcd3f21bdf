package instructions

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/scv-cli/scv/shared/statefile"

	"github.com/scv-cli/scv/shared/textcut"
)

// AgentsFileName is the name of a project instructions file.
const AgentsFileName = "AGENTS.md"

// Bounds of the AGENTS.md files a prompt holds.
const (
	MaxAgentsFileBytes  = 32 << 10
	MaxAgentsTotalBytes = 64 << 10
)

// AgentsFile is one AGENTS.md as it goes into the prompt.
type AgentsFile struct {
	// Path is where it was found (the directory's path joined with
	// AGENTS.md, not the symlink target).
	Path    string
	Content string
	// Size is the file's size; Content holds less when Truncated.
	Size      int64
	Truncated bool
}

// AgentsLimits bound DiscoverAgents; zero fields take the defaults above.
type AgentsLimits struct {
	PerFile int
	Total   int
}

// RepoRoot returns the nearest directory at or above dir holding a .git
// entry (a directory, or a file as in a worktree), or "" when there is none.
func RepoRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// DiscoverAgents returns the AGENTS.md files of the canonical workspace
// and of its parent directories up to the repository root (RepoRoot; only
// the workspace itself when there is none), outermost first.
//
// Each file is cut at PerFile bytes; the Total budget goes to the nearest
// files first (the workspace's own file is the most specific), so an outer
// file is the one shortened or left out when the total runs out. A file
// is read only when it resolves, symlinks evaluated, to a regular file
// inside the repository root (the workspace when there is none): a
// symlinked AGENTS.md pointing outside is skipped with a diagnostic.
// Diagnostics are for the caller to log.
func DiscoverAgents(workspace string, lim AgentsLimits) ([]AgentsFile, []string) {
	if lim.PerFile <= 0 {
		lim.PerFile = MaxAgentsFileBytes
	}
	if lim.Total <= 0 {
		lim.Total = MaxAgentsTotalBytes
	}
	top := RepoRoot(workspace)
	if top == "" {
		top = workspace
	}
	// Nearest first, for the budget.
	var dirs []string
	for d := workspace; ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == top || filepath.Dir(d) == d {
			break
		}
	}
	var files []AgentsFile
	var diags []string
	left := lim.Total
	for _, d := range dirs {
		p := filepath.Join(d, AgentsFileName)
		f, err := readAgents(p, top, min(lim.PerFile, left))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				diags = append(diags, fmt.Sprintf("%s: %v; skipped", p, err))
			}
			continue
		}
		if left == 0 {
			diags = append(diags, fmt.Sprintf("%s: left out, the AGENTS.md files reached their %d-byte total", p, lim.Total))
		}
		left -= len(f.Content)
		files = append(files, f)
	}
	// Outermost first.
	for i, j := 0, len(files)-1; i < j; i, j = i+1, j-1 {
		files[i], files[j] = files[j], files[i]
	}
	return files, diags
}

func readAgents(p, top string, max int) (AgentsFile, error) {
	if _, err := os.Lstat(p); err != nil {
		return AgentsFile{}, err
	}
	canon, err := filepath.EvalSymlinks(p)
	if err != nil {
		return AgentsFile{}, fmt.Errorf("cannot resolve: %v", err)
	}
	if !inside(top, canon) {
		return AgentsFile{}, fmt.Errorf("resolves to %s, outside %s", canon, top)
	}
	f, err := statefile.Open(filepath.Dir(canon), filepath.Base(canon), os.O_RDONLY, 0, statefile.NoLinks)
	if err != nil {
		return AgentsFile{}, fmt.Errorf("cannot open: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return AgentsFile{}, fmt.Errorf("cannot stat: %v", err)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)))
	if err != nil {
		return AgentsFile{}, fmt.Errorf("cannot read: %v", err)
	}
	truncated := int64(len(data)) < fi.Size()
	if truncated {
		data = textcut.TrimPartialEnd(data)
	}
	return AgentsFile{Path: p, Content: strings.ToValidUTF8(string(data), "\uFFFD"), Size: fi.Size(), Truncated: truncated}, nil
}

func inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
