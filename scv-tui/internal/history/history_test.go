package history

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		data      string
		want      []string
		wantClean bool
	}{
		{"empty", "", nil, true},
		{"entries", "{\"prompt\":\"a\"}\n{\"prompt\":\"b\\nc\"}\n", []string{"a", "b\nc"}, true},
		{"torn last line", "{\"prompt\":\"a\"}\n{\"prompt\":\"b", []string{"a"}, false},
		{"torn but valid JSON", "{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}", []string{"a"}, false},
		{"bad line in the middle", "{\"prompt\":\"a\"}\nnot json\n{\"prompt\":\"b\"}\n", []string{"a", "b"}, false},
		{"not an entry", "{\"other\":1}\nnull\n\"s\"\n{\"prompt\":7}\n", nil, false},
		{"blank prompt", "{\"prompt\":\"  \"}\n", nil, false},
		{"repeat collapsed", "{\"prompt\":\"a\"}\n{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}\n{\"prompt\":\"a\"}\n", []string{"a", "b", "a"}, false},
		{"extra members", "{\"prompt\":\"a\",\"at\":\"x\"}\n", []string{"a"}, true},
		{"blank line", "\n{\"prompt\":\"a\"}\n", []string{"a"}, false},
		{"html kept", "{\"prompt\":\"<b>&\"}\n", []string{"<b>&"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, clean := Parse([]byte(tt.data))
			if !reflect.DeepEqual(got, tt.want) || clean != tt.wantClean {
				t.Errorf("Parse = %q, %v; want %q, %v", got, clean, tt.want, tt.wantClean)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}\n"))
	f.Add([]byte("{\"prompt\":\"a\"}\n{\"prompt\":\"b"))
	f.Add([]byte("\n\nnull\n{\"prompt\":\"\\u2028\\ud800\"}\n"))
	f.Add([]byte("{\"prompt\":\"\xff\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, _ := Parse(data)
		for i, e := range entries {
			if strings.TrimSpace(e) == "" {
				t.Fatalf("entry %d is blank", i)
			}
			if i > 0 && entries[i-1] == e {
				t.Fatalf("entry %d repeats the one before", i)
			}
		}
		// What Parse returns survives a rewrite unchanged, and the
		// rewritten file is clean.
		var buf []byte
		for _, e := range entries {
			buf = encodeLine(buf, e)
		}
		again, clean := Parse(buf)
		if !reflect.DeepEqual(again, entries) || !clean {
			t.Fatalf("re-encoded %q parses as %q (clean %v)", entries, again, clean)
		}
	})
}

func TestAdd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		maxBytes int64
		maxItems int
		add      []string
		want     []string
	}{
		{"in order", 0, 0, []string{"a", "b", "c"}, []string{"a", "b", "c"}},
		{"repeat of the newest skipped", 0, 0, []string{"a", "a", "b", "a"}, []string{"a", "b", "a"}},
		{"blank skipped", 0, 0, []string{"a", "", " \n\t", "b"}, []string{"a", "b"}},
		{"item bound drops the oldest", 0, 3, []string{"1", "2", "3", "4", "5"}, []string{"3", "4", "5"}},
		{"byte bound drops the oldest", 6, 0, []string{"aa", "bb", "cc", "dd"}, []string{"bb", "cc", "dd"}},
		{"over the byte bound alone", 3, 0, []string{"aa", "toolong", "bb"}, []string{"bb"}},
		{"invalid UTF-8 made valid", 0, 0, []string{"a\xffb"}, []string{"a\uFFFDb"}},
		{"multi-line", 0, 0, []string{"line 1\nline 2"}, []string{"line 1\nline 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "h.jsonl")
			s, err := OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s.SetBounds(tt.maxBytes, tt.maxItems)
			for _, p := range tt.add {
				if err := s.Add(p); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.Entries(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Entries = %q, want %q", got, tt.want)
			}
			// The file says the same once read back with the same bounds.
			r, err := OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r.SetBounds(tt.maxBytes, tt.maxItems)
			if got := r.Entries(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("reloaded Entries = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFileStaysBounded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h.jsonl")
	s, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s.SetBounds(1<<20, 8)
	for i := 0; i < 100; i++ {
		if err := s.Add(strings.Repeat("x", i+1)); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		entries, clean := Parse(data)
		if !clean {
			t.Fatalf("after %d adds the file is not clean", i+1)
		}
		if len(entries) > 8+8/4 {
			t.Fatalf("after %d adds the file holds %d entries, over the bound and its slack", i+1, len(entries))
		}
	}
	if got := s.Entries(); len(got) != 8 || got[7] != strings.Repeat("x", 100) {
		t.Errorf("Entries has %d entries ending %q", len(got), got[len(got)-1])
	}
}

func TestTornFileIsRepaired(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h.jsonl")
	if err := os.WriteFile(path, []byte("{\"prompt\":\"a\"}\n{\"prompt\":\"half"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Entries(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Fatalf("Entries = %q", got)
	}
	if err := s.Add("b"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if want := "{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}\n"; string(data) != want {
		t.Errorf("file %q, want %q (the torn line gone, not glued to the new one)", data, want)
	}
	// Then appends again.
	if err := s.Add("c"); err != nil {
		t.Fatal(err)
	}
	if entries, clean := Parse(mustRead(t, path)); !clean || len(entries) != 3 {
		t.Errorf("file entries %q clean %v", entries, clean)
	}
}

func TestPathAndModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	home := t.TempDir()
	ws := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	p1, err := Path(home, ws)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := Path(home, link)
	if p1 != p2 {
		t.Errorf("a symlink to the workspace has another history: %s vs %s", p1, p2)
	}
	p3, _ := Path(home, t.TempDir())
	if p3 == p1 {
		t.Error("two workspaces share a history file")
	}
	if dir := filepath.Join(home, "state", "prompt-history"); filepath.Dir(p1) != dir || !strings.HasSuffix(p1, ".jsonl") {
		t.Errorf("path %s, want a .jsonl file in %s", p1, dir)
	}
	s, err := Open(home, ws)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add("hello"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Dir(p1)); st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v", st.Mode().Perm())
	}
	if st, _ := os.Stat(p1); st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v", st.Mode().Perm())
	}
	if s.File() != p1 {
		t.Errorf("File = %s", s.File())
	}
}

func TestUnwritable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "h.jsonl")
	if err := os.Mkdir(path, 0o700); err != nil { // a directory where the file goes
		t.Fatal(err)
	}
	if _, err := OpenFile(path); err == nil || !strings.Contains(err.Error(), "cannot read the prompt history") {
		t.Errorf("OpenFile of a directory = %v", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(filepath.Join(file, "h.jsonl")); err == nil {
		t.Error("OpenFile under a file succeeded")
	}
	// A file that becomes unwritable: Add says so, and the prompt stays
	// in memory. (A directory in its place fails even for root.)
	other := filepath.Join(dir, "other.jsonl")
	s, err := OpenFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("kept"); err == nil || !strings.Contains(err.Error(), "cannot save the prompt history") {
		t.Errorf("Add to an unwritable file = %v", err)
	}
	if got := s.Entries(); !reflect.DeepEqual(got, []string{"kept"}) {
		t.Errorf("Entries = %q", got)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// BenchmarkAdd measures adding a prompt at the default bounds: appends,
// with a rewrite to the bounds once the file is a quarter past them.
func BenchmarkAdd(b *testing.B) {
	s, err := OpenFile(filepath.Join(b.TempDir(), "h.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	prompt := strings.Repeat("a prompt of some length ", 8)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Add(prompt + strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpen measures reading a full history file (200 prompts).
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "h.jsonl")
	s, err := OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < DefaultMaxItems; i++ {
		if err := s.Add(strings.Repeat("a prompt of some length ", 8) + strconv.Itoa(i)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := OpenFile(path); err != nil {
			b.Fatal(err)
		}
	}
}

// TestUntrustedHistoryFile: the history file is a state file: a FIFO in
// its place is refused at once (it used to hang the TUI's start), a link
// in its place is neither read nor appended to, and a file far larger
// than SCV ever writes is read from its end only (the newest prompts) and
// rewritten at the next Add.
func TestUntrustedHistoryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := OpenFile(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe") {
			t.Fatalf("OpenFile of a FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OpenFile blocked on a FIFO")
	}

	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte(`{"prompt":"not yours"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("OpenFile of a link: %v", err)
	}

	big := filepath.Join(dir, "big.jsonl")
	var b strings.Builder
	for i := 0; int64(b.Len()) < maxReadBytes+(1<<20); i++ {
		fmt.Fprintf(&b, `{"prompt":"prompt %d %s"}`+"\n", i, strings.Repeat("x", 200))
	}
	b.WriteString(`{"prompt":"the newest"}` + "\n")
	if err := os.WriteFile(big, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFile(big)
	if err != nil {
		t.Fatal(err)
	}
	if e := s.Entries(); len(e) == 0 || e[len(e)-1] != "the newest" {
		t.Fatalf("the newest prompt was lost: %d entries", len(e))
	}
	if err := s.Add("one more"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(big); err != nil || fi.Size() > 2*DefaultMaxBytes {
		t.Fatalf("the file was not rewritten to its bounds: %v, %v", fi.Size(), err)
	}
}
