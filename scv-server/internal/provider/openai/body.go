package openai

import (
	"bytes"
	"context"
	"io"
	"sync"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

// doneHeadBytes is how much of a line is kept to recognise "data: [DONE]"
// (with the spaces SSE allows around it).
const doneHeadBytes = 32

// streamBody wraps a 2xx response body. It enforces the SSE event and
// whole-response limits before go-openai's buffered reader sees the bytes,
// arms the idle timer around each Read, and notes whether the stream
// carried its "data: [DONE]" terminator.
//
// An event's size counts the bytes of its lines without their line
// terminators ("\n" or "\r\n"); a blank line ends the event.
type streamBody struct {
	p      *Provider
	rc     io.ReadCloser
	idle   *idleTimer
	cancel context.CancelFunc

	total   int  // bytes read
	event   int  // bytes of the current event
	line    int  // bytes of the current line, "\r" included
	cr      bool // the current line ends in "\r" so far
	head    [doneHeadBytes]byte
	sawDone bool
	err     *provider.Error // sticky: a limit or the idle timeout

	closeOnce sync.Once
}

func newStreamBody(p *Provider, rc io.ReadCloser, idle *idleTimer, cancel context.CancelFunc) *streamBody {
	return &streamBody{p: p, rc: rc, idle: idle, cancel: cancel}
}

func (b *streamBody) Read(buf []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	b.idle.start()
	n, err := b.rc.Read(buf)
	b.idle.stop()
	if b.idle.fired.Load() {
		return 0, b.fail(b.p.errorf(provider.CodeProviderError, "%s", b.p.idleMessage()))
	}
	if n > 0 {
		if lerr := b.scan(buf[:n]); lerr != nil {
			// The bytes of this read are not handed on: nothing past a
			// limit is parsed.
			return 0, b.fail(lerr)
		}
	}
	if err == io.EOF {
		b.endLine() // a final line without "\n"
	}
	return n, err
}

// fail records err, stops the request and returns err.
func (b *streamBody) fail(err *provider.Error) error {
	b.err = err
	b.cancel()
	b.p.log.Warn("provider stream stopped", "error", err.Message)
	return err
}

// scan accounts for p: total and event sizes, and line boundaries.
func (b *streamBody) scan(p []byte) *provider.Error {
	lim := &b.p.limits
	b.total += len(p)
	if b.total > lim.ResponseBytes {
		return b.p.errorf(provider.CodeResponseLimit, "response exceeds %d bytes", lim.ResponseBytes)
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		if b.line < doneHeadBytes {
			copy(b.head[b.line:], seg)
		}
		b.line += len(seg)
		b.event += len(seg)
		if len(seg) > 0 {
			b.cr = seg[len(seg)-1] == '\r'
		}
		// A "\r" that turns out to end the line is not counted.
		if b.event > lim.SSEEventBytes && !(b.cr && b.event-1 <= lim.SSEEventBytes) {
			return b.p.errorf(provider.CodeResponseLimit, "an SSE event exceeds %d bytes", lim.SSEEventBytes)
		}
		if i < 0 {
			break
		}
		b.endLine()
		p = p[i+1:]
	}
	return nil
}

// endLine closes the current line: a blank one ends the event, and
// "data: [DONE]" marks the stream complete.
func (b *streamBody) endLine() {
	n := b.line
	if b.cr {
		b.event--
		b.cr = false
	}
	b.line = 0
	if n > doneHeadBytes {
		return
	}
	l := bytes.TrimSpace(b.head[:n])
	if len(l) == 0 {
		b.event = 0
		return
	}
	if rest, ok := bytes.CutPrefix(l, []byte("data:")); ok && string(bytes.TrimSpace(rest)) == "[DONE]" {
		b.sawDone = true
	}
}

// Close closes the body once, and releases the attempt's timer and context.
func (b *streamBody) Close() error {
	var err error
	b.closeOnce.Do(func() {
		b.idle.stop()
		err = b.rc.Close()
		b.cancel()
	})
	return err
}

// done reports whether the stream carried "data: [DONE]".
func (b *streamBody) done() bool { return b != nil && b.sawDone }

// failure is the limit or idle error that stopped the stream, if any.
func (b *streamBody) failure() *provider.Error {
	if b == nil || b.err == nil {
		return nil
	}
	return b.err
}
