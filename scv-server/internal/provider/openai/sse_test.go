package openai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// readSSE runs an sseReader over in with a read buffer of bufSize bytes
// (one byte per Read when oneByte), and returns the events' data, whether
// [DONE] was read, and the error that ended it.
func readSSE(in []byte, max, bufSize int, oneByte bool) (events []string, done bool, err error) {
	var r io.Reader = bytes.NewReader(in)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	s := &sseReader{r: bufio.NewReaderSize(r, bufSize), max: max}
	for {
		data, err := s.next()
		if err != nil {
			return events, s.done, err
		}
		events = append(events, string(data))
	}
}

// refSSE is the same reader written the obvious way, on the whole input.
func refSSE(in []byte, max int) (events []string, done bool, err error) {
	var data []byte
	has := false
	event := 0
	dispatch := func() {
		if has && !isJSONSpace(data) {
			events = append(events, string(data))
		}
		data, has = nil, false
	}
	for len(in) > 0 {
		l, rest, _ := bytes.Cut(in, []byte("\n"))
		in = rest
		l = bytes.TrimSuffix(l, []byte("\r"))
		if event += len(l); event > max {
			return events, false, errEventLimit
		}
		l = bytes.TrimLeft(l, " \t\r")
		switch {
		case len(l) == 0:
			event = 0
			dispatch()
			continue
		case l[0] == ':':
			continue
		}
		name, value, found := bytes.Cut(l, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		if string(name) != "data" {
			continue
		}
		if string(bytes.Trim(value, " \t\r")) == "[DONE]" {
			dispatch()
			return events, true, io.EOF
		}
		if has {
			data = append(data, '\n')
		}
		data = append(data, value...)
		has = true
	}
	return events, false, io.EOF
}

func TestSSE(t *testing.T) {
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name   string
		in     string
		max    int
		events []string
		done   bool
		err    error
	}{
		{"lf", "data: a\n\ndata: b\n\ndata: [DONE]\n\n", 0, []string{"a", "b"}, true, io.EOF},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\ndata: [DONE]\r\n\r\n", 0, []string{"a", "b"}, true, io.EOF},
		{"no space after colon", "data:a\n\ndata:[DONE]\n\n", 0, []string{"a"}, true, io.EOF},
		{"only one space is removed", "data:  a \n\n", 0, []string{" a "}, false, io.EOF},
		{"comments and fields ignored", ": keep-alive\nevent: message\nid: 7\nretry: 10\nfoo\ndata: a\n\n", 0, []string{"a"}, false, io.EOF},
		{"multi-line data", "data: {\"a\":\ndata: 1}\n\n", 0, []string{"{\"a\":\n1}"}, false, io.EOF},
		{"data without colon", "data\ndata:x\n\n", 0, []string{"\nx"}, false, io.EOF},
		{"empty data skipped", "data:\n\ndata: \n\ndata: a\n\n", 0, []string{"a"}, false, io.EOF},
		{"blank line of spaces", "data: a\n \t\ndata: b\n\n", 0, []string{"a", "b"}, false, io.EOF},
		{"leading spaces before the field", "  data: a\n\n", 0, []string{"a"}, false, io.EOF},
		{"lone CR is part of the line", "data: a\rb\n\n", 0, []string{"a\rb"}, false, io.EOF},
		{"done ends at once", "data: a\n\n data: [DONE] \ndata: b\n\n", 0, []string{"a"}, true, io.EOF},
		{"done after data in one event", "data: a\ndata: [DONE]\n", 0, []string{"a"}, true, io.EOF},
		{"done without final newline", "data: a\n\ndata: [DONE]", 0, []string{"a"}, true, io.EOF},
		{"event cut by EOF is discarded", "data: a\n\ndata: b\n", 0, []string{"a"}, false, io.EOF},
		{"long lines", "data: " + long + "\n\n: " + long + "\n\ndata: [DONE]\n", 0, []string{long}, true, io.EOF},
		{"event at the limit", "data: 0123\r\n: 56\r\n\r\n", 14, []string{"0123"}, false, io.EOF},
		{"event past the limit", "data: 0123\r\n: 567\r\n\r\n", 14, nil, false, errEventLimit},
		{"limit counts every line of an event", "data: 01\n: x\ndata: 2\n\n", 14, nil, false, errEventLimit},
		{"limit on a line without end", "data: " + long, 50, nil, false, errEventLimit},
		{"limit resets per event", "data: 0123456\n\ndata: 0123456\n\n", 14, []string{"0123456", "0123456"}, false, io.EOF},
		{"events before the limit are read", "data: a\n\ndata: " + long + "\n\n", 50, []string{"a"}, false, errEventLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := tc.max
			if max == 0 {
				max = 1 << 20
			}
			for _, bufSize := range []int{16, 4096} {
				for _, oneByte := range []bool{false, true} {
					events, done, err := readSSE([]byte(tc.in), max, bufSize, oneByte)
					if !slices.Equal(events, tc.events) || done != tc.done || err != tc.err {
						t.Errorf("buffer %d, one byte %v: events %q done %v err %v; want %q %v %v",
							bufSize, oneByte, events, done, err, tc.events, tc.done, tc.err)
					}
				}
			}
			events, done, err := refSSE([]byte(tc.in), max)
			if !slices.Equal(events, tc.events) || done != tc.done || err != tc.err {
				t.Errorf("reference: events %q done %v err %v", events, done, err)
			}
		})
	}
}

// FuzzSSE checks the SSE reader never panics, never returns an event larger
// than its limit, and agrees with refSSE whatever the read sizes.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[]}\n\ndata: [DONE]\n\n"), uint16(64))
	f.Add([]byte(": ping\r\n\r\nevent: x\r\ndata:a\r\ndata: b\r\n\r\n"), uint16(0x8000|20))
	f.Fuzz(func(t *testing.T, in []byte, limit uint16) {
		max := int(limit&0x1ff) + 1
		oneByte := limit&0x8000 != 0
		events, done, err := readSSE(in, max, 16, oneByte)
		if err != io.EOF && !errors.Is(err, errEventLimit) {
			t.Fatalf("error %v", err)
		}
		for _, e := range events {
			if len(e) > max {
				t.Fatalf("event of %d bytes, limit %d", len(e), max)
			}
		}
		wevents, wdone, werr := refSSE(in, max)
		if !slices.Equal(events, wevents) || done != wdone || err != werr {
			t.Fatalf("events %q done %v err %v; reference %q %v %v", events, done, err, wevents, wdone, werr)
		}
	})
}
