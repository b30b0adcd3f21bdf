// Package openai implements provider.Provider for any OpenAI-compatible
// endpoint, streaming with tools, on one of two wires (Config.Wire): Chat
// Completions (POST /chat/completions, the default) or Responses (POST
// /responses; see responsesWire). Both share everything below but the
// request body and the decoding of events; this comment describes the
// chat wire, and the Responses wire differs only where responses.go says.
//
// The work is split: github.com/sashabaranov/go-openai builds the request
// (its ChatCompletionRequest and the JSON it marshals to, so messages and
// tools map as that library maps them), and this package does the rest:
// it sends the request, reads the server-sent events and decodes each
// chunk into a small struct holding only the fields used (content,
// refusal, tool call fragments, finish_reason, usage, a mid-stream
// error). Reading the stream here rather than through go-openai's stream
// reader saves most of the CPU and allocations of a reply: go-openai ran a
// regular expression per SSE line and decoded every chunk into its large
// response type with encoding/json, about two thirds of the server's CPU
// on a long reply. Chunks are decoded by a hand-written parser for the
// shapes servers send, with encoding/json deciding whatever it is unsure
// of (see decodeChunk).
//
// Owning the HTTP layer also lets this package:
//
//   - retry 429, 408 and 5xx replies and connection errors before any byte
//     of a response body reaches the parser, with capped exponential
//     backoff that honours Retry-After, and never afterwards (so no text or
//     tool call is ever delivered twice);
//   - enforce the reply limits of protocol-v1.md while reading: the whole
//     body (4 MiB) in the body reader and an SSE event (1 MiB) in the SSE
//     reader, before anything past them is buffered or parsed; assistant
//     text (1 MiB), each tool call's arguments (256 KiB) and the number of
//     tool calls (32) as chunks are decoded;
//   - fail a stream that stays silent for IdleTimeout, measured only while
//     the reader waits for the provider (time spent in the Handler does not
//     count);
//   - turn every failure into a *provider.Error with a bounded message that
//     never contains the API key.
//
// A stream that ends without "data: [DONE]" succeeds only if a
// finish_reason was received: some compatible servers drop the terminator,
// but a stream cut before the model finished is a provider_error ("stream
// ended early"), never a silently truncated reply. On the Responses wire
// the reply is complete at response.completed (or response.incomplete) and
// nothing else ends it successfully.
package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/version"
)

// minSecretLen is the shortest API key or URL password that is redacted.
const minSecretLen = 4

// Defaults for zero Config fields.
const (
	DefaultName             = "openai"
	DefaultIdleTimeout      = 120 * time.Second
	DefaultMaxRetries       = 3
	DefaultRetryBaseDelay   = 500 * time.Millisecond
	DefaultRetryMaxDelay    = 10 * time.Second
	DefaultContextMaxTokens = 128000
)

// maxRetryAfter caps how long a Retry-After header can make us wait: a
// turn should fail visibly rather than sit silent for minutes.
const maxRetryAfter = 30 * time.Second

// Config configures a Provider. Zero fields take the defaults above.
type Config struct {
	// Name is the configured provider name, used in messages and logs.
	Name string
	// BaseURL is the API root, such as https://api.openai.com/v1; requests
	// go to BaseURL + "/chat/completions" or, on the Responses wire,
	// BaseURL + "/responses".
	BaseURL string
	// Wire is the request format: WireChat (the default, also for "") or
	// WireResponses.
	Wire string
	// APIKey is the resolved key, sent as "Authorization: Bearer" when not
	// empty. It never appears in errors or logs.
	APIKey string
	// Model is the default model, used when a Request names none.
	Model            string
	ContextMaxTokens int64
	// Timeout bounds a whole Stream call, retries included; 0 means none.
	Timeout time.Duration
	// IdleTimeout fails a request when the provider sends no byte for that
	// long while we wait for it (default 120s; negative disables).
	IdleTimeout time.Duration
	// Headers are extra HTTP headers sent with every request.
	Headers map[string]string
	// MaxRetries is how many times a retryable failure is retried (default
	// 3; negative means never).
	MaxRetries int
	// RetryBaseDelay is the first backoff (default 500ms); each retry
	// doubles it up to RetryMaxDelay (default 10s).
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// Limits bound each reply; zero fields mean the protocol's limits.
	Limits provider.Limits
	// Logger receives retry and failure diagnostics (default: discarded).
	Logger *slog.Logger
	// UserAgent is sent as User-Agent (default version.UserAgent()).
	UserAgent string
	// HTTPClient sends the requests (default: a client with its own
	// transport). Leave its Timeout zero: it would cut long streams; use
	// Timeout and IdleTimeout instead.
	HTTPClient *http.Client
}

// Wires of Config.Wire: the values of a provider's wire_api setting.
const (
	WireChat      = "chat"
	WireResponses = "responses"
)

// Provider streams chat completions or responses from an OpenAI-compatible
// endpoint. It is safe for concurrent use.
type Provider struct {
	cfg    Config
	wire   wire
	limits provider.Limits
	log    *slog.Logger
	http   *http.Client
	doer   *doer
	// sleep waits between retries; tests replace it to observe backoff.
	sleep func(ctx context.Context, d time.Duration) error
	// jitter maps a backoff to the actual wait; tests make it exact.
	jitter func(d time.Duration) time.Duration
	// secrets are redacted from every message.
	secrets []string
	// plainModels holds the models (string → true) that refused
	// encrypted reasoning on the Responses wire: they are sent requests
	// without it.
	plainModels sync.Map
	// hostedOnce limits the warning that the chat wire cannot offer
	// hosted web search to one per provider.
	hostedOnce sync.Once
	// models caches the first model listing (models.go).
	modelsMu sync.Mutex
	models   modelList
	// modelsTimeout bounds the listing (ModelsTimeout; tests shorten it).
	modelsTimeout time.Duration
}

var _ provider.Provider = (*Provider)(nil)

// New validates cfg and returns a Provider.
func New(cfg Config) (*Provider, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("provider %q: base_url %q is not an http(s) URL", cfg.Name, redactURL(cfg.BaseURL))
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	var w wire
	switch cfg.Wire {
	case "", WireChat:
		cfg.Wire, w = WireChat, chatWire{}
	case WireResponses:
		w = responsesWire{}
	default:
		return nil, fmt.Errorf("provider %q: wire %q is not %q or %q", cfg.Name, cfg.Wire, WireChat, WireResponses)
	}
	if cfg.ContextMaxTokens <= 0 {
		cfg.ContextMaxTokens = DefaultContextMaxTokens
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	} else if cfg.MaxRetries < 0 {
		cfg.MaxRetries = 0
	}
	if cfg.RetryBaseDelay <= 0 {
		cfg.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if cfg.RetryMaxDelay <= 0 {
		cfg.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = version.UserAgent()
	}
	for k := range cfg.Headers {
		if !validHeaderName(k) {
			return nil, fmt.Errorf("provider %q: invalid header name %q", cfg.Name, k)
		}
	}
	p := &Provider{
		cfg:    cfg,
		wire:   w,
		limits: cfg.Limits.WithDefaults(),
		log:    cfg.Logger,
		http:   cfg.HTTPClient,
		sleep:  sleepCtx,
		jitter: halfJitter,

		modelsTimeout: ModelsTimeout,
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.log = p.log.With("provider", cfg.Name)
	if p.http == nil {
		p.http = &http.Client{Transport: newTransport()}
	}
	// A key or password of a few characters is no real secret, and
	// replacing every occurrence of it would garble every message.
	if len(cfg.APIKey) >= minSecretLen {
		p.secrets = append(p.secrets, cfg.APIKey)
	}
	if pw, ok := u.User.Password(); ok && len(pw) >= minSecretLen {
		p.secrets = append(p.secrets, pw)
	}
	for _, v := range cfg.Headers {
		// Header values may be credentials too (api-key, X-Token...); short
		// ones are not worth redacting and would mangle messages.
		if len(v) >= 8 {
			p.secrets = append(p.secrets, v)
		}
	}
	// Redact longer secrets first, so one that contains another is gone whole.
	slices.SortFunc(p.secrets, func(a, b string) int { return len(b) - len(a) })
	p.doer = &doer{p: p}
	return p, nil
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

// Name is the configured provider name.
func (p *Provider) Name() string { return p.cfg.Name }

// Model is the default model.
func (p *Provider) Model() string { return p.cfg.Model }

// ContextMaxTokens is the configured context size.
func (p *Provider) ContextMaxTokens() int64 { return p.cfg.ContextMaxTokens }

// CloseIdleConnections closes the keep-alive connections of the HTTP
// client, for shutdown and for leak-checked tests.
func (p *Provider) CloseIdleConnections() { p.http.CloseIdleConnections() }

// errTimeout is the cause of the context that enforces Config.Timeout.
var errTimeout = errors.New("provider request timeout")

// Stream sends req and streams the reply; see provider.Provider.
func (p *Provider) Stream(ctx context.Context, req provider.Request, h provider.Handler) (*provider.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sctx := ctx
	if p.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeoutCause(ctx, p.cfg.Timeout, errTimeout)
		defer cancel()
	}
	send := func() (*call, *http.Response, error) {
		path, payload, err := p.wire.encode(p, req)
		if err != nil {
			return nil, nil, err
		}
		hreq, err := p.newHTTPRequest(sctx, path, payload)
		if err != nil {
			return nil, nil, err
		}
		c := &call{}
		c.onRetry, _ = h.(provider.RetryHandler)
		resp, err := p.doer.do(c, hreq)
		if err != nil {
			return nil, nil, p.classify(ctx, sctx, c, err)
		}
		return c, resp, nil
	}
	c, resp, err := send()
	if err != nil {
		model := p.requestModel(req)
		if !p.rejectsEncryptedReasoning(model, err) {
			return nil, err
		}
		// Encode the request again without encrypted reasoning, and keep
		// it so for this model only if that is accepted.
		refusal := err
		p.plainModels.Store(model, true)
		if c, resp, err = send(); err != nil {
			p.plainModels.Delete(model)
			return nil, err
		}
		p.log.Warn("the model refused encrypted reasoning; it is no longer asked for or sent back to this model",
			"model", model, "error", refusal.Error())
	}
	body := c.body
	defer body.Close()

	sse := newSSEReader(resp.Body, p.limits.SSEEventBytes)
	dec := p.wire.decoder(p, h)
	for {
		name, data, err := sse.next()
		switch {
		case err == io.EOF:
			if ferr := body.failure(); ferr != nil {
				return nil, ferr
			}
			return dec.end(sse.done)
		case err == errEventLimit:
			return nil, body.fail(p.errorf(provider.CodeResponseLimit, "an SSE event exceeds %d bytes", p.limits.SSEEventBytes))
		case err != nil:
			return nil, p.classify(ctx, sctx, c, err)
		}
		done, err := dec.event(name, data)
		if err != nil {
			return nil, err
		}
		if done {
			// The reply is complete: what may follow (a [DONE], the end
			// of the body) adds nothing, so the stream is not waited on.
			return dec.end(true)
		}
	}
}

// wire is one of the two OpenAI request and stream formats.
type wire interface {
	// encode maps req to the request body and the path it is POSTed to.
	encode(p *Provider, req provider.Request) (path string, body []byte, err error)
	// decoder returns the state of one streamed reply.
	decoder(p *Provider, h provider.Handler) streamDecoder
}

// streamDecoder turns the events of one reply into a Response. Errors it
// returns are *provider.Error values or the Handler's error.
type streamDecoder interface {
	// event handles one SSE event, its name (empty for the default,
	// "message") and its data; done reports that the reply is complete.
	// Each wire decides which names it reads and ignores the others
	// (keep-alive pings, a vendor's own events).
	event(name, data []byte) (done bool, err error)
	// end is called when the stream ends; sawDone says whether the
	// server marked the end ("[DONE]", or a terminal event).
	end(sawDone bool) (*provider.Response, error)
}

// classify maps a failure of the request or of the stream to what Stream
// returns: ctx.Err() when the caller cancelled, a *provider.Error otherwise.
func (p *Provider) classify(ctx, sctx context.Context, c *call, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if context.Cause(sctx) == errTimeout {
		return p.errorf(provider.CodeProviderError, "request timed out after %s", seconds(p.cfg.Timeout))
	}
	if pe, ok := provider.AsError(err); ok {
		return pe
	}
	if ferr := c.body.failure(); ferr != nil {
		return ferr
	}
	return p.wrapf(provider.CodeProviderError, err, "request failed: %v", err)
}

// newHTTPRequest returns the POST of body to path with the headers of a
// streaming request; the doer adds User-Agent and the configured headers.
func (p *Provider) newHTTPRequest(ctx context.Context, path string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.cfg.BaseURL+path, bytes.NewReader(body))
	if err != nil {
		// The error would quote the URL, which may hold a password.
		return nil, p.errorf(provider.CodeProviderError, "request failed: cannot build the request for %s", redactURL(p.cfg.BaseURL))
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	if p.cfg.APIKey != "" {
		h.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	return req, nil
}

// newTransport is the default transport of a provider: Go's default, whose
// connections acknowledge reads at once (quickAckDial).
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t.DialContext = quickAckDial(d.DialContext)
	return t
}
