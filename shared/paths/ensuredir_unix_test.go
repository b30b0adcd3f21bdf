//go:build unix

package paths

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestEnsureDir(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)

	base := t.TempDir()
	dir := filepath.Join(base, "a", "b", "c")
	if err := EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(base, "a"), filepath.Join(base, "a", "b"), dir} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want drwx------", d, fi.Mode())
		}
	}
	// Idempotent, and an existing directory keeps its mode.
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := EnsureDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o750 {
		t.Errorf("existing directory mode changed to %v", fi.Mode().Perm())
	}
	// A file in the way is a clear error.
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := EnsureDir(file); err == nil || !strings.Contains(err.Error(), "a file of that name exists") {
		t.Errorf("EnsureDir(file) = %v", err)
	}
	if err := EnsureDir(filepath.Join(file, "sub")); err == nil {
		t.Error("EnsureDir under a file succeeded")
	}
	if err := EnsureDir(""); err == nil {
		t.Error("EnsureDir(\"\") succeeded")
	}
}
