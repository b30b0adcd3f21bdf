package openai

import (
	"bufio"
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

// sseReader reads the data of server-sent events
// (https://html.spec.whatwg.org/multipage/server-sent-events.html):
//
//   - lines end in "\n" or "\r\n" (a lone "\r" is part of the line, as
//     Chat Completions servers never use it as a terminator);
//   - a blank line (or one of spaces and tabs only) ends an event;
//   - lines starting with ":" are comments; "event:", "id:", "retry:" and
//     unknown fields are ignored;
//   - "data:" takes the rest of the line, less one leading space; the data
//     lines of one event are joined with "\n";
//   - a data line of "[DONE]" (spaces around it allowed) ends the stream at
//     once, without waiting for the blank line;
//   - leading spaces and tabs before a field name are ignored, as
//     go-openai did;
//   - an event whose data is empty or blank is skipped; one cut by the end
//     of the stream (no blank line after it) is discarded, as the SSE
//     spec says.
//
// An event's size counts the bytes of its lines, comments and blank lines
// included, without their "\n" or "\r\n" terminators. No event larger than
// max is ever returned: next fails with errEventLimit as soon as the bytes
// read show the limit is passed, without waiting for the end of the line.
type sseReader struct {
	r   *bufio.Reader
	max int

	event   int    // bytes of the current event so far
	line    []byte // a line longer than the read buffer, assembled
	long    bool   // line holds the start of the current line
	data    []byte // data of the current event
	hasData bool   // the current event has a data field
	done    bool   // "data: [DONE]" was read
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, sseBufferBytes), max: max}
}

// next returns the data of the next event. The slice is valid until the
// following call. At the end of the stream it returns io.EOF, with done
// telling whether "[DONE]" was read; errEventLimit when an event is too
// large; or the error of the underlying reader.
func (s *sseReader) next() ([]byte, error) {
	for {
		if s.done {
			return nil, io.EOF
		}
		seg, err := s.r.ReadSlice('\n')
		if err == bufio.ErrBufferFull || s.long {
			// A line longer than the buffer: assemble it, checking the
			// limit on every piece.
			s.line = append(s.line, seg...)
			s.long = true
			if n := len(s.line); err == bufio.ErrBufferFull && s.event+n > s.max &&
				(s.line[n-1] != '\r' || s.event+n-1 > s.max) {
				// A "\r" that may yet turn out to end the line is not
				// counted.
				return nil, errEventLimit
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			seg = s.line
		}
		if len(seg) > 0 {
			data, ok, lerr := s.processLine(seg)
			s.line, s.long = s.line[:0], false
			if lerr != nil {
				return nil, lerr
			}
			if ok {
				return data, nil
			}
		}
		if err != nil {
			// At the end of the stream, an event without its blank line
			// is discarded.
			return nil, err
		}
	}
}

// processLine handles one line, terminator included when there is one,
// and reports whether it completed an event with data.
func (s *sseReader) processLine(l []byte) (data []byte, ok bool, err error) {
	if n := len(l); n > 0 && l[n-1] == '\n' {
		l = l[:n-1]
	}
	if n := len(l); n > 0 && l[n-1] == '\r' {
		l = l[:n-1]
	}
	s.event += len(l)
	if s.event > s.max {
		return nil, false, errEventLimit
	}
	l = trimLeftSpace(l)
	if len(l) == 0 {
		s.event = 0
		return s.dispatch()
	}
	if l[0] == ':' {
		return nil, false, nil
	}
	name, value := l, l[len(l):]
	if i := bytes.IndexByte(l, ':'); i >= 0 {
		name, value = l[:i], l[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	if string(name) != "data" {
		return nil, false, nil
	}
	if isDone(value) {
		s.done = true
		return s.dispatch()
	}
	if s.hasData {
		s.data = append(s.data, '\n')
	}
	s.data = append(s.data, value...)
	s.hasData = true
	return nil, false, nil
}

// dispatch ends the current event, returning its data unless it has none.
func (s *sseReader) dispatch() ([]byte, bool, error) {
	data, has := s.data, s.hasData
	s.data, s.hasData = s.data[:0], false
	if !has || isJSONSpace(data) {
		return nil, false, nil
	}
	return data, true, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }

func trimLeftSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	return b
}

func trimSpace(b []byte) []byte {
	b = trimLeftSpace(b)
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
