package paths

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckExecutable(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "exe")
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{exe, ""},
		{plain, "it is not executable"},
		{dir, "it is a directory"},
		{filepath.Join(dir, "missing"), "no such file"},
	} {
		err := CheckExecutable(tc.path)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckExecutable(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
}
