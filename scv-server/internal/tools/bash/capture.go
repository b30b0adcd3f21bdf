package bash

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/scv-cli/scv/shared/textcut"
)

// progressMax bounds a progress line, in bytes.
const progressMax = 200

// maxSpillFiles is how many spill files a session keeps; older ones are
// removed when a new one is made.
const maxSpillFiles = 8

// capture is the Output of a run. It keeps the head and the tail of the
// stream within headCap+tailCap bytes, counts every byte, copies the whole
// stream (up to spillMax bytes) to a spill file once it no longer fits,
// and reports the latest complete line to onLine. Only the run's reader
// goroutine calls Write; the rest is read after the run.
type capture struct {
	headCap, tailCap int
	head             []byte
	ring             []byte // tailCap bytes once used
	rpos, rlen       int    // next write position and length in ring
	total            int64
	overflowed       bool // bytes were dropped from memory

	spillPath string // "" means no spill
	spillMax  int64
	spill     *spillFile

	onLine func(string)
	line   []byte // the start of the current line, at most progressMax+utf8.UTFMax bytes
}

func newCapture(keep int, spillPath string, spillMax int64) *capture {
	if keep < 2 {
		keep = 2
	}
	return &capture{headCap: keep / 2, tailCap: keep - keep/2, spillPath: spillPath, spillMax: spillMax}
}

func (c *capture) Write(p []byte) (int, error) {
	n := len(p)
	if c.onLine != nil {
		c.lines(p)
	}
	if !c.overflowed && c.total+int64(n) > int64(c.headCap+c.tailCap) {
		// Everything so far is still in memory: the spill file starts
		// with it.
		c.overflowed = true
		c.startSpill(c.head, c.tail())
	}
	c.total += int64(n)
	if c.spill != nil {
		c.spill.write(p)
	}
	if k := min(len(p), c.headCap-len(c.head)); k > 0 {
		if c.head == nil {
			c.head = make([]byte, 0, c.headCap)
		}
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	c.ringWrite(p)
	return n, nil
}

func (c *capture) ringWrite(p []byte) {
	if len(p) == 0 || c.tailCap == 0 {
		return
	}
	if c.ring == nil {
		c.ring = make([]byte, c.tailCap)
	}
	if len(p) >= c.tailCap {
		copy(c.ring, p[len(p)-c.tailCap:])
		c.rpos, c.rlen = 0, c.tailCap
		return
	}
	k := copy(c.ring[c.rpos:], p)
	copy(c.ring, p[k:])
	c.rpos = (c.rpos + len(p)) % c.tailCap
	c.rlen = min(c.rlen+len(p), c.tailCap)
}

// tail returns the ring's bytes in order.
func (c *capture) tail() []byte {
	if c.rlen == 0 {
		return nil
	}
	start := (c.rpos - c.rlen + c.tailCap) % c.tailCap
	if start+c.rlen <= c.tailCap {
		return c.ring[start : start+c.rlen]
	}
	out := make([]byte, 0, c.rlen)
	out = append(out, c.ring[start:]...)
	return append(out, c.ring[:c.rpos]...)
}

// lines tracks the current line and reports each complete one.
func (c *capture) lines(p []byte) {
	i := bytes.LastIndexByte(p, '\n')
	if i < 0 {
		c.addLine(p)
		return
	}
	if j := bytes.LastIndexByte(p[:i], '\n'); j >= 0 {
		c.line = c.line[:0]
		c.addLine(p[j+1 : i])
	} else {
		c.addLine(p[:i])
	}
	if s := progressLine(c.line); s != "" {
		c.onLine(s)
	}
	c.line = c.line[:0]
	c.addLine(p[i+1:])
}

func (c *capture) addLine(p []byte) {
	if room := progressMax + utf8.UTFMax - len(c.line); room > 0 {
		c.line = append(c.line, p[:min(len(p), room)]...)
	}
}

// progressLine makes a line fit for tool.progress: what a carriage return
// left visible, at most progressMax bytes of valid UTF-8, or "" for a
// blank line.
func progressLine(b []byte) string {
	b = bytes.TrimRight(b, "\r")
	if i := bytes.LastIndexByte(b, '\r'); i >= 0 {
		b = b[i+1:]
	}
	b = textcut.Prefix(b, progressMax)
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

func (c *capture) startSpill(parts ...[]byte) {
	if c.spillPath == "" || c.spillMax <= 0 || c.spill != nil {
		return
	}
	c.spill = openSpill(c.spillPath, c.spillMax)
	for _, p := range parts {
		c.spill.write(p)
	}
}

// memory returns the whole stream when it is still all in memory.
func (c *capture) memory() ([]byte, bool) {
	if c.overflowed {
		return nil, false
	}
	return append(append([]byte(nil), c.head...), c.tail()...), true
}

func (c *capture) close() error {
	if c.spill == nil {
		return nil
	}
	return c.spill.close()
}

// discard removes the spill file (of a call whose result nobody reads).
func (c *capture) discard() {
	if c.spill != nil {
		_ = c.spill.close()
		_ = os.Remove(c.spill.path)
	}
}

// spillFile is a bounded copy of a call's whole output.
type spillFile struct {
	path    string
	f       *os.File
	max     int64
	written int64
	cut     bool  // stopped at max
	err     error // the first failure; writing stops
}

func openSpill(path string, max int64) *spillFile {
	s := &spillFile{path: path, max: max}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.err = err
		return s
	}
	pruneSpills(dir, maxSpillFiles-1)
	s.f, s.err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	return s
}

func (s *spillFile) write(p []byte) {
	if s.err != nil || s.f == nil || len(p) == 0 {
		return
	}
	if room := s.max - s.written; int64(len(p)) > room {
		p = p[:room]
		s.cut = true
	}
	if len(p) == 0 {
		return
	}
	n, err := s.f.Write(p)
	s.written += int64(n)
	if err != nil {
		s.err = err
	}
}

func (s *spillFile) close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	if s.err == nil {
		s.err = err
	}
	return err
}

// pruneSpills removes the oldest spill files of dir so that at most keep
// remain.
func pruneSpills(dir string, keep int) {
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
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), "bash-") {
			continue
		}
		if info, err := e.Info(); err == nil {
			files = append(files, file{e.Name(), info.ModTime().UnixNano()})
		}
	}
	if len(files) <= keep {
		return
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod < files[j].mod })
	for _, f := range files[:len(files)-keep] {
		_ = os.Remove(filepath.Join(dir, f.name))
	}
}

// valid is b as valid UTF-8.
func valid(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// alignSuffix returns start, or more so that b[start:] does not begin
// inside a multi-byte character.
func alignSuffix(b []byte, start int) int {
	return len(b) - len(textcut.TrimPartialStart(b[start:]))
}

// fitPrefix returns the longest prefix of b whose valid UTF-8 form fits
// budget bytes, in that form, and its length in b.
func fitPrefix(b []byte, budget int) (string, int) {
	if s := valid(b); len(s) <= budget {
		return s, len(b)
	}
	// The form's length grows with the prefix: search for the longest.
	lo, hi := 0, len(b)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(valid(b[:mid])) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	kept := textcut.TrimPartialEnd(b[:lo])
	return valid(kept), len(kept)
}

// fitSuffix is fitPrefix for the end of b.
func fitSuffix(b []byte, budget int) (string, int) {
	start := alignSuffix(b, 0)
	if s := valid(b[start:]); len(s) <= budget {
		return s, len(b) - start
	}
	lo, hi := 0, len(b)-start // lo: a length that fits
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(valid(b[len(b)-mid:])) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	s := alignSuffix(b, len(b)-lo)
	return valid(b[s:]), len(b) - s
}

// omittedMarker is the line between the head and the tail.
func omittedMarker(n int64) string { return fmt.Sprintf("[… %d bytes omitted …]", n) }
