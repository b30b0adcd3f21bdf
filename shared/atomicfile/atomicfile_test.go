package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tempFiles lists the leftover temporary files in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), TempPrefix) {
			left = append(left, e.Name())
		}
	}
	return left
}

func TestWriteFileReplaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := WriteFile(path, []byte("old content that is longer"), 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("content = %q, %v; want %q", got, err, "new")
	}
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	// Empty content is a valid write.
	if err := WriteFile(path, nil, 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); len(got) != 0 {
		t.Fatalf("content = %q, want empty", got)
	}
}

func TestWriteFilePerm(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix modes")
	}
	dir := t.TempDir()
	tests := []struct {
		name string
		perm fs.FileMode
		want fs.FileMode
	}{
		{"default", 0, 0o600},
		{"explicit 0600", 0o600, 0o600},
		{"0644", 0o644, 0o644},
		{"0640 ignores the umask", 0o640, 0o640},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_"))
			// Pre-existing file with a wider mode is replaced with perm.
			if err := os.WriteFile(path, []byte("x"), 0o666); err != nil {
				t.Fatal(err)
			}
			if err := WriteFile(path, []byte("data"), tt.perm); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != tt.want {
				t.Fatalf("mode = %v, want %v", fi.Mode().Perm(), tt.want)
			}
		})
	}
	path := filepath.Join(dir, "func")
	if err := WriteFileFunc(path, 0, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("WriteFileFunc mode = %v, want 0600", fi.Mode().Perm())
	}
}

func TestWriteFileFuncStreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "big")
	// Larger than the internal buffer, so it is flushed several times.
	want := bytes.Repeat([]byte("0123456789abcdef"), 20000)
	err := WriteFileFunc(path, 0o600, func(w io.Writer) error {
		for i := 0; i < len(want); i += 1000 {
			if _, err := w.Write(want[i:min(i+1000, len(want))]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("content mismatch (len %d, want %d), %v", len(got), len(want), err)
	}
}

func TestWriteErrorCleansUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := WriteFile(path, []byte("original"), 0); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	for _, size := range []int{0, 10, 200 << 10} { // nothing, buffered only, flushed to disk
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			err := WriteFileFunc(path, 0, func(w io.Writer) error {
				if _, err := w.Write(bytes.Repeat([]byte("p"), size)); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("err = %v, want it to wrap %v", err, boom)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if got, _ := os.ReadFile(path); string(got) != "original" {
				t.Fatalf("target changed to %q", got)
			}
			if left := tempFiles(t, dir); len(left) != 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}
}

func TestPanicCleansUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	func() {
		defer func() {
			if r := recover(); r != "kaboom" {
				t.Fatalf("recovered %v, want the original panic", r)
			}
		}()
		_ = WriteFileFunc(path, 0, func(w io.Writer) error { panic("kaboom") })
	}()
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("target exists after panic: %v", err)
	}
}

func TestMissingDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nope")
	path := filepath.Join(dir, "state")
	err := WriteFile(path, []byte("x"), 0)
	if err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v, want it to wrap fs.ErrNotExist", err)
	}
	want := fmt.Sprintf("directory %s does not exist", dir)
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %q, want it to contain %q and the path", err, want)
	}
}

func TestBadTargets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := WriteFile(dir, []byte("x"), 0); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("WriteFile(dir) = %v", err)
	}
	if err := WriteFile("", []byte("x"), 0); err == nil {
		t.Error("WriteFile(\"\") succeeded")
	}
	if err := WriteFileFunc(filepath.Join(dir, "f"), 0, nil); err == nil {
		t.Error("WriteFileFunc(nil) succeeded")
	}
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestSymlinkIsReplaced(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges")
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	if err := os.WriteFile(target, []byte("target"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "target" {
		t.Errorf("link target changed to %q", got)
	}
	fi, err := os.Lstat(link)
	if err != nil || !fi.Mode().IsRegular() {
		t.Errorf("link is now %v, %v; want a regular file", fi.Mode(), err)
	}
}

// TestConcurrentWriters races writers of different full contents against a
// reader: every read must see exactly one writer's complete content.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	const writers, rounds, size = 4, 25, 32 << 10
	contents := make([][]byte, writers)
	for i := range contents {
		contents[i] = bytes.Repeat([]byte{byte('a' + i)}, size)
	}
	if err := WriteFile(path, contents[0], 0); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	readErr := make(chan error, 1)
	var readerDone sync.WaitGroup
	readerDone.Add(1)
	go func() {
		defer readerDone.Done()
		for reads := 0; ; reads++ {
			select {
			case <-stop:
				readErr <- nil
				return
			default:
			}
			got, err := os.ReadFile(path)
			if err != nil {
				readErr <- fmt.Errorf("read %d: %w", reads, err)
				return
			}
			if len(got) != size || !bytes.Equal(got, bytes.Repeat(got[:1], size)) {
				readErr <- fmt.Errorf("read %d: partial or mixed content (len %d)", reads, len(got))
				return
			}
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				var err error
				if r%2 == 0 {
					err = WriteFile(path, contents[i], 0)
				} else {
					err = WriteFileFunc(path, 0, func(w io.Writer) error {
						_, err := w.Write(contents[i])
						return err
					})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(stop)
	readerDone.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := <-readErr; err != nil {
		t.Error(err)
	}
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestWriteFileNoSyncReplaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tree.json")
	for _, content := range []string{"old content that is longer", "new"} {
		if err := WriteFileNoSync(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("content = %q, %v; want %q", got, err, "new")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	if left := tempFiles(t, dir); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// BenchmarkWriteFile is one small record written durably (sync) and
// without the fsyncs (nosync).
func BenchmarkWriteFile(b *testing.B) {
	data := []byte(`{"tag":"4685ccab-354c-4b1b-94c5-3f0e5b1f9d11","owner":{"pid":1,"start":2},"what":"bash"}` + "\n")
	for _, tc := range []struct {
		name  string
		write func(string, []byte, fs.FileMode) error
	}{{"sync", WriteFile}, {"nosync", WriteFileNoSync}} {
		b.Run(tc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "tree.json")
			for b.Loop() {
				if err := tc.write(path, data, 0o600); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
