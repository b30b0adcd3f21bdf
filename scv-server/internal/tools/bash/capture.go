package bash

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/tools/spill"
	"github.com/scv-cli/scv/shared/textcut"
)

// progressMax bounds a progress line, in bytes.
const progressMax = 200

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
	spill     *spill.File

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
		c.spill.Write(p)
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
	c.spill = spill.Open(c.spillPath, c.spillMax)
	for _, p := range parts {
		c.spill.Write(p)
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
	return c.spill.Close()
}

// discard removes the spill file (of a call whose result nobody reads).
func (c *capture) discard() {
	if c.spill != nil {
		c.spill.Discard()
	}
}
