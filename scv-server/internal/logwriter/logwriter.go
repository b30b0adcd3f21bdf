// Package logwriter is the writer behind the server's log on stderr. The
// log must never stop the server: a stderr that nobody reads (a paused
// terminal, a pipe whose reader is gone) would otherwise block or, with
// SIGPIPE, kill it in the middle of a log call.
//
// Write never waits for the destination: it copies the bytes into a bounded
// buffer that one goroutine drains. When the buffer is full, whole writes
// are dropped and counted, and a line saying how many were dropped goes
// out when the destination takes bytes again. A write that fails (EPIPE:
// the reader is gone) ends the draining; later writes are discarded.
//
// The goroutine is owned by the Writer: Close stops new writes and waits,
// up to a deadline, for the buffer to drain. A destination blocked for good
// leaves the goroutine in its write; the process exit ends it.
package logwriter

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultMaxBytes bounds the bytes waiting for the destination.
const DefaultMaxBytes = 256 << 10

// Writer is a non-blocking, bounded writer. It is safe for concurrent use;
// each Write is kept whole (the log handler writes one record per Write).
type Writer struct {
	dst io.Writer
	max int

	mu      sync.Mutex
	buf     []byte // guarded by mu; waiting for the destination
	dropped int    // guarded by mu; writes dropped since the last report
	closed  bool   // guarded by mu
	failed  bool   // guarded by mu; the destination failed: discard

	wake    chan struct{} // one-slot: there is something to write
	drained chan struct{} // closed when the goroutine exits
}

// New returns a writer to dst holding at most max waiting bytes
// (DefaultMaxBytes when max ≤ 0), and starts its goroutine.
func New(dst io.Writer, max int) *Writer {
	if max <= 0 {
		max = DefaultMaxBytes
	}
	w := &Writer{dst: dst, max: max, wake: make(chan struct{}, 1), drained: make(chan struct{})}
	go w.run()
	return w
}

// Write queues p for the destination without waiting for it. It always
// reports success: a log line that cannot be written is not the caller's
// problem.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	switch {
	case w.closed || w.failed:
	case len(w.buf)+len(p) > w.max:
		w.dropped++
		w.signal()
	default:
		w.buf = append(w.buf, p...)
		w.signal()
	}
	w.mu.Unlock()
	return len(p), nil
}

// Dropped returns the number of writes dropped so far and not yet
// reported on the destination.
func (w *Writer) Dropped() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

func (w *Writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *Writer) run() {
	defer close(w.drained)
	var out []byte
	for {
		w.mu.Lock()
		for len(w.buf) == 0 && w.dropped == 0 && !w.closed {
			w.mu.Unlock()
			<-w.wake
			w.mu.Lock()
		}
		if len(w.buf) == 0 && w.dropped == 0 {
			w.mu.Unlock()
			return // closed and drained
		}
		out = out[:0]
		if w.dropped > 0 {
			out = fmt.Appendf(out, "scv-server: %d log lines were dropped because stderr was not being read\n", w.dropped)
			w.dropped = 0
		}
		out = append(out, w.buf...)
		w.buf = w.buf[:0]
		w.mu.Unlock()

		if _, err := w.dst.Write(out); err != nil {
			w.mu.Lock()
			w.failed = true
			w.buf = nil
			w.mu.Unlock()
			return
		}
		if cap(out) > 4*w.max {
			out = nil // do not keep a burst's buffer
		}
	}
}

// Close stops accepting writes and waits up to timeout for what is queued
// to reach the destination. It reports whether everything was written.
func (w *Writer) Close(timeout time.Duration) bool {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.signal()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.drained:
		w.mu.Lock()
		defer w.mu.Unlock()
		return !w.failed
	case <-t.C:
		return false
	}
}
