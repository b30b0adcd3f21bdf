package openai

import (
	"bytes"
	"errors"
	"io"
)

// sseBufferBytes is the read buffer of the SSE reader: a few hundred
// typical chunks, so one Read of the body serves many events.
const sseBufferBytes = 32 << 10

// errEventLimit is returned by sseReader.next when an event grows past the
// limit; Stream turns it into a response_limit error.
var errEventLimit = errors.New("SSE event exceeds the limit")

// utf8BOM is the byte order mark a stream may start with.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// sseReader reads server-sent events as the WHATWG HTML standard parses
// them (https://html.spec.whatwg.org/multipage/server-sent-events.html,
// "Interpreting an event stream"):
//
//   - one byte order mark at the start of the stream is skipped;
//   - a line ends at "\r\n", "\n" or a lone "\r", in any mix (a "\r" at
//     the end of one Read and a "\n" at the start of the next are one
//     line end);
//   - an empty line dispatches the event; a line of spaces is not empty
//     (it is a field named by its spaces, and ignored);
//   - a line starting with ":" is a comment;
//   - otherwise the line is "name:value" (one space after the colon is
//     removed) or, without a colon, a name with an empty value; the name
//     is taken as it is, so " data: x" is a field named " data";
//   - "data" appends its value to the event's data, the lines of one event
//     joined with "\n"; "event" sets the event's name (empty means
//     "message"); "id" sets the last event id unless the value holds a
//     NUL; "retry" sets the reconnection time when the value is all ASCII
//     digits; other names are ignored. SCV never reconnects (a model's
//     answer cannot be resumed mid-stream), so id and retry are parsed and
//     kept but change nothing;
//   - the end of the stream discards an event that has no empty line
//     after it.
//
// Two rules are SCV's, not the standard's: an event whose data is empty
// or only JSON whitespace is skipped (it holds nothing to decode, and
// its name is dropped with it, as the standard drops an event without
// data), and a data line of "[DONE]" (spaces around it allowed) ends the
// stream at once, dispatching the data before it, even when it is the
// stream's last, unended line: the Chat Completions terminator, which
// some servers send without the empty line after it.
//
// An event's size counts the bytes of its lines, comments and empty lines
// included, without their line ends. No event larger than max is ever
// returned: next fails with errEventLimit as soon as the bytes read show
// the limit is passed, without waiting for the end of the line.
type sseReader struct {
	r   io.Reader
	max int

	buf        []byte // read buffer; buf[start:end] is unread
	start, end int
	// crAt and lfAt are the positions of the next "\r" and "\n" at or
	// after start (end when there is none in the buffer), or below start
	// when unknown: each byte is scanned once for each, even in a stream
	// of short lines that uses only one of them.
	crAt, lfAt int
	rerr       error // the reader's error, once it returned one
	bomChecked bool  // the start of the stream was checked for a BOM
	skipLF     bool  // the last line ended in "\r": a "\n" next belongs to it

	event int    // bytes of the current event so far
	line  []byte // a line longer than what the buffer held, assembled

	name    []byte // the event's name ("event" field)
	data    []byte // data of the current event
	hasData bool   // the current event has a data field
	done    bool   // "data: [DONE]" was read

	lastID []byte // the last event id ("id" field)
	retry  int64  // the reconnection time in ms ("retry" field); -1 unset
}

func newSSEReader(r io.Reader, max int) *sseReader { return newSSEReaderSize(r, max, sseBufferBytes) }

// newSSEReaderSize is newSSEReader with a read buffer of size bytes.
func newSSEReaderSize(r io.Reader, limit, size int) *sseReader {
	return &sseReader{r: r, max: limit, buf: make([]byte, max(size, len(utf8BOM))), retry: -1}
}

// next returns the name (empty for the default, "message") and the data
// of the next event. Both slices are valid until the following call. At
// the end of the stream it returns io.EOF, with done telling whether
// "[DONE]" was read; errEventLimit when an event is too large; or the
// error of the underlying reader.
func (s *sseReader) next() (name, data []byte, err error) {
	for !s.done {
		if s.start == s.end {
			if s.rerr != nil {
				return s.atEOF()
			}
			s.fill()
			continue
		}
		if !s.bomChecked {
			b := s.buf[s.start:s.end]
			if len(b) < len(utf8BOM) && bytes.HasPrefix(utf8BOM, b) && s.rerr == nil {
				s.fill() // too few bytes yet to tell
				continue
			}
			if bytes.HasPrefix(b, utf8BOM) {
				s.consume(len(utf8BOM))
			}
			s.bomChecked = true
			continue
		}
		if s.skipLF {
			s.skipLF = false
			if s.buf[s.start] == '\n' {
				s.consume(1)
				continue
			}
		}
		at := s.lineEnd()
		if at == s.end {
			// No line end in the buffer: keep what it holds of the line
			// and read on, checking the limit on every piece.
			s.line = append(s.line, s.buf[s.start:s.end]...)
			s.consume(s.end - s.start)
			if s.event+len(s.line) > s.max {
				return nil, nil, errEventLimit
			}
			continue
		}
		l := s.buf[s.start:at]
		if len(s.line) > 0 {
			s.line = append(s.line, l...)
			l = s.line
		}
		n := at + 1 - s.start
		if s.buf[at] == '\r' {
			switch {
			case at+1 < s.end && s.buf[at+1] == '\n':
				n++
			case at+1 == s.end:
				s.skipLF = true
			}
		}
		ok, err := s.processLine(l)
		s.consume(n)
		s.line = s.line[:0]
		if err != nil {
			return nil, nil, err
		}
		if ok {
			return s.dispatch()
		}
	}
	return nil, nil, io.EOF
}

// atEOF ends the stream: an unended last line counts only as "[DONE]";
// any other pending event is discarded.
func (s *sseReader) atEOF() (name, data []byte, err error) {
	if len(s.line) > 0 {
		l := s.line
		s.line = nil
		if ok, err := s.processLine(l); err != nil {
			return nil, nil, err
		} else if ok {
			return s.dispatch()
		}
	}
	return nil, nil, s.rerr
}

// fill reads more of the stream into the buffer, moving the unread bytes
// to its start first. A reader that returns neither bytes nor an error
// many times in a row fails with io.ErrNoProgress, as bufio does.
func (s *sseReader) fill() {
	if s.start > 0 {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	}
	// The bytes move and new ones come: find the line ends again.
	s.crAt, s.lfAt = -1, -1
	for range 100 {
		n, err := s.r.Read(s.buf[s.end:])
		if n < 0 || n > len(s.buf)-s.end {
			s.rerr = errors.New("sse: the stream's reader returned an invalid count")
			return
		}
		s.end += n
		if err != nil {
			s.rerr = err
			return
		}
		if n > 0 {
			return
		}
	}
	s.rerr = io.ErrNoProgress
}

// consume advances past n bytes.
func (s *sseReader) consume(n int) { s.start += n }

// lineEnd returns the position of the first "\r" or "\n" in the unread
// bytes, or end when there is none.
func (s *sseReader) lineEnd() int {
	if s.crAt < s.start {
		s.crAt = s.start + indexOr(s.buf[s.start:s.end], '\r')
	}
	if s.lfAt < s.start {
		s.lfAt = s.start + indexOr(s.buf[s.start:s.end], '\n')
	}
	return min(s.crAt, s.lfAt)
}

// indexOr is bytes.IndexByte, with len(b) for "not found".
func indexOr(b []byte, c byte) int {
	if i := bytes.IndexByte(b, c); i >= 0 {
		return i
	}
	return len(b)
}

// processLine handles one line, without its line end, and reports
// whether it ended an event that has data to return.
func (s *sseReader) processLine(l []byte) (ok bool, err error) {
	s.event += len(l)
	if s.event > s.max {
		return false, errEventLimit
	}
	if len(l) == 0 {
		s.event = 0
		return s.pending(), nil
	}
	if l[0] == ':' {
		return false, nil
	}
	field, value := l, l[len(l):]
	if i := bytes.IndexByte(l, ':'); i >= 0 {
		field, value = l[:i], l[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		if isDone(value) {
			s.done = true
			return s.pending(), nil
		}
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	case "event":
		s.name = append(s.name[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			s.lastID = append(s.lastID[:0], value...)
		}
	case "retry":
		if n, ok := digits(value); ok {
			s.retry = n
		}
	}
	return false, nil
}

// pending reports whether the event being ended has data worth returning;
// when it has not, the event is reset here.
func (s *sseReader) pending() bool {
	if s.hasData && !isJSONSpace(s.data) {
		return true
	}
	s.reset()
	return false
}

// dispatch returns the ended event and starts the next one. The returned
// slices keep their bytes until the following call of next.
func (s *sseReader) dispatch() (name, data []byte, err error) {
	name, data = s.name, s.data
	s.reset()
	return name, data, nil
}

func (s *sseReader) reset() {
	s.name, s.data, s.hasData = s.name[:0], s.data[:0], false
}

// digits parses a "retry" value: ASCII digits only, saturating.
func digits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = min(n*10+int64(c-'0'), 1<<53)
	}
	return n, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// isJSONSpace reports whether b is empty or only JSON whitespace.
func isJSONSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

func isDone(value []byte) bool { return string(trimSpace(value)) == "[DONE]" }
