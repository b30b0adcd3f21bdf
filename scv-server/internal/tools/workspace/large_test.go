package workspace

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// sparse makes a file of size bytes that takes no disk space.
func sparse(t *testing.T, p string, size int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestObserveLargeFileReadsNothing: a 10 GiB file is recognised as large
// by its size, before a byte of it is read or hashed (issue 14, item 4).
// Not parallel: it swaps openTarget.
func TestObserveLargeFileReadsNothing(t *testing.T) {
	ws, root := tree(t, map[string]string{"small": "x"}, nil)
	sparse(t, filepath.Join(ws, "big"), 10<<30)
	var opens atomic.Int64
	orig := openTarget
	openTarget = func(r *os.Root, name string) (*os.File, error) {
		opens.Add(1)
		return orig(r, name)
	}
	t.Cleanup(func() { openTarget = orig })

	tg, err := Observe(root, ws, "big")
	if err != nil {
		t.Fatal(err)
	}
	if !tg.Large || tg.SHA256 != "" || tg.Content != nil {
		t.Fatalf("Observe(big) = Large %v, SHA256 %q, %d bytes of content", tg.Large, tg.SHA256, len(tg.Content))
	}
	if n := opens.Load(); n != 0 {
		t.Fatalf("the 10 GiB file was opened %d times to be read", n)
	}
	if _, err := Observe(root, ws, "small"); err != nil || opens.Load() != 1 {
		t.Fatalf("a small file: %v, %d opens; want it read once", err, opens.Load())
	}
}

// TestHashFileStopsOnCancel: hashing checks its context per chunk and
// refuses more than its limit.
func TestHashFileStopsOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := &countingReader{}
	if _, err := HashFile(ctx, r, 1<<40); !errors.Is(err, context.Canceled) || r.n > hashChunk {
		t.Fatalf("HashFile on a cancelled context: %v after %d bytes", err, r.n)
	}
	r = &countingReader{}
	if _, err := HashFile(context.Background(), r, 3*hashChunk); err == nil || !strings.Contains(err.Error(), "too many to hash") || r.n > 4*hashChunk {
		t.Fatalf("HashFile over the limit: %v after %d bytes", err, r.n)
	}
	if got, err := HashFile(context.Background(), bytes.NewReader([]byte("abc")), 3); err != nil || got != SHA256([]byte("abc")) {
		t.Fatalf("HashFile(abc) = %q, %v", got, err)
	}
}

// countingReader is an endless stream of zeros that counts what is read.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	clear(p)
	r.n += int64(len(p))
	return len(p), nil
}

// TestReplaceLargeFileSeesChange: a file too large to hash is checked by
// its size and times before the replace.
func TestReplaceLargeFileSeesChange(t *testing.T) {
	t.Parallel()
	ws, root := tree(t, map[string]string{}, nil)
	p := filepath.Join(ws, "big")
	sparse(t, p, MaxTextBytes+1)
	tg, err := Observe(root, ws, "big")
	if err != nil {
		t.Fatal(err)
	}
	sparse(t, p, MaxTextBytes+2)
	var ch *ChangedError
	if err := ReplaceFile(context.Background(), root, tg, []byte("new")); !errors.As(err, &ch) {
		t.Fatalf("replace of a changed large file: %v", err)
	}
	tg, _ = Observe(root, ws, "big")
	if err := ReplaceFile(context.Background(), root, tg, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("content %q", b)
	}
}

// TestWriteAtomicCancelledBeforeInstall: a write whose context ends before
// the rename leaves the target as it was and no temporary file.
func TestWriteAtomicCancelledBeforeInstall(t *testing.T) {
	t.Parallel()
	ws, root := tree(t, map[string]string{"a": "old"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	err := WriteAtomic(ctx, root, "a", []byte("new"), WriteOptions{Perm: 0o644, UID: -1, GID: -1,
		BeforeInstall: func() error {
			// The new content is complete here, yet has no name a user
			// could see (O_TMPFILE; issue 14, item 17).
			if left := tempFiles(t, ws); len(left) != 0 {
				t.Errorf("temporary files visible during the write: %v", left)
			}
			cancel()
			return nil
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a")); string(b) != "old" {
		t.Fatalf("target = %q", b)
	}
	if left := tempFiles(t, ws); len(left) != 0 {
		t.Fatalf("temp files left: %v", left)
	}
}
