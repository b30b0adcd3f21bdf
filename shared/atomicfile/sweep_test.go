package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSweepTemps(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sessions", "x")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	write := func(path string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	stale := filepath.Join(sub, TempPrefix+"123")
	fresh := filepath.Join(sub, TempPrefix+"456")
	kept := filepath.Join(sub, "log.jsonl")
	write(stale, old)
	write(fresh, time.Now())
	write(kept, old)
	// A symlink to a directory outside is not followed.
	outside := t.TempDir()
	outStale := filepath.Join(outside, TempPrefix+"789")
	write(outStale, old)
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}

	n, err := SweepTemps(dir, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("SweepTemps = %d, %v; want 1 removed", n, err)
	}
	for path, want := range map[string]bool{stale: false, fresh: true, kept: true, outStale: true} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", path, err == nil, want)
		}
	}
	if n, err := SweepTemps(filepath.Join(dir, "missing"), time.Hour); n != 0 || err != nil {
		t.Errorf("a missing dir: %d, %v", n, err)
	}
}
