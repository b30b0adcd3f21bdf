package exec

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// countingWriter counts the writes that reach it (the write(2)s of a real
// stdout).
type countingWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
	err    error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	c.writes++
	return c.buf.Write(p)
}

func (c *countingWriter) snapshot() (string, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String(), c.writes
}

func TestOutBufferBatchesAndKeepsBytes(t *testing.T) {
	t.Parallel()
	w := &countingWriter{}
	b := newOutBuffer(w)
	b.every = time.Hour // only Close flushes here
	reply := longReply()
	for i := 0; i < len(reply); i += 7 {
		if _, err := io.WriteString(b, reply[i:min(i+7, len(reply))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	got, writes := w.snapshot()
	if got != reply {
		t.Fatalf("got %d bytes, want the %d written, in order", len(got), len(reply))
	}
	// 54 KiB: under outBufMax, so one write at Close.
	if writes != 1 {
		t.Errorf("%d writes reached stdout, want 1", writes)
	}
}

func TestOutBufferFlushesOnTimerAndWhenFull(t *testing.T) {
	t.Parallel()
	w := &countingWriter{}
	b := newOutBuffer(w)
	b.every = 5 * time.Millisecond
	defer b.Close()
	io.WriteString(b, "live")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if got, _ := w.snapshot(); got == "live" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("held text never reached stdout without a Flush")
		}
		time.Sleep(time.Millisecond)
	}
	b.every = time.Hour
	big := strings.Repeat("x", outBufMax)
	io.WriteString(b, big)
	if got, _ := w.snapshot(); got != "live"+big {
		t.Errorf("a full buffer was not written at once (%d bytes out)", len(got))
	}
}

func TestStderrFirstKeepsOrder(t *testing.T) {
	t.Parallel()
	var both bytes.Buffer
	b := newOutBuffer(&both)
	b.every = time.Hour
	defer b.Close()
	errOut := stderrFirst{out: b, w: &both}
	io.WriteString(b, "Let me look.\n")
	io.WriteString(errOut, "• read x\n")
	io.WriteString(b, "Done.\n")
	b.Flush()
	if want := "Let me look.\n• read x\nDone.\n"; both.String() != want {
		t.Errorf("got %q, want %q", both.String(), want)
	}
}

func TestOutBufferKeepsWriteError(t *testing.T) {
	t.Parallel()
	broken := errors.New("broken pipe")
	w := &countingWriter{err: broken}
	b := newOutBuffer(w)
	b.every = time.Hour
	io.WriteString(b, "x")
	if err := b.Flush(); !errors.Is(err, broken) {
		t.Fatalf("Flush = %v, want %v", err, broken)
	}
	if _, err := io.WriteString(b, "y"); !errors.Is(err, broken) {
		t.Errorf("Write after a failed flush = %v, want %v", err, broken)
	}
	if err := b.Close(); !errors.Is(err, broken) {
		t.Errorf("Close = %v, want %v", err, broken)
	}
}

// BenchmarkStreamReply writes long2000's reply to a pipe as 7-byte deltas,
// straight (a write(2) per delta, as before issue 23's buffering) and
// through outBuffer.
func BenchmarkStreamReply(b *testing.B) {
	reply := longReply()
	for _, mode := range []string{"direct", "buffered"} {
		b.Run(mode, func(b *testing.B) {
			r, w, err := osPipe()
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			go io.Copy(io.Discard, r)
			b.SetBytes(int64(len(reply)))
			b.ReportAllocs()
			for b.Loop() {
				var out io.Writer = w
				var buf *outBuffer
				if mode == "buffered" {
					buf = newOutBuffer(w)
					out = buf
				}
				for i := 0; i < len(reply); i += 7 {
					io.WriteString(out, reply[i:min(i+7, len(reply))])
				}
				if buf != nil {
					buf.Close()
				}
			}
			w.Close()
		})
	}
}

func osPipe() (*os.File, *os.File, error) { return os.Pipe() }
