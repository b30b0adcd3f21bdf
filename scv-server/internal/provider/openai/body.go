package openai

import (
	"context"
	"io"
	"sync"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

// streamBody wraps a 2xx response body. It enforces the whole-response
// limit before the SSE reader sees the bytes and arms the idle timer
// around each Read. (The SSE reader enforces the event limit.)
type streamBody struct {
	p      *Provider
	rc     io.ReadCloser
	idle   *idleTimer
	cancel context.CancelFunc

	total int             // bytes read
	err   *provider.Error // sticky: a limit or the idle timeout

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
	b.total += n
	if lim := b.p.limits.ResponseBytes; b.total > lim {
		// The bytes of this read are not handed on: nothing past a limit
		// is parsed.
		return 0, b.fail(b.p.errorf(provider.CodeResponseLimit, "response exceeds %d bytes", lim))
	}
	return n, err
}

// fail records err, stops the request and returns err.
func (b *streamBody) fail(err *provider.Error) *provider.Error {
	b.err = err
	b.cancel()
	b.p.log.Warn("provider stream stopped", "error", err.Message)
	return err
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

// failure is the limit or idle error that stopped the stream, if any.
func (b *streamBody) failure() *provider.Error {
	if b == nil || b.err == nil {
		return nil
	}
	return b.err
}
