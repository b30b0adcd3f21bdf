// Package toolstest holds what the tools' tests share: a real workspace in
// a temporary directory opened as an os.Root, argument encoding, and
// reading files back.
package toolstest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/tools"
)

// Env returns the environment of a call in a new workspace holding files
// (name → content; a name ending in "/" is a directory). The workspace is
// canonical (symlinks resolved) and its root is closed with the test.
// OutputLimit is 64 KiB.
func Env(t testing.TB, files map[string]string) tools.Env {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return tools.Env{Workspace: dir, Root: root, OutputLimit: 64 << 10}
}

// Args encodes a call's arguments.
func Args(t testing.TB, a map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ReadFile returns the content of the workspace file name.
func ReadFile(t testing.TB, env tools.Env, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(env.Workspace, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
