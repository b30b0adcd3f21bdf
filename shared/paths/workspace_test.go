package paths

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestResolveWorkspace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real := filepath.Join(root, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(root, "missing")
	realRoot, err := filepath.EvalSymlinks(real)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		dir       string
		canonical bool
		want      string
		step      WorkspaceStep
		msg       string
	}{
		{name: "as written", dir: link, want: link},
		{name: "canonical", dir: link, canonical: true, want: realRoot},
		{name: "missing", dir: missing, step: WorkspaceStat, msg: "workspace: stat " + missing + ": no such file or directory"},
		{name: "missing canonical", dir: missing, canonical: true, step: WorkspaceResolve, msg: "workspace: lstat " + missing + ": no such file or directory"},
		{name: "not a directory", dir: file, step: WorkspaceNotDir, msg: "workspace " + file + " is not a directory"},
		{name: "not a directory canonical", dir: file, canonical: true, step: WorkspaceNotDir, msg: "workspace " + file + " is not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ResolveWorkspace(tt.dir, tt.canonical)
			if tt.msg == "" {
				if err != nil || got != tt.want {
					t.Fatalf("ResolveWorkspace = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			var we *WorkspaceError
			if !errors.As(err, &we) || we.Step != tt.step || err.Error() != tt.msg {
				t.Fatalf("ResolveWorkspace error = %#v (%v), want step %d and %q", err, err, tt.step, tt.msg)
			}
			if tt.step != WorkspaceNotDir && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %v does not wrap fs.ErrNotExist", err)
			}
		})
	}
}

// The current directory is the default; not parallel, it reads the cwd
// (which no test of this package changes).
func TestResolveWorkspaceCurrentDirectory(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ResolveWorkspace("", false); err != nil || got != wd {
		t.Fatalf("ResolveWorkspace(\"\") = %q, %v; want %q", got, err, wd)
	}
}
