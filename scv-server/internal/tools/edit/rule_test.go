package edit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSessionRule: an edit proposes the rule of the directory of the file
// it changes (through symlinks), the same rules write uses; protected
// files get no rule and no key.
func TestSessionRule(t *testing.T) {
	t.Parallel()
	env := newEnv(t, map[string]string{
		"src/a/b.go": "old", "main.go": "old", "config/app.txt": "old", ".env": "old", ".scv/config.toml": "old",
	})
	if err := os.Symlink("../config/app.txt", filepath.Join(env.Workspace, "src", "link.txt")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		key  string
		keys []string
	}{
		{"src/a/b.go", "fs:src/a/", []string{"fs:src/a/", "fs:src/", "fs:./"}},
		{"main.go", "fs:./", []string{"fs:./"}},
		{"src/link.txt", "fs:config/", []string{"fs:config/", "fs:./"}},
		{".env", "", nil},
		{".scv/config.toml", "", nil},
	}
	for _, tc := range tests {
		plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": tc.path, "old_string": "old", "new_string": "new"}))
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		got := ""
		if plan.Rule != nil {
			got = plan.Rule.Key
			if !strings.HasPrefix(plan.Rule.Description, "writes and edits ") {
				t.Errorf("%s: description %q", tc.path, plan.Rule.Description)
			}
		}
		if got != tc.key || !slices.Equal(plan.Keys, tc.keys) {
			t.Errorf("%s: rule %q keys %q, want %q %q", tc.path, got, plan.Keys, tc.key, tc.keys)
		}
	}
}
