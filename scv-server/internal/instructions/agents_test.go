package instructions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mkfile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func canon(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func paths(files []AgentsFile) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

func TestDiscoverAgentsStopsAtRepoRoot(t *testing.T) {
	top := canon(t)
	repo := filepath.Join(top, "repo")
	ws := filepath.Join(repo, "svc", "api")
	mkfile(t, filepath.Join(top, AgentsFileName), "above the repository")
	mkfile(t, filepath.Join(repo, ".git", "HEAD"), "ref: refs/heads/main\n")
	mkfile(t, filepath.Join(repo, AgentsFileName), "repo")
	mkfile(t, filepath.Join(ws, AgentsFileName), "api")
	if err := os.MkdirAll(filepath.Join(repo, "svc"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, diags := DiscoverAgents(ws, AgentsLimits{})
	want := []string{filepath.Join(repo, AgentsFileName), filepath.Join(ws, AgentsFileName)}
	if strings.Join(paths(files), "|") != strings.Join(want, "|") || len(diags) != 0 {
		t.Fatalf("files = %v, diags = %v, want %v", paths(files), diags, want)
	}
	if files[0].Content != "repo" || files[1].Content != "api" || files[0].Truncated {
		t.Fatalf("files = %+v", files)
	}
	if RepoRoot(ws) != repo {
		t.Fatalf("RepoRoot = %q", RepoRoot(ws))
	}
}

func TestDiscoverAgentsGitFile(t *testing.T) {
	top := canon(t)
	ws := filepath.Join(top, "wt", "sub")
	mkfile(t, filepath.Join(top, AgentsFileName), "outside")
	mkfile(t, filepath.Join(top, "wt", ".git"), "gitdir: /elsewhere\n")
	mkfile(t, filepath.Join(top, "wt", AgentsFileName), "worktree")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := DiscoverAgents(ws, AgentsLimits{})
	if len(files) != 1 || files[0].Content != "worktree" {
		t.Fatalf("files = %+v", files)
	}
}

func TestDiscoverAgentsNoRepoIsWorkspaceOnly(t *testing.T) {
	t.Parallel()
	top := canon(t)
	ws := filepath.Join(top, "ws")
	mkfile(t, filepath.Join(top, AgentsFileName), "parent")
	mkfile(t, filepath.Join(ws, AgentsFileName), "mine")
	files, _ := DiscoverAgents(ws, AgentsLimits{})
	if len(files) != 1 || files[0].Path != filepath.Join(ws, AgentsFileName) {
		t.Fatalf("files = %v", paths(files))
	}
	// No AGENTS.md at all is no files and no diagnostics.
	files, diags := DiscoverAgents(canon(t), AgentsLimits{})
	if len(files) != 0 || len(diags) != 0 {
		t.Fatalf("files = %v diags = %v", files, diags)
	}
}

func TestDiscoverAgentsSizeCaps(t *testing.T) {
	t.Parallel()
	repo := canon(t)
	ws := filepath.Join(repo, "a", "b")
	mkfile(t, filepath.Join(repo, ".git", "HEAD"), "x")
	mkfile(t, filepath.Join(repo, AgentsFileName), strings.Repeat("r", 50))
	mkfile(t, filepath.Join(repo, "a", AgentsFileName), strings.Repeat("a", 50))
	mkfile(t, filepath.Join(ws, AgentsFileName), strings.Repeat("w", 25)+"é"+strings.Repeat("w", 30))
	// Per file 26 bytes: the workspace's file is cut before the two-byte é;
	// a total of 60 leaves 34 for a/ and nothing for the root's.
	files, diags := DiscoverAgents(ws, AgentsLimits{PerFile: 26, Total: 60})
	if len(files) != 3 {
		t.Fatalf("files = %+v", files)
	}
	root, mid, near := files[0], files[1], files[2]
	if near.Content != strings.Repeat("w", 25) || !near.Truncated || near.Size != 57 {
		t.Errorf("workspace file = %+v", near)
	}
	if mid.Content != strings.Repeat("a", 26) || !mid.Truncated {
		t.Errorf("middle file = %+v", mid)
	}
	if root.Content != strings.Repeat("r", 9) || !root.Truncated {
		t.Errorf("root file = %+v", root)
	}
	if len(diags) != 0 {
		t.Errorf("diags = %v", diags)
	}
	files, diags = DiscoverAgents(ws, AgentsLimits{PerFile: 30, Total: 50})
	if files[0].Content != "" || !files[0].Truncated || len(diags) != 1 || !strings.Contains(diags[0], "50-byte total") {
		t.Fatalf("files = %+v diags = %v", files, diags)
	}
	got := AgentsSection(files)
	if !strings.Contains(got, "[left out: 50 bytes") || !strings.Contains(got, "[... truncated: 20 of 50 bytes shown") {
		t.Fatalf("section:\n%s", got)
	}
	// The defaults: 32 KiB a file.
	mkfile(t, filepath.Join(ws, AgentsFileName), strings.Repeat("x", MaxAgentsFileBytes+10))
	files, _ = DiscoverAgents(ws, AgentsLimits{})
	if n := len(files[2].Content); n != MaxAgentsFileBytes {
		t.Fatalf("default cap kept %d bytes", n)
	}
}

func TestDiscoverAgentsSymlinks(t *testing.T) {
	repo, out := canon(t), canon(t)
	ws := filepath.Join(repo, "ws")
	mkfile(t, filepath.Join(repo, ".git", "HEAD"), "x")
	mkfile(t, filepath.Join(out, "secret.md"), "outside the repository")
	mkfile(t, filepath.Join(repo, "docs", "agents.md"), "shared inside the repository")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	// Inside the repository: followed. Outside: skipped with a diagnostic.
	if err := os.Symlink(filepath.Join(repo, "docs", "agents.md"), filepath.Join(ws, AgentsFileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(out, "secret.md"), filepath.Join(repo, AgentsFileName)); err != nil {
		t.Fatal(err)
	}
	files, diags := DiscoverAgents(ws, AgentsLimits{})
	if len(files) != 1 || files[0].Content != "shared inside the repository" || files[0].Path != filepath.Join(ws, AgentsFileName) {
		t.Fatalf("files = %+v", files)
	}
	if len(diags) != 1 || !strings.Contains(diags[0], "outside "+repo) {
		t.Fatalf("diags = %v", diags)
	}
	// A directory named AGENTS.md is skipped.
	if err := os.Remove(filepath.Join(ws, AgentsFileName)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, AgentsFileName), 0o755); err != nil {
		t.Fatal(err)
	}
	files, diags = DiscoverAgents(ws, AgentsLimits{})
	if len(files) != 0 || len(diags) != 2 || !strings.Contains(diags[0], "not a regular file") {
		t.Fatalf("files = %+v diags = %v", files, diags)
	}
}
