package complete

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestMatchCommands(t *testing.T) {
	t.Parallel()
	var names []string
	for _, c := range MatchCommands("/co") {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"/compact", "/cost"}) {
		t.Errorf("/co matched %q", names)
	}
	if MatchCommands("co") != nil || len(MatchCommands("/zz")) != 0 {
		t.Error("a non-command or unknown prefix matched")
	}
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestIndexMatch(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, f := range []string{"main.go", "internal/server/main_test.go", "docs/manual.md", "node_modules/x/main.js", ".git/HEAD", "cmd/mainly/run.go"} {
		write(t, filepath.Join(root, f), "x")
	}
	ix := NewIndex(root)
	if ix.Len() != 4 {
		t.Errorf("indexed %d files, want 4 (node_modules and .git skipped)", ix.Len())
	}
	got := ix.Match("main", 3)
	if len(got) == 0 || got[0] != "main.go" {
		t.Errorf("main matched %q, want main.go first", got)
	}
	if got := ix.Match("srvmt", 5); !slices.Equal(got, []string{"internal/server/main_test.go"}) {
		t.Errorf("fuzzy srvmt matched %q", got)
	}
	if got := ix.Match("zzz", 5); len(got) != 0 {
		t.Errorf("zzz matched %q", got)
	}
}

func TestAttach(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	write(t, filepath.Join(root, "a.go"), "package a\n")
	write(t, filepath.Join(root, "big.txt"), strings.Repeat("é", MaxFileBytes))
	write(t, filepath.Join(root, "bin.dat"), "\x00\x01\x02")
	write(t, filepath.Join(outside, "secret"), "s3cret")
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	prompt := "look at @a.go, @big.txt @bin.dat @link @fifo @missing.go and @a.go again"
	got, notes := Attach(root, prompt, 1<<20)
	if !strings.HasPrefix(got, prompt+"\n\n<attached path=\"a.go\">\npackage a\n</attached>") {
		t.Errorf("a.go not attached first:\n%.200s", got)
	}
	if strings.Count(got, `<attached path="a.go">`) != 1 {
		t.Error("a.go attached twice")
	}
	if !strings.Contains(got, "[cut at 64 KiB; read the file for the rest]") {
		t.Error("the large file was not attached cut")
	}
	if strings.Contains(got, "s3cret") {
		t.Error("a symbolic link leading outside the workspace was attached")
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"@bin.dat was not attached: it is not text", "@link was not attached: it leads outside the workspace",
		"@fifo was not attached: it is not a regular file", "@missing.go was not attached: no such file"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes lack %q:\n%s", want, joined)
		}
	}
	// The total bound: the large file does not fit, the small one does.
	got, notes = Attach(root, "@big.txt @a.go", 1024)
	if len(got) > 1024 || !strings.Contains(got, `<attached path="a.go">`) || !strings.Contains(strings.Join(notes, " "), "size limit") {
		t.Errorf("with a 1 KiB bound: %d bytes, notes %q", len(got), notes)
	}
	if s := Shown("see @a.go\n\n<attached path=\"a.go\">\npackage a\n</attached>"); s != "see @a.go\n[attached: a.go]" {
		t.Errorf("Shown = %q", s)
	}
}

func BenchmarkIndexMatch(b *testing.B) {
	root := b.TempDir()
	for i := range 2000 {
		write(b, filepath.Join(root, "pkg", strings.Repeat("d", i%7+1), fmt.Sprintf("file%d.go", i)), "x")
	}
	ix := NewIndex(root)
	b.ReportAllocs()
	for b.Loop() {
		ix.Match("pkgfx", 5)
	}
}
