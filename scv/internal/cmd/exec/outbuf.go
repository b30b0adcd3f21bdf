package exec

import (
	"io"
	"os"
	"sync"
	"time"
)

// Flush cadences of the reply on stdout. A streamed reply arrives as
// hundreds of small deltas; writing each with its own write(2) cost a
// 2,000-line reply 1,183 system calls (issue 23). Held for at most one of
// these, the text still looks live: a terminal gets about 60 updates a
// second, a pipe or file fewer, larger writes.
const (
	terminalFlushEvery = 16 * time.Millisecond
	pipeFlushEvery     = 50 * time.Millisecond
	// outBufMax flushes a buffer this full at once, so a burst never holds
	// more than this much memory or delays a reader of a pipe for long.
	outBufMax = 64 << 10
)

// outBuffer holds what a run writes to stdout and writes it in batches: a
// timer's interval after the first byte is held, when outBufMax is
// reached, before anything goes to stderr (through stderrFirst) and when
// the run ends (Close). The bytes and their order are those written.
//
// The run's loop and the asker's goroutine write through it, and its
// timer flushes from the runtime's timer goroutine, so a mutex guards it.
// The timer is its only goroutine; Close stops it.
type outBuffer struct {
	mu     sync.Mutex
	w      io.Writer
	buf    []byte
	every  time.Duration
	timer  *time.Timer
	armed  bool
	closed bool
	err    error // the first write error, returned from then on (as bufio)
}

// newOutBuffer buffers w, flushing at the cadence a terminal needs when w
// is one.
func newOutBuffer(w io.Writer) *outBuffer {
	b := &outBuffer{w: w, every: pipeFlushEvery}
	if isTerminal(w) {
		b.every = terminalFlushEvery
	}
	return b
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Write holds p for the next flush.
func (b *outBuffer) Write(p []byte) (int, error) { return hold(b, p) }

// WriteString holds s for the next flush without copying it to a []byte
// first (io.WriteString and fmt use it: one allocation fewer per delta).
func (b *outBuffer) WriteString(s string) (int, error) { return hold(b, s) }

func hold[T string | []byte](b *outBuffer, p T) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	if b.closed {
		// After Close nothing more is batched: write through.
		return b.w.Write([]byte(p))
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) >= outBufMax {
		return len(p), b.flushLocked()
	}
	if !b.armed {
		b.armed = true
		if b.timer == nil {
			b.timer = time.AfterFunc(b.every, b.tick)
		} else {
			b.timer.Reset(b.every)
		}
	}
	return len(p), nil
}

// tick is the timer's flush.
func (b *outBuffer) tick() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = false
	_ = b.flushLocked() // kept in b.err for the next Write or Flush
}

// Flush writes what is held.
func (b *outBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

func (b *outBuffer) flushLocked() error {
	if b.err != nil {
		return b.err
	}
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.w.Write(b.buf)
	b.buf = b.buf[:0]
	if err != nil {
		b.err = err
	}
	return err
}

// Close flushes what is held and stops the timer; later writes go straight
// through.
func (b *outBuffer) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.timer != nil {
		b.timer.Stop()
	}
	return b.flushLocked()
}

// stderrFirst is stderr for a run whose stdout is buffered: it flushes
// stdout before every write, so a tool line or a warning lands after the
// reply text that preceded it, as on an unbuffered terminal.
type stderrFirst struct {
	out *outBuffer
	w   io.Writer
}

func (s stderrFirst) Write(p []byte) (int, error) {
	_ = s.out.Flush() // a broken stdout must not silence stderr
	return s.w.Write(p)
}

// withOutput returns a copy of opts whose stdout is out and whose stderr
// flushes out before each write.
func (opts *Options) withOutput(out *outBuffer) *Options {
	streams := *opts.IO
	streams.Out, streams.ErrOut = out, stderrFirst{out: out, w: opts.IO.ErrOut}
	o := *opts
	o.IO = &streams
	return &o
}
