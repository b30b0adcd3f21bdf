package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tree makes a canonical temporary workspace with files (a name ending in
// "/" is a directory) and symlinks (name → target), opened as a root.
func tree(t *testing.T, files map[string]string, links [][2]string) (string, *os.Root) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
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
	for _, l := range links {
		target := strings.ReplaceAll(l[1], "$WS", dir)
		if err := os.Symlink(target, filepath.Join(dir, l[0])); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return dir, root
}

func TestResolve(t *testing.T) {
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := tree(t, map[string]string{"a.txt": "a", "d/b.txt": "b", "f": "file"}, [][2]string{
		{"rel", "a.txt"},
		{"abs", "$WS/d/b.txt"},
		{"dl", "d"},
		{"absdir", "$WS/d"},
		{"chain", "rel"},
		{"out", outside + "/x"},
		{"outdir", outside},
		{"dangling", "nope"},
		{"d/up", "../a.txt"},
	})
	tests := []struct{ in, want, errHas string }{
		{"a.txt", "a.txt", ""},
		{"new.txt", "new.txt", ""},
		{"x/y/z.txt", "x/y/z.txt", ""},
		{"rel", "a.txt", ""},
		{"abs", "d/b.txt", ""},
		{"dl/b.txt", "d/b.txt", ""},
		{"dl/new/c.txt", "d/new/c.txt", ""},
		{"absdir/b.txt", "d/b.txt", ""},
		{"chain", "a.txt", ""},
		{"d/up", "a.txt", ""},
		{"dangling", "dangling", ""}, // Observe refuses it
		{"out", "", "leads outside the workspace"},
		{"outdir/x", "", "leads outside the workspace"},
		{"outdir/deep/new", "", "leads outside the workspace"},
		{"f/inner", "", "is a file, not a directory"},
	}
	for _, tc := range tests {
		got, err := Resolve(ws, tc.in)
		if tc.errHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("Resolve(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.errHas)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestObserve(t *testing.T) {
	ws, root := tree(t, map[string]string{"a.txt": "hello", "d/": ""}, [][2]string{{"dangling", "nope"}, {"dl", "d"}})
	tg, err := Observe(root, ws, "a.txt")
	if err != nil || !tg.Exists || string(tg.Content) != "hello" || tg.SHA256 != SHA256([]byte("hello")) || tg.Large {
		t.Fatalf("Observe(a.txt) = %+v, %v", tg, err)
	}
	if tg, err := Observe(root, ws, "new/b.txt"); err != nil || tg.Exists || tg.Real != "new/b.txt" {
		t.Fatalf("Observe(new/b.txt) = %+v, %v", tg, err)
	}
	for _, tc := range []struct{ rel, errHas string }{
		{".", "workspace directory itself"},
		{"d", "is a directory"},
		{"dl", "is a directory"},
		{"dangling", "symlink that does not lead to an existing file"},
	} {
		if _, err := Observe(root, ws, tc.rel); err == nil || !strings.Contains(err.Error(), tc.errHas) {
			t.Errorf("Observe(%q) error %v, want %q", tc.rel, err, tc.errHas)
		}
	}
	if _, err := Observe(nil, ws, "a.txt"); err == nil {
		t.Error("Observe with no root succeeded")
	}
}

func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), TempPrefix) {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestWriteAtomic(t *testing.T) {
	t.Run("replace keeps the exact mode", func(t *testing.T) {
		ws, root := tree(t, map[string]string{"a": "old"}, nil)
		if err := os.Chmod(filepath.Join(ws, "a"), 0o666); err != nil {
			t.Fatal(err)
		}
		tg, err := Observe(root, ws, "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := ReplaceFile(context.Background(), root, tg, []byte("new")); err != nil {
			t.Fatal(err)
		}
		fi, _ := os.Stat(filepath.Join(ws, "a"))
		if b, _ := os.ReadFile(filepath.Join(ws, "a")); string(b) != "new" || fi.Mode().Perm() != 0o666 {
			t.Fatalf("content %q mode %v", b, fi.Mode())
		}
	})
	t.Run("a failing check leaves the target and no temp file", func(t *testing.T) {
		ws, root := tree(t, map[string]string{"d/a": "old"}, nil)
		boom := errors.New("boom")
		err := WriteAtomic(context.Background(), root, "d/a", []byte("new"), WriteOptions{Perm: 0o644, UID: -1, GID: -1, BeforeInstall: func() error { return boom }})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "d/a")); string(b) != "old" {
			t.Fatalf("target = %q", b)
		}
		if left := tempFiles(t, ws); len(left) != 0 {
			t.Fatalf("temp files left: %v", left)
		}
	})
	t.Run("a change seen before the rename stops the replace", func(t *testing.T) {
		ws, root := tree(t, map[string]string{"a": "old"}, nil)
		tg, err := Observe(root, ws, "a")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "a"), []byte("theirs"), 0o644); err != nil {
			t.Fatal(err)
		}
		var ch *ChangedError
		if err := ReplaceFile(context.Background(), root, tg, []byte("mine")); !errors.As(err, &ch) || ch.Current != SHA256([]byte("theirs")) {
			t.Fatalf("err = %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "a")); string(b) != "theirs" {
			t.Fatalf("target = %q", b)
		}
		if left := tempFiles(t, ws); len(left) != 0 {
			t.Fatalf("temp files left: %v", left)
		}
	})
	t.Run("no-replace refuses a file that appeared", func(t *testing.T) {
		ws, root := tree(t, map[string]string{}, nil)
		tg, err := Observe(root, ws, "x/y/new")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(ws, "x/y"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "x/y/new"), []byte("theirs"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := CreateFile(context.Background(), root, tg, []byte("mine")); !errors.Is(err, fs.ErrExist) {
			t.Fatalf("err = %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "x/y/new")); string(b) != "theirs" {
			t.Fatalf("target = %q", b)
		}
		if left := tempFiles(t, ws); len(left) != 0 {
			t.Fatalf("temp files left: %v", left)
		}
	})
	t.Run("create makes parents and applies the umask", func(t *testing.T) {
		ws, root := tree(t, map[string]string{}, nil)
		tg, err := Observe(root, ws, "p/q/new.txt")
		if err != nil {
			t.Fatal(err)
		}
		if err := CreateFile(context.Background(), root, tg, []byte("x")); err != nil {
			t.Fatal(err)
		}
		umask := syscall.Umask(0)
		syscall.Umask(umask)
		fi, err := os.Stat(filepath.Join(ws, "p/q/new.txt"))
		if want := fs.FileMode(0o666 &^ umask); err != nil || fi.Mode().Perm() != want {
			t.Fatalf("stat %v %v, want mode %v", fi.Mode(), err, want)
		}
		if left := tempFiles(t, ws); len(left) != 0 {
			t.Fatalf("temp files left: %v", left)
		}
	})
	t.Run("replace breaks a hard link", func(t *testing.T) {
		ws, root := tree(t, map[string]string{"a": "old"}, nil)
		if err := os.Link(filepath.Join(ws, "a"), filepath.Join(ws, "b")); err != nil {
			t.Skip(err)
		}
		tg, _ := Observe(root, ws, "a")
		if err := ReplaceFile(context.Background(), root, tg, []byte("new")); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(ws, "b")); string(b) != "old" {
			t.Fatalf("the hard link now holds %q", b)
		}
	})
}

func TestCheckSHA256(t *testing.T) {
	good := SHA256([]byte("x"))
	for _, s := range []string{good} {
		if err := CheckSHA256(s); err != nil {
			t.Errorf("CheckSHA256(%q): %v", s, err)
		}
	}
	for _, s := range []string{"", "abc", strings.ToUpper(good), good + "0", good[:63] + "g", " " + good[1:]} {
		if err := CheckSHA256(s); err == nil || !strings.Contains(err.Error(), "lowercase") {
			t.Errorf("CheckSHA256(%q) = %v", s, err)
		}
	}
}
