package openai

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// sseResult is what a reader made of a whole stream.
type sseResult struct {
	events []string // "name|data"; name empty for the default
	done   bool
	err    error
	lastID string
	retry  int64
}

func (r sseResult) String() string {
	return fmt.Sprintf("events %q done %v err %v id %q retry %d", r.events, r.done, r.err, r.lastID, r.retry)
}

func (r sseResult) equal(o sseResult) bool {
	return slices.Equal(r.events, o.events) && r.done == o.done && r.err == o.err && r.lastID == o.lastID && r.retry == o.retry
}

// readSSE runs an sseReader over in with a read buffer of bufSize bytes
// (one byte per Read when oneByte).
func readSSE(in []byte, max, bufSize int, oneByte bool) sseResult {
	var r io.Reader = bytes.NewReader(in)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	s := newSSEReaderSize(r, max, bufSize)
	var res sseResult
	for {
		name, data, err := s.next()
		if err != nil {
			res.done, res.err, res.lastID, res.retry = s.done, err, string(s.lastID), s.retry
			return res
		}
		res.events = append(res.events, string(name)+"|"+string(data))
	}
}

// refSSE is the WHATWG algorithm written the obvious way, on the whole
// input, with SCV's two rules (blank data skipped, "[DONE]" ends the
// stream).
func refSSE(in []byte, max int) sseResult {
	res := sseResult{retry: -1}
	in = bytes.TrimPrefix(in, []byte("\xEF\xBB\xBF"))
	var lines [][]byte
	for len(in) > 0 {
		i := bytes.IndexAny(in, "\r\n")
		if i < 0 {
			lines = append(lines, in) // the last line, unended
			break
		}
		lines = append(lines, in[:i])
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	var name, data string
	has := false
	event := 0
	dispatch := func() {
		if has && strings.Trim(data, " \t\r\n") != "" {
			res.events = append(res.events, name+"|"+data)
		}
		name, data, has = "", "", false
	}
	for _, l := range lines {
		if event += len(l); event > max {
			res.err = errEventLimit
			return res
		}
		if len(l) == 0 {
			event = 0
			dispatch()
			continue
		}
		if l[0] == ':' {
			continue
		}
		field, value, found := bytes.Cut(l, []byte(":"))
		if found {
			value = bytes.TrimPrefix(value, []byte(" "))
		}
		switch string(field) {
		case "data":
			if string(bytes.Trim(value, " \t\r")) == "[DONE]" {
				dispatch()
				res.done, res.err = true, io.EOF
				return res
			}
			if has {
				data += "\n"
			}
			data += string(value)
			has = true
		case "event":
			name = string(value)
		case "id":
			if !bytes.Contains(value, []byte{0}) {
				res.lastID = string(value)
			}
		case "retry":
			if len(value) > 0 && len(bytes.TrimLeft(value, "0123456789")) == 0 {
				var n int64
				for _, c := range value {
					n = min(n*10+int64(c-'0'), 1<<53)
				}
				res.retry = n
			}
		}
	}
	res.err = io.EOF
	return res
}

func TestSSE(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	for _, tc := range []struct {
		name   string
		in     string
		max    int
		events []string
		done   bool
		err    error
	}{
		{"lf", "data: a\n\ndata: b\n\ndata: [DONE]\n\n", 0, []string{"|a", "|b"}, true, io.EOF},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\ndata: [DONE]\r\n\r\n", 0, []string{"|a", "|b"}, true, io.EOF},
		{"cr", "data: a\r\rdata: b\r\rdata: [DONE]\r\r", 0, []string{"|a", "|b"}, true, io.EOF},
		{"mixed line ends", "data: a\r\ndata: b\r\n\rdata: c\n\r\ndata: d\n\n", 0, []string{"|a\nb", "|c", "|d"}, false, io.EOF},
		{"a lone CR ends a line", "data: a\rb\n\n", 0, []string{"|a"}, false, io.EOF},
		{"BOM skipped", "\xEF\xBB\xBFdata: a\n\n", 0, []string{"|a"}, false, io.EOF},
		{"only the first BOM", "\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n", 0, []string{"|b"}, false, io.EOF},
		{"BOM later is data", "data: \xEF\xBB\xBFa\n\n", 0, []string{"|\xEF\xBB\xBFa"}, false, io.EOF},
		{"no space after colon", "data:a\n\ndata:[DONE]\n\n", 0, []string{"|a"}, true, io.EOF},
		{"only one space is removed", "data:  a \n\n", 0, []string{"| a "}, false, io.EOF},
		{"comments and other fields ignored", ": keep-alive\nid: 7\nretry: 10\nfoo\nfoo: bar\ndata: a\n\n", 0, []string{"|a"}, false, io.EOF},
		{"event names", "event: ping\ndata: {}\n\nevent: message\ndata: x\n\ndata: y\n\n", 0, []string{"ping|{}", "message|x", "|y"}, false, io.EOF},
		{"the last event field wins", "event: a\nevent: b\ndata: x\n\n", 0, []string{"b|x"}, false, io.EOF},
		{"a name without data is dropped with its event", "event: ping\n\ndata: x\n\n", 0, []string{"|x"}, false, io.EOF},
		{"unknown named event, data not JSON", "event: vendor.thing\ndata: hello there\n\ndata: {}\n\n", 0, []string{"vendor.thing|hello there", "|{}"}, false, io.EOF},
		{"multi-line data", "data: {\"a\":\ndata: 1}\n\n", 0, []string{"|{\"a\":\n1}"}, false, io.EOF},
		{"data without colon", "data\ndata:x\n\n", 0, []string{"|\nx"}, false, io.EOF},
		{"empty data skipped", "data:\n\ndata: \n\ndata: a\n\n", 0, []string{"|a"}, false, io.EOF},
		{"a line of spaces is not empty", "data: a\n \t\ndata: b\n\n", 0, []string{"|a\nb"}, false, io.EOF},
		{"a field name is taken as it is", "  data: a\n\nDATA: b\n\n", 0, nil, false, io.EOF},
		{"done ends at once", "data: a\n\ndata: [DONE] \ndata: b\n\n", 0, []string{"|a"}, true, io.EOF},
		{"done after data in one event", "data: a\ndata: [DONE]\n", 0, []string{"|a"}, true, io.EOF},
		{"done without final line end", "data: a\n\ndata: [DONE]", 0, []string{"|a"}, true, io.EOF},
		{"event cut by EOF is discarded", "data: a\n\ndata: b\n", 0, []string{"|a"}, false, io.EOF},
		{"event cut by EOF without line end", "data: a\n\ndata: b", 0, []string{"|a"}, false, io.EOF},
		{"long lines", "data: " + long + "\n\n: " + long + "\n\ndata: [DONE]\n", 0, []string{"|" + long}, true, io.EOF},
		{"long lines, CR", "data: " + long + "\r\r: " + long + "\r\rdata: [DONE]\r", 0, []string{"|" + long}, true, io.EOF},
		{"event at the limit", "data: 0123\r\n: 56\r\n\r\n", 14, []string{"|0123"}, false, io.EOF},
		{"event at the limit, CR", "data: 0123\r: 56\r\r", 14, []string{"|0123"}, false, io.EOF},
		{"event past the limit", "data: 0123\r\n: 567\r\n\r\n", 14, nil, false, errEventLimit},
		{"the name counts", "event: 0123456\ndata: x\n\n", 14, nil, false, errEventLimit},
		{"limit counts every line of an event", "data: 01\n: x\ndata: 2\n\n", 14, nil, false, errEventLimit},
		{"limit on a line without end", "data: " + long, 50, nil, false, errEventLimit},
		{"limit on a line without end, ended by CR later", "data: " + long + "\r", 50, nil, false, errEventLimit},
		{"limit resets per event", "data: 0123456\n\ndata: 0123456\n\n", 14, []string{"|0123456", "|0123456"}, false, io.EOF},
		{"events before the limit are read", "data: a\n\ndata: " + long + "\n\n", 50, []string{"|a"}, false, errEventLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			max := tc.max
			if max == 0 {
				max = 1 << 20
			}
			for _, bufSize := range []int{3, 16, 4096} {
				for _, oneByte := range []bool{false, true} {
					res := readSSE([]byte(tc.in), max, bufSize, oneByte)
					if !slices.Equal(res.events, tc.events) || res.done != tc.done || res.err != tc.err {
						t.Errorf("buffer %d, one byte %v: %v; want events %q done %v err %v", bufSize, oneByte, res, tc.events, tc.done, tc.err)
					}
				}
			}
			if res := refSSE([]byte(tc.in), max); !slices.Equal(res.events, tc.events) || res.done != tc.done || res.err != tc.err {
				t.Errorf("reference: %v", res)
			}
		})
	}
}

// TestSSEIDAndRetry: id and retry are parsed as the standard says, though
// nothing uses them.
func TestSSEIDAndRetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		id    string
		retry int64
	}{
		{"id: 7\nretry: 1500\ndata: x\n\n", "7", 1500},
		{"id: 7\nid\ndata: x\n\n", "", -1},
		{"id: 7\nid: a\x00b\ndata: x\n\n", "7", -1},
		{"retry: 15x\nretry: -1\nretry:\nretry: 1.5\n\n", "", -1},
		{"retry: 99999999999999999999\n\n", "", 1 << 53},
	} {
		for _, res := range []sseResult{readSSE([]byte(tc.in), 1<<20, 16, false), refSSE([]byte(tc.in), 1<<20)} {
			if res.lastID != tc.id || res.retry != tc.retry {
				t.Errorf("%q: %v, want id %q retry %d", tc.in, res, tc.id, tc.retry)
			}
		}
	}
}

// TestSSEReadErrors: an error of the stream's reader ends next with it,
// after the events before it.
func TestSSEReadErrors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("data: a\r\n\r\ndata: b\r"), iotest.ErrReader(boom))
	s := newSSEReader(r, 1<<20)
	if _, data, err := s.next(); err != nil || string(data) != "a" {
		t.Fatalf("first event %q, %v", data, err)
	}
	if _, _, err := s.next(); err != boom {
		t.Fatalf("error %v, want boom", err)
	}
	// A reader that never makes progress is not spun on forever.
	s = newSSEReader(zeroReader{}, 1<<20)
	if _, _, err := s.next(); err != io.ErrNoProgress {
		t.Fatalf("error %v, want io.ErrNoProgress", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

// FuzzSSE checks the SSE reader never panics, never returns an event larger
// than its limit, and agrees with refSSE whatever the read sizes.
func FuzzSSE(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[]}\n\ndata: [DONE]\n\n"), uint16(64))
	f.Add([]byte(": ping\r\n\r\nevent: x\r\ndata:a\r\ndata: b\r\n\r\n"), uint16(0x8000|20))
	f.Add([]byte("\xEF\xBB\xBFevent: ping\rdata: a\r\rid: 3\rretry: 20\r\n\n"), uint16(0x8000|40))
	f.Fuzz(func(t *testing.T, in []byte, limit uint16) {
		max := int(limit&0x1ff) + 1
		oneByte := limit&0x8000 != 0
		got := readSSE(in, max, 16, oneByte)
		if got.err != io.EOF && !errors.Is(got.err, errEventLimit) {
			t.Fatalf("error %v", got.err)
		}
		for _, e := range got.events {
			if len(e) > max+1 { // name|data, both within the event's bytes
				t.Fatalf("event of %d bytes, limit %d", len(e), max)
			}
		}
		if want := refSSE(in, max); !got.equal(want) {
			t.Fatalf("%v; reference %v", got, want)
		}
	})
}

// FuzzSSELineEndings: the same lines read the same whether they end in
// "\n", "\r\n", "\r" or any mix of them, whatever the read sizes.
func FuzzSSELineEndings(f *testing.F) {
	f.Add([]byte("event: x\ndata: a\ndata: b\n\n: c\n\ndata: [DONE]\n"), []byte{0, 1, 2, 1, 0, 2}, uint16(30))
	f.Add([]byte("\xEF\xBB\xBFdata: a\n\n\n\ndata: b\n\n"), []byte{2, 0, 2, 0, 1}, uint16(0x8000|8))
	f.Add([]byte("data: "+strings.Repeat("y", 40)+"\n\n"), []byte{2}, uint16(20))
	f.Fuzz(func(t *testing.T, in, ends []byte, limit uint16) {
		max := int(limit&0x1ff) + 1
		oneByte := limit&0x8000 != 0
		// The lines of in, at any line end; whether the last one has an end.
		var lines [][]byte
		ended := true
		for len(in) > 0 {
			i := bytes.IndexAny(in, "\r\n")
			if i < 0 {
				lines, ended = append(lines, in), false
				break
			}
			lines = append(lines, in[:i])
			if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
				i++
			}
			in = in[i+1:]
		}
		terminators := []string{"\n", "\r\n", "\r"}
		encode := func(pick func(i int) int) []byte {
			var b []byte
			prevCR := false
			for i, l := range lines {
				b = append(b, l...)
				if i == len(lines)-1 && !ended {
					break
				}
				k := pick(i)
				if prevCR && len(l) == 0 && k == 0 {
					k = 1 // "\r" then "\n" would be one line end, not two
				}
				b = append(b, terminators[k]...)
				prevCR = k == 2
			}
			return b
		}
		lf := encode(func(int) int { return 0 })
		want := readSSE(lf, max, 16, oneByte)
		if ref := refSSE(lf, max); !want.equal(ref) {
			t.Fatalf("LF: %v; reference %v", want, ref)
		}
		for name, enc := range map[string][]byte{
			"CRLF": encode(func(int) int { return 1 }),
			"CR":   encode(func(int) int { return 2 }),
			"mixed": encode(func(i int) int {
				if len(ends) == 0 {
					return 2
				}
				return int(ends[i%len(ends)] % 3)
			}),
		} {
			for _, bufSize := range []int{3, 16} {
				if got := readSSE(enc, max, bufSize, oneByte); !got.equal(want) {
					t.Fatalf("%s %q (buffer %d): %v; LF gives %v", name, enc, bufSize, got, want)
				}
			}
		}
	})
}

// BenchmarkSSE reads 10,000 chat chunks framed with each line end.
func BenchmarkSSE(b *testing.B) {
	const ev = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}`
	for _, end := range []struct{ name, s string }{{"LF", "\n"}, {"CRLF", "\r\n"}, {"CR", "\r"}} {
		stream := bytes.Repeat([]byte(ev+end.s+end.s), 10_000)
		b.Run(end.name, func(b *testing.B) {
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			for b.Loop() {
				s := newSSEReader(bytes.NewReader(stream), 1<<20)
				n := 0
				for {
					_, _, err := s.next()
					if err != nil {
						break
					}
					n++
				}
				if n != 10_000 {
					b.Fatalf("%d events", n)
				}
			}
		})
	}
}
