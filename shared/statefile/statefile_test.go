package statefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// within fails the test when fn does not return in time: an open must
// never block (a FIFO).
func within(t *testing.T, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the open blocked")
	}
}

func TestLinkPolicies(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(dir, "real"), "inside")
	write(t, filepath.Join(outside, "secret"), "outside")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("real", filepath.Join(dir, "in-link")))
	must(os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "out-link")))
	must(os.Symlink(outside, filepath.Join(dir, "out-dir")))
	must(os.Symlink(filepath.Join(outside, "nothing"), filepath.Join(dir, "dangling-out")))
	for _, tc := range []struct {
		name  string
		links Links
		want  string // content, or "!" plus a substring of the error
	}{
		{"real", NoLinks, "inside"},
		{"in-link", NoLinks, "!is a symbolic link"},
		{"out-link", NoLinks, "!is a symbolic link"},
		{"out-dir/secret", NoLinks, "!leads outside"},
		{"real", LinksInside, "inside"},
		{"in-link", LinksInside, "inside"},
		{"out-link", LinksInside, "!leads outside"},
		{"out-dir/secret", LinksInside, "!leads outside"},
		{"dangling-out", LinksInside, "!leads outside"},
		{"in-link", AnyLinks, "inside"},
		{"out-link", AnyLinks, "outside"},
		{"missing", NoLinks, "!no such file"},
	} {
		data, err := ReadFile(dir, tc.name, 1<<10, tc.links)
		switch {
		case strings.HasPrefix(tc.want, "!"):
			if err == nil || !strings.Contains(err.Error(), tc.want[1:]) {
				t.Errorf("%s (links %d): %q, %v; want an error with %q", tc.name, tc.links, data, err, tc.want[1:])
			}
		case err != nil || string(data) != tc.want:
			t.Errorf("%s (links %d): %q, %v; want %q", tc.name, tc.links, data, err, tc.want)
		}
	}
	if _, err := ReadFile(dir, "missing", 10, NoLinks); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
}

// TestAppendNeverFollowsALink: a log replaced by a link to a file outside
// the state directory is refused; the file it points to is untouched.
func TestAppendNeverFollowsALink(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	target := filepath.Join(outside, "victim")
	write(t, target, "precious\n")
	if err := os.Symlink(target, filepath.Join(dir, "log.jsonl")); err != nil {
		t.Fatal(err)
	}
	f, err := Open(dir, "log.jsonl", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600, NoLinks)
	var nr *NotRegularError
	if !errors.As(err, &nr) || nr.Mode&fs.ModeSymlink == 0 {
		if f != nil {
			f.Close()
		}
		t.Fatalf("Open = %v, want a *NotRegularError for a link", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious\n" {
		t.Fatalf("the link's target changed: %q", b)
	}
	// A name that does not exist is created, inside the directory.
	f, err = Open(dir, "new.log", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600, NoLinks)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Lstat(filepath.Join(dir, "new.log")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("created %v, %v", fi, err)
	}
}

func TestNonRegularFilesNeverBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, links := range []Links{NoLinks, LinksInside, AnyLinks} {
		for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_APPEND | os.O_CREATE} {
			within(t, func() {
				f, err := Open(dir, "fifo", flag, 0o600, links)
				var nr *NotRegularError
				if !errors.As(err, &nr) || !strings.Contains(err.Error(), "named pipe (FIFO)") {
					if f != nil {
						f.Close()
					}
					t.Errorf("FIFO (links %d, flag %#x): %v", links, flag, err)
				}
			})
		}
		if _, err := ReadFile(dir, "sub", 10, links); err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Errorf("directory (links %d): %v", links, err)
		}
	}
	if _, err := ReadFile("/dev", "null", 10, AnyLinks); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a device: %v", err)
	}
}

func TestReadFileIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f"), "0123456789")
	if b, err := ReadFile(dir, "f", 10, NoLinks); err != nil || string(b) != "0123456789" {
		t.Fatalf("at the bound: %q, %v", b, err)
	}
	_, err := ReadFile(dir, "f", 9, NoLinks)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != 9 {
		t.Fatalf("past the bound: %v", err)
	}
}

// TestOpenLogRotates: a log over LogMaxBytes moves to <name>.old (the one
// before it goes) when next opened, and appending starts afresh; a smaller
// log is appended to; a link in the log's place is neither followed nor
// moved.
func TestOpenLogRotates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "daemon.log")
	write(t, path+".old", "generation 0\n")
	write(t, path, "small\n")
	appendLine := func(line string) {
		t.Helper()
		f, err := OpenLog(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	appendLine("more\n")
	if b, _ := os.ReadFile(path); string(b) != "small\nmore\n" {
		t.Fatalf("a small log was not appended to: %q", b)
	}
	big := strings.Repeat("x", LogMaxBytes) + "\n"
	write(t, path, big)
	appendLine("fresh\n")
	if b, _ := os.ReadFile(path); string(b) != "fresh\n" {
		t.Fatalf("after rotation the log holds %d bytes, want only the new line", len(b))
	}
	if b, _ := os.ReadFile(path + ".old"); string(b) != big {
		t.Fatalf("the old generation holds %d bytes, want the rotated log", len(b))
	}

	outside := filepath.Join(t.TempDir(), "elsewhere")
	write(t, outside, big)
	link := filepath.Join(dir, "linked.log")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	var nr *NotRegularError
	if _, err := OpenLog(link); !errors.As(err, &nr) {
		t.Fatalf("opening a linked log: %v, want a NotRegularError", err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was moved or replaced: %v %v", fi, err)
	}
	if _, err := os.Lstat(link + ".old"); err == nil {
		t.Error("a link was rotated")
	}
}
