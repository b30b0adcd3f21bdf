package spill

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestFilesArePrunedPerPrefix(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Another tool's files are not counted nor removed.
	other := filepath.Join(dir, "mcp-keep.log")
	if err := os.WriteFile(other, []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(other, old, old); err != nil {
		t.Fatal(err)
	}
	for i := range MaxFiles + 3 {
		s := Open(filepath.Join(dir, fmt.Sprintf("bash-%02d.log", i)), 10)
		s.Write([]byte("x"))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Distinct modification times, oldest first.
		mt := time.Now().Add(time.Duration(i-100) * time.Second)
		if err := os.Chtimes(s.Path, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "bash-*"))
	if len(files) != MaxFiles {
		t.Fatalf("%d spill files, want %d: %v", len(files), MaxFiles, files)
	}
	if _, err := os.Stat(filepath.Join(dir, "bash-00.log")); !os.IsNotExist(err) {
		t.Fatal("the oldest spill file was kept")
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another tool's spill file was removed: %v", err)
	}
}

var meta = regexp.MustCompile(`\[output truncated: (\d+) bytes in total, (\d+) kept: the first (\d+) and the last (\d+)\]`)

func TestText(t *testing.T) {
	t.Parallel()
	if out, cut := Text("éabcü", 100, "", 0, "[not kept]"); cut || out != "éabcü" {
		t.Fatalf("short text: %q %v", out, cut)
	}
	dir := t.TempDir()
	long := strings.Repeat("é", 3000) + "END"
	path := filepath.Join(dir, "spill", "mcp-1.log")
	out, cut := Text(long, 600, path, 1<<20, "[not kept]")
	if !cut || len(out) > 600 || !utf8.ValidString(out) {
		t.Fatalf("cut %v, %d bytes, valid %v", cut, len(out), utf8.ValidString(out))
	}
	m := meta.FindStringSubmatch(out)
	if m == nil || m[1] != strconv.Itoa(len(long)) {
		t.Fatalf("truncation line %v in %q", m, out)
	}
	if !strings.HasPrefix(out, "éé") || !strings.Contains(out, "END\n[output truncated") || !strings.Contains(out, "bytes omitted …]") {
		t.Fatalf("head, tail or marker missing: %q", out)
	}
	if !strings.Contains(out, "[the full output is in "+path) {
		t.Fatalf("no spill note: %q", out)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != long {
		t.Fatalf("spill file: %d bytes, %v", len(got), err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Fatalf("spill file mode %v", info.Mode())
	}

	// A file bound below the text: the note says how much it holds.
	out, _ = Text(long, 800, filepath.Join(dir, "spill", "mcp-2.log"), 100, "")
	if !strings.Contains(out, "[the file holds only the first 100 of the 6003 bytes (tools.spill_max_bytes)]") {
		t.Fatalf("no bound note: %q", out)
	}
	// No file: the caller's sentence.
	out, _ = Text(long, 600, "", 0, "[not kept]")
	if !strings.Contains(out, "\n[not kept]") {
		t.Fatalf("no not-kept note: %q", out)
	}
	// A limit smaller than the notes: still within it.
	if out, _ := Text(long, 40, path+"x", 1<<20, "[not kept]"); len(out) > 40 || !utf8.ValidString(out) {
		t.Fatalf("tiny limit: %q", out)
	}
}

func FuzzText(f *testing.F) {
	f.Add("héllo wörld", 20)
	f.Add(strings.Repeat("\xff", 500), 300)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		limit = limit%2000 + 1
		if limit < 0 {
			limit = -limit
		}
		out, cut := Text(s, limit, "", 0, "[not kept]")
		if cut && (len(out) > limit || !utf8.ValidString(out)) {
			t.Fatalf("limit %d: %d bytes, valid %v", limit, len(out), utf8.ValidString(out))
		}
		if !cut && out != s {
			t.Fatal("uncut text changed")
		}
	})
}
