package workspace

import (
	"slices"
	"testing"
)

func TestWriteRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rel, real string
		key, desc string // the proposed rule; key "" for none
		keys      []string
	}{
		{rel: "src/main.go", real: "src/main.go", key: "fs:src/", desc: "writes and edits under src/ (write, edit)",
			keys: []string{"fs:src/", "fs:./"}},
		{rel: "src/a/b.go", real: "src/a/b.go", key: "fs:src/a/", desc: "writes and edits under src/a/ (write, edit)",
			keys: []string{"fs:src/a/", "fs:src/", "fs:./"}},
		{rel: "README.md", real: "README.md", key: "fs:./", desc: "writes and edits anywhere in the workspace (write, edit)",
			keys: []string{"fs:./"}},
		{rel: "docs/x.md", real: "docs/x.md", key: "fs:docs/", keys: []string{"fs:docs/", "fs:./"}},
		{rel: "dir with space/é.txt", real: "dir with space/é.txt", key: "fs:dir with space/", keys: []string{"fs:dir with space/", "fs:./"}},
		// A symlink: the rule is the real file's.
		{rel: "src/link.txt", real: "config/app.txt", key: "fs:config/", keys: []string{"fs:config/", "fs:./"}},
		// Protected files: no rule, no key, by the name or by the real file.
		{rel: ".env", real: ".env"},
		{rel: "config/prod.env", real: "config/prod.env"},
		{rel: "certs/server.pem", real: "certs/server.pem"},
		{rel: ".ssh/config", real: ".ssh/config"},
		{rel: ".git/hooks/pre-commit", real: ".git/hooks/pre-commit"},
		{rel: "vendor/x/.git/config", real: "vendor/x/.git/config"},
		{rel: ".scv/config.toml", real: ".scv/config.toml"},
		{rel: ".SCV/config.toml", real: ".SCV/config.toml"},
		{rel: "src/hook", real: ".git/hooks/post-checkout"},
		{rel: ".env", real: "config/app.txt"},
		// A file named like a protected directory is not protected.
		{rel: "src/.git", real: "src/.git", key: "fs:src/", keys: []string{"fs:src/", "fs:./"}},
	}
	for _, tc := range tests {
		rule, keys := WriteRule(tc.rel, tc.real)
		got := ""
		if rule != nil {
			got = rule.Key
		}
		if got != tc.key {
			t.Errorf("%s → %s: rule %q, want %q", tc.rel, tc.real, got, tc.key)
		}
		if tc.desc != "" && (rule == nil || rule.Description != tc.desc) {
			t.Errorf("%s: rule %+v, want description %q", tc.rel, rule, tc.desc)
		}
		if !slices.Equal(keys, tc.keys) {
			t.Errorf("%s → %s: keys %q, want %q", tc.rel, tc.real, keys, tc.keys)
		}
		if rule != nil && !slices.Contains(keys, rule.Key) {
			t.Errorf("%s: the rule %q does not cover its own call", tc.rel, rule.Key)
		}
	}
}
