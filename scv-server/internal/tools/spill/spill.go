// Package spill is the one way a tool bounds the output the model reads:
// the head and the tail within the limit with "[… N bytes omitted …]"
// between them and a truncation line, and the whole output copied (up to a
// bound) to a file in the session's spill directory, where the read tool
// can open it. The bash tool (streaming a command's output) and the MCP
// tools (a result already in memory) both render through it, so the
// model reads one format and a session keeps a bounded number of files.
package spill

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/scv-cli/scv/shared/textcut"
)

// MaxFiles is how many spill files of one tool (one file name prefix) a
// session keeps; older ones are removed when a new one is made.
const MaxFiles = 8

// File is a bounded copy of a call's whole output.
type File struct {
	// Path is where the copy is.
	Path string
	// Written counts the bytes in the file.
	Written int64
	// Cut reports that writing stopped at the bound.
	Cut bool
	// Err is the first failure; writing stops at it.
	Err error

	f   *os.File
	max int64
}

// Open creates the file at path (mode 0600, its directory 0700), first
// removing the oldest files of its directory with the same prefix (the
// name up to its first '-', such as "bash-") so that at most MaxFiles
// remain with it. At most max bytes are kept. A failure is kept in Err:
// writing to the file does nothing then, and Note says why.
func Open(path string, max int64) *File {
	s := &File{Path: path, max: max}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.Err = err
		return s
	}
	Prune(dir, prefix(filepath.Base(path)), MaxFiles-1)
	s.f, s.Err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	return s
}

func prefix(name string) string {
	if i := strings.IndexByte(name, '-'); i >= 0 {
		return name[:i+1]
	}
	return name
}

// Write appends p, up to the bound.
func (s *File) Write(p []byte) {
	if s.Err != nil || s.f == nil || len(p) == 0 {
		return
	}
	if room := s.max - s.Written; int64(len(p)) > room {
		p = p[:max(room, 0)]
		s.Cut = true
	}
	if len(p) == 0 {
		return
	}
	n, err := s.f.Write(p)
	s.Written += int64(n)
	if err != nil {
		s.Err = err
	}
}

// Close closes the file; it may be called more than once.
func (s *File) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	if s.Err == nil {
		s.Err = err
	}
	return err
}

// Discard closes and removes the file (of a call whose result nobody
// reads).
func (s *File) Discard() {
	_ = s.Close()
	_ = os.Remove(s.Path)
}

// Prune removes the oldest regular files of dir whose names start with
// prefix so that at most keep remain.
func Prune(dir, prefix string, keep int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		mod  int64
	}
	var files []file
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		if info, err := e.Info(); err == nil {
			files = append(files, file{e.Name(), info.ModTime().UnixNano()})
		}
	}
	if len(files) <= keep {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.mod, b.mod) })
	for _, f := range files[:len(files)-keep] {
		_ = os.Remove(filepath.Join(dir, f.name))
	}
}

// Note is the line that tells the model where the whole output of total
// bytes is: in s, or, when s is nil, nowhere, with notKept saying what to
// do instead.
func Note(s *File, total int64, notKept string) string {
	switch {
	case s == nil:
		return notKept
	case s.Err != nil:
		return fmt.Sprintf("[the full output could not be kept in %s: %v]", s.Path, s.Err)
	}
	n := fmt.Sprintf("[the full output is in %s; read it with the read tool (that path, with offset and limit), or search it with bash, for example grep -n PATTERN %s]",
		s.Path, s.Path)
	if s.Cut {
		n += fmt.Sprintf("\n[the file holds only the first %d of the %d bytes (tools.spill_max_bytes)]", s.Written, total)
	}
	return n
}

// Truncated is an output that does not fit its limit.
type Truncated struct {
	// Head is what comes before the output (the bash tool's status line,
	// ending in a line break), or "".
	Head string
	// First and Last are the output's first and last bytes as kept (the
	// same slice when the whole output is in memory); they are made valid
	// UTF-8.
	First, Last []byte
	// Total is the output's length in bytes.
	Total int64
	// Notes follow the truncation line and the spill note (Note).
	SpillNote string
	Notes     []string
}

// Render fits t into limit bytes: Head, as much of the start of First and
// the end of Last as fits with the omitted-bytes marker between them, the
// truncation line, the spill note and the notes, each on its own line.
func (t Truncated) Render(limit int) string {
	// The truncation line's numbers are not known before fitting; reserve
	// room for the widest.
	meta := func(kept, h, tl int) string {
		return fmt.Sprintf("[output truncated: %d bytes in total, %d kept: the first %d and the last %d]", t.Total, kept, h, tl)
	}
	tailNotes := append([]string{meta(limit, limit, limit), t.SpillNote}, t.Notes...)
	// The 1 is the line break Join puts after a tail without one.
	budget := limit - len(Join(t.Head, "\n"+omittedMarker(t.Total)+"\n", tailNotes)) - 1
	budget = max(budget, 0)
	hb := budget / 2
	hs, hn := fitPrefix(t.First, hb)
	ts, tn := fitSuffix(t.Last, budget-len(hs))
	if len(ts) < budget-hb {
		// The tail needed less: give the head the rest.
		hs, hn = fitPrefix(t.First, budget-len(ts))
	}
	tailNotes[0] = meta(hn+tn, hn, tn)
	body := hs + "\n" + omittedMarker(t.Total-int64(hn+tn)) + "\n" + ts
	out := Join(t.Head, body, tailNotes)
	if len(out) > limit {
		// Notes alone too long for the limit: a cut result still says
		// where the output is, as far as it fits.
		out = textcut.Prefix(out, limit)
	}
	return out
}

// Join is head, body, then each note on a line of its own.
func Join(head, body string, notes []string) string {
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(body)
	for _, n := range notes {
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(n)
	}
	return b.String()
}

// Valid is b as valid UTF-8.
func Valid(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// alignSuffix returns start, or more so that b[start:] does not begin
// inside a multi-byte character.
func alignSuffix(b []byte, start int) int {
	return len(b) - len(textcut.TrimPartialStart(b[start:]))
}

// fitPrefix returns the longest prefix of b whose valid UTF-8 form fits
// budget bytes, in that form, and its length in b.
func fitPrefix(b []byte, budget int) (string, int) {
	if s := Valid(b); len(s) <= budget {
		return s, len(b)
	}
	// The form's length grows with the prefix: search for the longest.
	lo, hi := 0, len(b)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(Valid(b[:mid])) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	kept := textcut.TrimPartialEnd(b[:lo])
	return Valid(kept), len(kept)
}

// fitSuffix is fitPrefix for the end of b.
func fitSuffix(b []byte, budget int) (string, int) {
	start := alignSuffix(b, 0)
	if s := Valid(b[start:]); len(s) <= budget {
		return s, len(b) - start
	}
	lo, hi := 0, len(b)-start // lo: a length that fits
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(Valid(b[len(b)-mid:])) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	s := alignSuffix(b, len(b)-lo)
	return Valid(b[s:]), len(b) - s
}

// omittedMarker is the line between the head and the tail.
func omittedMarker(n int64) string { return fmt.Sprintf("[… %d bytes omitted …]", n) }

// Text bounds an output already in memory (a result, not a stream) to
// limit bytes: text itself when it fits, else the rendering of Truncated
// with the whole text kept in a file at path (up to maxFile bytes) when
// path is not "" and maxFile > 0. It reports whether text was cut.
func Text(text string, limit int, path string, maxFile int64, notKept string) (string, bool) {
	if limit <= 0 || len(text) <= limit {
		return text, false
	}
	var f *File
	if path != "" && maxFile > 0 {
		f = Open(path, maxFile)
		f.Write([]byte(text))
		_ = f.Close()
	}
	b := []byte(text)
	t := Truncated{First: b, Last: b, Total: int64(len(b)), SpillNote: Note(f, int64(len(b)), notKept)}
	return t.Render(limit), true
}
