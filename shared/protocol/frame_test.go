package protocol

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// frameResult is one result of FrameReader.Next: a frame, or the size of a
// refused frame, or the end of the stream.
type frameResult struct {
	frame  string
	tooBig int // Size of an *ErrFrameTooLarge, 0 for none
	eof    bool
}

func (r frameResult) String() string {
	switch {
	case r.eof:
		return "EOF"
	case r.tooBig > 0:
		return "too large(" + strconv.Itoa(r.tooBig) + ")"
	}
	return "frame(" + clipString(r.frame) + ")"
}

func clipString(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// readAll reads results from fr until EOF or a result count bound.
func readAll(t testing.TB, fr *FrameReader, limit int) []frameResult {
	t.Helper()
	var out []frameResult
	for range 1 << 20 {
		frame, err := fr.Next()
		var tl *ErrFrameTooLarge
		switch {
		case err == nil:
			if len(frame) > limit {
				t.Fatalf("frame of %d bytes over the %d limit", len(frame), limit)
			}
			if bytes.IndexByte(frame, '\n') >= 0 {
				t.Fatalf("frame contains a newline: %q", frame)
			}
			out = append(out, frameResult{frame: string(frame)})
		case errors.As(err, &tl):
			if tl.Limit != limit || tl.Size <= limit {
				t.Fatalf("ErrFrameTooLarge{Size: %d, Limit: %d} with limit %d", tl.Size, tl.Limit, limit)
			}
			if frame != nil {
				t.Fatalf("frame %q returned with %v", frame, err)
			}
			out = append(out, frameResult{tooBig: tl.Size})
		case errors.Is(err, io.EOF):
			if frame != nil {
				t.Fatalf("frame %q returned with EOF", frame)
			}
			return append(out, frameResult{eof: true})
		default:
			t.Fatalf("Next: %v", err)
		}
	}
	t.Fatal("no EOF after a million results")
	return nil
}

// modelFrames is the specification of FrameReader in a few lines: split on
// newlines, drop one carriage return before each, refuse what is over the
// limit, skip what is blank.
func modelFrames(data []byte, limit int) []frameResult {
	var out []frameResult
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1] // the stream ended with a newline
	}
	for _, line := range lines {
		line = bytes.TrimSuffix(line, []byte("\r"))
		switch {
		case len(line) > limit:
			out = append(out, frameResult{tooBig: len(line)})
		case len(bytes.Trim(line, " \t\r")) == 0:
			// blank
		default:
			out = append(out, frameResult{frame: string(line)})
		}
	}
	return append(out, frameResult{eof: true})
}

func equalResults(a, b []frameResult) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFrameReaderCases(t *testing.T) {
	t.Parallel()
	const limit = 20
	big := strings.Repeat("x", limit)
	cases := []struct {
		name string
		in   string
		want []frameResult
	}{
		{"empty stream", "", []frameResult{{eof: true}}},
		{"one frame", "{}\n", []frameResult{{frame: "{}"}, {eof: true}}},
		{"final line without newline", "{}\n{\"a\":1}", []frameResult{{frame: "{}"}, {frame: `{"a":1}`}, {eof: true}}},
		{"CRLF", "{}\r\n{}\r\n", []frameResult{{frame: "{}"}, {frame: "{}"}, {eof: true}}},
		{"only one CR dropped", "{}\r\r\n", []frameResult{{frame: "{}\r"}, {eof: true}}},
		{"CR inside kept", "a\rb\n", []frameResult{{frame: "a\rb"}, {eof: true}}},
		{"final CR without newline", "{}\r", []frameResult{{frame: "{}"}, {eof: true}}},
		{"blank lines skipped", "\n\n  \n\t\r\n{}\n \t \n\n", []frameResult{{frame: "{}"}, {eof: true}}},
		{"blank final line", "{}\n   ", []frameResult{{frame: "{}"}, {eof: true}}},
		{"exactly the limit", big + "\n", []frameResult{{frame: big}, {eof: true}}},
		{"exactly the limit CRLF", big + "\r\n", []frameResult{{frame: big}, {eof: true}}},
		{"exactly the limit at EOF", big, []frameResult{{frame: big}, {eof: true}}},
		{"limit plus one", big + "y\n{}\n", []frameResult{{tooBig: limit + 1}, {frame: "{}"}, {eof: true}}},
		{"limit plus one CRLF", big + "y\r\n{}\n", []frameResult{{tooBig: limit + 1}, {frame: "{}"}, {eof: true}}},
		{"limit plus one at EOF", big + "y", []frameResult{{tooBig: limit + 1}, {eof: true}}},
		{"far over the limit", strings.Repeat(big, 10) + "\n{}\n", []frameResult{{tooBig: 10 * limit}, {frame: "{}"}, {eof: true}}},
		{"far over the limit CRLF", strings.Repeat(big, 10) + "\r\n{}\n", []frameResult{{tooBig: 10 * limit}, {frame: "{}"}, {eof: true}}},
		{"far over the limit at EOF", strings.Repeat(big, 10), []frameResult{{tooBig: 10 * limit}, {eof: true}}},
		{"several oversized in a row",
			big + "1\n" + big + big + "\n" + strings.Repeat(big, 7) + "\r\n" + big + "\n",
			[]frameResult{{tooBig: limit + 1}, {tooBig: 2 * limit}, {tooBig: 7 * limit}, {frame: big}, {eof: true}}},
		{"oversized blank line", strings.Repeat(" ", limit+5) + "\n{}\n", []frameResult{{tooBig: limit + 5}, {frame: "{}"}, {eof: true}}},
	}
	readers := map[string]func(string) io.Reader{
		"whole":    func(s string) io.Reader { return strings.NewReader(s) },
		"bytewise": func(s string) io.Reader { return iotest.OneByteReader(strings.NewReader(s)) },
		"dataeof":  func(s string) io.Reader { return iotest.DataErrReader(strings.NewReader(s)) },
		"halves":   func(s string) io.Reader { return iotest.HalfReader(strings.NewReader(s)) },
	}
	for _, tc := range cases {
		if model := modelFrames([]byte(tc.in), limit); !equalResults(model, tc.want) {
			t.Fatalf("%s: the test model says %v, the case %v", tc.name, model, tc.want)
		}
		for rname, mk := range readers {
			t.Run(tc.name+"/"+rname, func(t *testing.T) {
				got := readAll(t, NewFrameReader(mk(tc.in), limit), limit)
				if !equalResults(got, tc.want) {
					t.Errorf("got %v\nwant %v", got, tc.want)
				}
			})
		}
	}
}

// TestFrameReaderClientLimit checks the real client limit: a frame of
// exactly 1 MiB is accepted, one byte more is refused.
func TestFrameReaderClientLimit(t *testing.T) {
	t.Parallel()
	exact := strings.Repeat("a", MaxClientFrameBytes)
	in := exact + "\n" + exact + "b\n" + exact + "\r\n" + exact + "bc\r\n{}\n" + exact
	got := readAll(t, NewFrameReader(strings.NewReader(in), MaxClientFrameBytes), MaxClientFrameBytes)
	want := []frameResult{
		{frame: exact}, {tooBig: MaxClientFrameBytes + 1}, {frame: exact},
		{tooBig: MaxClientFrameBytes + 2}, {frame: "{}"}, {frame: exact}, {eof: true},
	}
	if !equalResults(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

func TestFrameReaderEOFIsSticky(t *testing.T) {
	t.Parallel()
	fr := NewFrameReader(strings.NewReader("{}"), 10)
	if f, err := fr.Next(); err != nil || string(f) != "{}" {
		t.Fatalf("Next = %q, %v", f, err)
	}
	for range 3 {
		if f, err := fr.Next(); err != io.EOF || f != nil {
			t.Fatalf("Next after the end = %q, %v; want nil, io.EOF", f, err)
		}
	}
}

func TestFrameReaderReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	// A frame, then a partial line and a failure.
	r := io.MultiReader(strings.NewReader("{}\n{\"a\":"), iotest.ErrReader(boom))
	fr := NewFrameReader(r, 100)
	if f, err := fr.Next(); err != nil || string(f) != "{}" {
		t.Fatalf("Next = %q, %v", f, err)
	}
	if _, err := fr.Next(); !errors.Is(err, boom) {
		t.Fatalf("Next = %v, want %v", err, boom)
	}
	// A failure while discarding an oversized line is reported as the failure.
	r = io.MultiReader(strings.NewReader(strings.Repeat("x", 500)), iotest.ErrReader(boom))
	if _, err := NewFrameReader(r, 100).Next(); !errors.Is(err, boom) {
		t.Fatalf("Next = %v, want %v", err, boom)
	}
}

func TestErrFrameTooLargeMessage(t *testing.T) {
	t.Parallel()
	err := error(&ErrFrameTooLarge{Size: 11, Limit: 10})
	if got := err.Error(); got != "frame of 11 bytes is over the 10-byte limit" {
		t.Errorf("Error() = %q", got)
	}
}

// genReader yields n bytes of 'a', then the tail, without holding them.
type genReader struct {
	n    int64
	tail []byte
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.n > 0 {
		k := min(int64(len(p)), g.n)
		for i := range p[:k] {
			p[i] = 'a'
		}
		g.n -= k
		return int(k), nil
	}
	if len(g.tail) == 0 {
		return 0, io.EOF
	}
	k := copy(p, g.tail)
	g.tail = g.tail[k:]
	return k, nil
}

// TestFrameReaderBoundedMemory reads a 50 MiB line through a 1 MiB reader:
// the line is refused and skipped, the next frame is read, the buffer
// never grows, and the whole read allocates next to nothing.
func TestFrameReaderBoundedMemory(t *testing.T) {
	// Not parallel: it measures the whole process's allocations.
	const lineBytes = 50 << 20
	g := &genReader{n: lineBytes, tail: []byte("\n{\"type\":\"turn.start\"}\n")}
	fr := NewFrameReader(g, MaxClientFrameBytes)
	if got, want := fr.r.Size(), MaxClientFrameBytes+2; got != want {
		t.Fatalf("buffer is %d bytes, want %d", got, want)
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := fr.Next()
	var tl *ErrFrameTooLarge
	if !errors.As(err, &tl) || tl.Size != lineBytes {
		t.Fatalf("Next = %v, want a %d-byte ErrFrameTooLarge", err, lineBytes)
	}
	frame, err := fr.Next()
	if err != nil || string(frame) != `{"type":"turn.start"}` {
		t.Fatalf("Next after the oversized line = %q, %v", frame, err)
	}
	runtime.ReadMemStats(&after)

	if got := fr.r.Size(); got != MaxClientFrameBytes+2 {
		t.Errorf("buffer grew to %d bytes", got)
	}
	// The error value is the only allocation Next makes; leave room for
	// the runtime's own.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Errorf("reading a %d MiB line allocated %d bytes", lineBytes>>20, alloc)
	}
}

func TestFrameReaderAllocs(t *testing.T) {
	line := []byte(`{"type":"turn.start","request_id":"3","session_id":"s","prompt":"hi"}` + "\n")
	r := &repeatReader{line: line}
	fr := NewFrameReader(r, MaxClientFrameBytes)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := fr.Next(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Next allocates %.1f times per frame, want 0", allocs)
	}
}

// repeatReader repeats one line forever.
type repeatReader struct {
	line []byte
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], r.line[r.off:])
		n += k
		r.off = (r.off + k) % len(r.line)
	}
	return n, nil
}

// chunkReader hands data out in the chunk sizes given by sizes, cycling.
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)]) + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func FuzzFrameReader(f *testing.F) {
	f.Add([]byte("{}\n{\"a\":1}\r\n\n  \n"), uint16(8), []byte{0})
	f.Add([]byte(strings.Repeat("x", 100)+"\n{}\n"), uint16(10), []byte{3, 200, 7})
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaa\r\n\r\n\r"), uint16(20), []byte{})
	f.Add([]byte("\r\r\r\n\n\n"), uint16(0), []byte{1})
	f.Add([]byte("1234567890123456\n12345678901234567\r\n"), uint16(14), []byte{15, 16, 17})
	f.Fuzz(func(t *testing.T, data []byte, limit uint16, sizes []byte) {
		max := int(limit % 300)
		fr := NewFrameReader(&chunkReader{data: data, sizes: sizes}, max)
		got := readAll(t, fr, max) // checks the limit and newlines itself
		if want := modelFrames(data, max); !equalResults(got, want) {
			t.Fatalf("limit %d, input %q\n got %v\nwant %v", max, data, got, want)
		}
	})
}

func BenchmarkFrameReader(b *testing.B) {
	line := []byte(`{"type":"turn.start","request_id":"3","session_id":"3f0c6f0e-0d7e-4b3a-9f51-8c1f0f6f2c11","prompt":"Fix the failing test in the parser package and run the tests again."}` + "\n")
	fr := NewFrameReader(&repeatReader{line: line}, MaxClientFrameBytes)
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := fr.Next(); err != nil {
			b.Fatal(err)
		}
	}
}
