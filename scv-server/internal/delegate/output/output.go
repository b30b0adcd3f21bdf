// Package output reads a delegated agent CLI's stdout as it arrives and
// keeps only what the result needs (tools.md, "Results" and "Progress"):
// the reply, token usage, a reported error, a refusal, the CLI's session
// id, and short redacted progress lines. It understands Claude Code's
// stream-json, Codex's `exec --json`, pi's `--mode json` and plain text.
//
// A Parser is an io.Writer fed with raw stdout (procgroup's Output). It
// splits lines itself with bounded memory: a line over MaxLine is skipped
// without being buffered whole, and the reply and the plain-text fallback
// are bounded by the output limit, so a long run's event log costs
// constant memory. Unknown events and fields are ignored; a structured
// stream that carried no JSON at all falls back to its text.
package output

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/tidwall/gjson"

	"github.com/scv-cli/scv/shared/textcut"
)

// MaxLine bounds one line of a structured stream; longer lines are
// skipped.
const MaxLine = 4 << 20

// DefaultLimit bounds the reply when Options.Limit is not positive.
const DefaultLimit = 64 << 10

// closingBytes bounds the closing output of a plain-text run kept for a
// failed run's error.
const closingBytes = 2 << 10

// Options configure a Parser.
type Options struct {
	// Limit bounds the reply in bytes (tools.output_limit_bytes); the
	// reply is cut on a character boundary and Truncated set.
	Limit int
	// Progress, when set, receives redacted status lines as events
	// arrive, from the goroutine that calls Write.
	Progress func(line string)
}

// Result is what a stream told.
type Result struct {
	// Reply is the agent's final answer, bounded by the limit.
	Reply string
	// Truncated is set when the reply was cut.
	Truncated bool
	// Usage is the reported token usage, nil when none was reported.
	Usage *delegate.Usage
	// Failed is set when the stream reported a failure; Error then holds
	// what the CLI reported (never the model's reply).
	Failed bool
	Error  string
	// Declined is set when the model stopped with a refusal.
	Declined bool
	// CLISession is the session or thread id the stream reported.
	CLISession string
	// Structured is set when at least one JSON event was read; a
	// structured format without it fell back to the text.
	Structured bool
	// ClosingOutput is the end of a plain-text stream (at most 2 KiB),
	// the error of a failed plain-text run.
	ClosingOutput string
	// SkippedLines counts lines over MaxLine.
	SkippedLines int
}

// handler interprets the lines of one structured format.
type handler interface {
	// wants reports whether line acts on events of type typ; other
	// events are not validated (the bulk of a log is tool results).
	wants(typ string) bool
	// line handles one complete, valid JSON line (a top-level object) of
	// type typ.
	line(p *Parser, l []byte, typ string)
	// finish fills the result at the end of the stream.
	finish(p *Parser, r *Result)
}

// Parser reads one run's stdout. It is not safe for concurrent use.
type Parser struct {
	format   adapters.Format
	h        handler
	limit    int
	progress func(string)

	buf      []byte // a partial line
	skipping bool   // inside a line over MaxLine

	// text collects raw stdout for a plain-text reply, or as the fallback
	// of a structured stream until its first JSON line; bounded by limit.
	text          []byte
	textTruncated bool
	collectText   bool
	closing       Tail

	res Result
}

// New returns a Parser for format. An unknown format reads as text.
func New(format adapters.Format, opts Options) *Parser {
	p := &Parser{format: format, limit: opts.Limit, progress: opts.Progress, collectText: true}
	if p.limit <= 0 {
		p.limit = DefaultLimit
	}
	p.closing.Max = closingBytes
	switch format {
	case adapters.FormatStreamJSON:
		p.h = &claude{}
	case adapters.FormatCodexJSON:
		p.h = &codex{}
	case adapters.FormatPiJSON:
		p.h = &pi{}
	}
	return p
}

// Write consumes stdout; it never fails.
func (p *Parser) Write(b []byte) (int, error) {
	n := len(b)
	if p.collectText {
		p.addText(b)
	}
	if p.h == nil {
		_, _ = p.closing.Write(b)
		return n, nil
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.partial(b)
			break
		}
		chunk := b[:i]
		b = b[i+1:]
		switch {
		case p.skipping:
			p.skipping = false
		case len(p.buf) > 0:
			if len(p.buf)+len(chunk) > MaxLine {
				p.res.SkippedLines++
			} else {
				p.buf = append(p.buf, chunk...)
				p.handle(p.buf)
			}
			p.buf = p.buf[:0]
		case len(chunk) > MaxLine:
			p.res.SkippedLines++
		default:
			p.handle(chunk)
		}
	}
	// Keep a large line's buffer from pinning memory between lines.
	if len(p.buf) == 0 && cap(p.buf) > 64<<10 {
		p.buf = nil
	}
	return n, nil
}

// partial buffers the start of a line, or starts skipping it once it is
// over MaxLine.
func (p *Parser) partial(b []byte) {
	if p.skipping {
		return
	}
	if len(p.buf)+len(b) > MaxLine {
		p.buf = nil
		p.skipping = true
		p.res.SkippedLines++
		return
	}
	p.buf = append(p.buf, b...)
}

func (p *Parser) handle(l []byte) {
	l = bytes.TrimSpace(l)
	if len(l) < 2 || l[0] != '{' {
		return
	}
	typ := gjson.GetBytes(l, "type").String()
	if !p.h.wants(typ) {
		// Validated only until the stream is known to be structured.
		if !p.res.Structured && gjson.ValidBytes(l) {
			p.structured()
		}
		return
	}
	if !gjson.ValidBytes(l) {
		return
	}
	p.structured()
	p.h.line(p, l, typ)
}

func (p *Parser) structured() {
	if !p.res.Structured {
		p.res.Structured = true
		// The stream is structured: its text is no longer a reply.
		p.collectText, p.text, p.textTruncated = false, nil, false
	}
}

func (p *Parser) addText(b []byte) {
	room := max(p.limit-len(p.text), 0)
	if len(b) > room {
		// Only dropping more than trailing white space cuts the reply.
		if len(bytes.TrimSpace(b[room:])) > 0 {
			p.textTruncated = true
		}
		b = b[:room]
	}
	p.text = append(p.text, b...)
}

// Close ends the stream (a last line without a newline is handled) and
// returns the result.
func (p *Parser) Close() Result {
	if p.h != nil && len(p.buf) > 0 && !p.skipping {
		p.handle(p.buf)
	}
	p.buf = nil
	r := p.res
	if p.h != nil && r.Structured {
		p.h.finish(p, &r)
	} else {
		// Plain text, or a structured stream without JSON: stdout is the
		// reply.
		r.Reply, r.Truncated = Bound(strings.TrimRight(string(p.text), " \t\r\n"), p.limit)
		r.Truncated = r.Truncated || p.textTruncated
		if p.textTruncated {
			// The head was cut mid-rune possibly; Bound already trimmed a
			// partial rune at its end only when over the limit.
			r.Reply = trimPartialRune(r.Reply)
		}
		r.ClosingOutput = strings.TrimSpace(p.closing.String())
		if p.h != nil {
			r.ClosingOutput = strings.TrimSpace(r.Reply)
			if len(r.ClosingOutput) > closingBytes {
				r.ClosingOutput = textcut.Suffix(r.ClosingOutput, closingBytes)
			}
		}
	}
	return r
}

func (p *Parser) emit(line string) {
	if p.progress == nil {
		return
	}
	if line = Redact(line); line != "" {
		p.progress(line)
	}
}

// setReply sets the reply bounded by the limit.
func (p *Parser) setReply(r *Result, reply string) {
	r.Reply, r.Truncated = Bound(reply, p.limit)
}

// Bound cuts s to at most limit bytes on a character boundary, reporting
// whether it cut; invalid UTF-8 is replaced.
func Bound(s string, limit int) (string, bool) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if limit <= 0 || len(s) <= limit {
		return s, false
	}
	return textcut.Prefix(s, limit), true
}

func trimPartialRune(s string) string {
	// ToValidUTF8 in Bound turned a cut rune into U+FFFD at the end;
	// drop it.
	return strings.TrimSuffix(s, "\uFFFD")
}

// Tail is an io.Writer that keeps the last Max bytes written (a stderr
// tail), in constant memory.
type Tail struct {
	// Max is the number of bytes kept; zero keeps 2 KiB.
	Max   int
	buf   []byte
	start int // ring start once full
	full  bool
	total int64
}

// Write keeps the end of b; it never fails.
func (t *Tail) Write(b []byte) (int, error) {
	n := len(b)
	t.total += int64(n)
	max := t.Max
	if max <= 0 {
		max = 2 << 10
	}
	if len(b) >= max {
		t.buf = append(t.buf[:0], b[len(b)-max:]...)
		t.start, t.full = 0, true
		return n, nil
	}
	if !t.full {
		if len(t.buf)+len(b) <= max {
			t.buf = append(t.buf, b...)
			t.full = len(t.buf) == max
			return n, nil
		}
		// Fill up to max, then wrap.
		k := max - len(t.buf)
		t.buf = append(t.buf, b[:k]...)
		b = b[k:]
		t.full, t.start = true, 0
	}
	for len(b) > 0 {
		k := copy(t.buf[t.start:], b)
		b = b[k:]
		t.start = (t.start + k) % max
	}
	return n, nil
}

// Bytes returns the kept bytes in order.
func (t *Tail) Bytes() []byte {
	if !t.full || t.start == 0 {
		return append([]byte(nil), t.buf...)
	}
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.start:]...)
	return append(out, t.buf[:t.start]...)
}

// String returns the kept text, starting on a character boundary and with
// invalid UTF-8 replaced.
func (t *Tail) String() string {
	b := t.Bytes()
	if t.Total() > int64(len(b)) {
		// The first bytes may be the end of a cut character.
		b = textcut.TrimPartialStart(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Total is the number of bytes written.
func (t *Tail) Total() int64 { return t.total }
