package openai

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/provider"

	"github.com/scv-cli/scv/shared/textcut"
)

// maxErrorBody bounds what is read of a non-2xx body to find its message.
const maxErrorBody = 64 << 10

// maxDetailBytes bounds the provider's own text within a message.
const maxDetailBytes = 768

// call is the state one Stream shares with its HTTP layer.
type call struct {
	body    *streamBody           // the accepted response body, once there is one
	onRetry provider.RetryHandler // told before each retry; nil when the handler does not listen
}

// doer sends the request of a Stream: it adds headers, retries before any
// body byte reaches the SSE reader, arms the idle timer and wraps the body
// with the response limit.
type doer struct{ p *Provider }

func (d *doer) do(c *call, req *http.Request) (*http.Response, error) {
	p := d.p
	ctx := req.Context()
	req.Header.Set("User-Agent", p.cfg.UserAgent)
	for k, v := range p.cfg.Headers {
		req.Header.Set(k, v)
	}

	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			var err error
			if req, err = rewind(req); err != nil {
				return nil, p.wrapf(provider.CodeProviderError, err, "cannot resend the request: %v", err)
			}
		}
		resp, f := d.attempt(c, req)
		if f == nil {
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if f.wait < 0 || attempt >= p.cfg.MaxRetries {
			msg := f.msg
			if attempt > 0 {
				msg += " (after " + strconv.Itoa(attempt+1) + " attempts)"
			}
			e := p.wrapf(provider.CodeProviderError, f.err, "%s", msg)
			e.Status = f.status
			return nil, e
		}
		wait := f.wait
		if wait == 0 {
			wait = p.backoff(attempt)
		}
		p.log.Warn("provider request failed; retrying",
			"status", f.status, "error", p.message(f.msg), "attempt", attempt+1, "wait", wait)
		if c.onRetry != nil {
			c.onRetry.OnRetry(provider.Retry{Attempt: attempt + 2, MaxAttempts: p.cfg.MaxRetries + 1, Wait: wait, Status: f.status, Message: p.message(f.msg)})
		}
		if err := p.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// failure is one failed attempt: what to report, and how long to wait
// before retrying: 0 for the computed backoff, a positive Retry-After, or
// -1 when it must not be retried.
type failure struct {
	msg    string // without the provider prefix; redacted and bounded later
	status int
	err    error
	wait   time.Duration
}

// attempt sends req once.
func (d *doer) attempt(c *call, req *http.Request) (*http.Response, *failure) {
	p := d.p
	actx, cancel := context.WithCancel(req.Context())
	idle := &idleTimer{d: p.cfg.IdleTimeout, cancel: cancel}
	idle.start()
	resp, err := p.http.Do(req.WithContext(actx))
	idle.stop()
	if err != nil {
		cancel()
		if idle.fired.Load() {
			return nil, &failure{msg: p.idleMessage(), wait: -1}
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return nil, &failure{msg: "cannot reach the provider: " + err.Error(), err: err, wait: retryableConnError(err)}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		c.body = newStreamBody(p, resp.Body, idle, cancel)
		resp.Body = c.body
		return resp, nil
	}

	// Reading the error body is bounded in size and, by the idle timer, in
	// time.
	idle.start()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	idle.stop()
	resp.Body.Close()
	cancel()
	f := &failure{msg: statusMessage(resp.StatusCode, body), status: resp.StatusCode, wait: -1}
	if retryableStatus(resp.StatusCode) {
		f.wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return nil, f
}

// rewind returns a copy of req with a fresh body for another attempt.
func rewind(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, errors.New("request body cannot be replayed")
		}
		b, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = b
	}
	return r, nil
}

// statusMessage describes a non-2xx reply with the provider's own message.
func statusMessage(code int, body []byte) string {
	detail := providerMessage(body)
	if detail == "" {
		detail = http.StatusText(code)
	}
	// Leave room in the bounded message for what follows the detail.
	detail = bound(detail)
	if len(detail) > maxDetailBytes {
		detail = textcut.Prefix(detail, maxDetailBytes) + "…"
	}
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return "the provider refused the credentials (check the API key): " + detail
	case code == http.StatusTooManyRequests:
		return "rate limited by the provider: " + detail
	case code >= 500:
		return "the provider failed: " + detail
	}
	return "the provider rejected the request: " + detail
}

// providerMessage extracts error.message (or a string error, or the body
// itself when it is short text) from an error body.
func providerMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var obj struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &obj) == nil && obj.Message != "":
			return obj.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		}
	}
	return strings.TrimSpace(string(body))
}

func retryableStatus(code int) bool {
	switch code {
	case http.StatusRequestTimeout, http.StatusTooManyRequests:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported:
		return false
	}
	return code >= 500
}

// retryableConnError is 0 (retry with backoff) for transient connection
// failures and -1 for those another attempt cannot fix.
func retryableConnError(err error) time.Duration {
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		return -1
	}
	return 0
}

// retryAfter parses a Retry-After header (delay-seconds or HTTP-date),
// capped to maxRetryAfter; 0 means absent or unusable.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		if n > int64(maxRetryAfter/time.Second) {
			return maxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	} else {
		return 0
	}
	if d <= 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

// backoff is the wait before retry number attempt+1: base * 2^attempt,
// capped, jittered.
func (p *Provider) backoff(attempt int) time.Duration {
	d := p.cfg.RetryMaxDelay
	if attempt < 30 {
		d = min(p.cfg.RetryBaseDelay<<attempt, p.cfg.RetryMaxDelay)
	}
	return p.jitter(d)
}

// halfJitter waits between d/2 and d: spread out, but never a busy retry.
func halfJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *Provider) idleMessage() string {
	p.log.Warn("provider stream idle; cancelled", "idle_timeout", p.cfg.IdleTimeout)
	return "the provider sent nothing for " + seconds(p.cfg.IdleTimeout) + "; request cancelled"
}

// idleTimer cancels an attempt when it stays armed for d. It is armed only
// while we wait on the provider, so a slow Handler never trips it.
type idleTimer struct {
	d      time.Duration
	cancel context.CancelFunc
	t      *time.Timer
	fired  atomic.Bool
}

func (it *idleTimer) start() {
	if it.d <= 0 {
		return
	}
	if it.t == nil {
		it.t = time.AfterFunc(it.d, func() {
			it.fired.Store(true)
			it.cancel()
		})
		return
	}
	it.t.Reset(it.d)
}

func (it *idleTimer) stop() {
	if it.t != nil {
		it.t.Stop()
	}
}
