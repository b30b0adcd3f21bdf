package write

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSessionRule: a write proposes the rule of the directory of the file
// it changes (through symlinks) and is covered by its ancestors' rules;
// protected files get no rule and no key.
func TestSessionRule(t *testing.T) {
	t.Parallel()
	env := newEnv(t, map[string]string{"src/a/b.go": "x", "config/app.txt": "x", ".git/": ""})
	if err := os.Symlink("../config/app.txt", filepath.Join(env.Workspace, "src", "link.txt")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, mode string
		key        string
		keys       []string
	}{
		{"src/new.go", "create", "fs:src/", []string{"fs:src/", "fs:./"}},
		{"src/a/b.go", "replace", "fs:src/a/", []string{"fs:src/a/", "fs:src/", "fs:./"}},
		{"src/new/dir/x.go", "create", "fs:src/new/dir/", []string{"fs:src/new/dir/", "fs:src/new/", "fs:src/", "fs:./"}},
		{"notes.md", "create", "fs:./", []string{"fs:./"}},
		{"src/link.txt", "replace", "fs:config/", []string{"fs:config/", "fs:./"}},
		{".env", "create", "", nil},
		{".git/hooks/pre-commit", "create", "", nil},
		{".scv/config.toml", "create", "", nil},
	}
	for _, tc := range tests {
		plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": tc.path, "content": "y", "mode": tc.mode}))
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		got := ""
		if plan.Rule != nil {
			got = plan.Rule.Key
		}
		if got != tc.key || !slices.Equal(plan.Keys, tc.keys) {
			t.Errorf("%s: rule %q keys %q, want %q %q", tc.path, got, plan.Keys, tc.key, tc.keys)
		}
	}
}
