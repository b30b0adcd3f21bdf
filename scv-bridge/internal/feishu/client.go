// Package feishu is SCV's adapter for Feishu and Lark: the tenant access
// token, the long connection that receives events (package frame carries
// its wire format), typed inbound events, and sending text, posts, files,
// streaming CardKit cards and approval cards within the platform's rate
// limits. It knows nothing of sessions or storage: the bridge core drives
// it, stores each event in its Handler before the event is acknowledged,
// and passes its outbox row ids as idempotency keys.
package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Base URLs of the two platforms.
const (
	FeishuBaseURL = "https://open.feishu.cn"
	LarkBaseURL   = "https://open.larksuite.com"
)

// maxJSONResponse bounds a JSON answer read into memory.
const maxJSONResponse = 4 << 20

// Options configure a Client.
type Options struct {
	// AppID and AppSecret are the app's credentials. AppSecret is never
	// logged or put in an error.
	AppID     string
	AppSecret string
	// BaseURL is FeishuBaseURL (the default), LarkBaseURL, or a test server.
	BaseURL string
	// HTTPClient makes the requests; http.DefaultClient when nil.
	HTTPClient *http.Client
	// Logger receives diagnostics; slog.Default when nil.
	Logger *slog.Logger
	// TokenRefreshBefore is how long before its expiry the token is
	// renewed; 30 minutes when zero.
	TokenRefreshBefore time.Duration
	// MaxRetries bounds the retries of a rate-limited or failed call; 3
	// when zero, none when negative.
	MaxRetries int
	// MaxRetryWait caps one wait before a retry, whatever the platform
	// asks; 60 s when zero.
	MaxRetryWait time.Duration
	// PerRecipientPerSecond is the send rate to one user or chat; 5 (the
	// platform's limit) when zero.
	PerRecipientPerSecond int
	// MinStreamInterval is the least time between two updates of a
	// streaming card; 500 ms when zero.
	MinStreamInterval time.Duration
}

// String describes o without its secret, so that printing the options
// (%v, %+v, %#v) never shows it.
func (o Options) String() string {
	return fmt.Sprintf("{app_id=%s app_secret=[redacted] base_url=%s}", o.AppID, o.BaseURL)
}

// GoString is String for %#v.
func (o Options) GoString() string { return "feishu.Options" + o.String() }

// LogValue implements slog.LogValuer without the secret.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(slog.String("app_id", o.AppID), slog.String("app_secret", "[redacted]"), slog.String("base_url", o.BaseURL))
}

// Client talks to the open platform's HTTP API. It is safe for concurrent
// use.
type Client struct {
	opts    Options
	base    string
	http    *http.Client
	log     *slog.Logger
	limiter *recipientLimiter

	mu       sync.Mutex
	token    string
	tokenExp time.Time
}

// New checks o and returns a Client.
func New(o Options) (*Client, error) {
	if o.AppID == "" || o.AppSecret == "" {
		return nil, fmt.Errorf("feishu: the app id and the app secret are both required: %w", errBadInput)
	}
	if o.BaseURL == "" {
		o.BaseURL = FeishuBaseURL
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("feishu: base_url %q is not an http(s) URL such as %s: %w", o.BaseURL, FeishuBaseURL, errBadInput)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.TokenRefreshBefore == 0 {
		o.TokenRefreshBefore = 30 * time.Minute
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 3
	}
	if o.MaxRetryWait == 0 {
		o.MaxRetryWait = time.Minute
	}
	if o.PerRecipientPerSecond == 0 {
		o.PerRecipientPerSecond = 5
	}
	if o.MinStreamInterval == 0 {
		o.MinStreamInterval = 500 * time.Millisecond
	}
	return &Client{
		opts: o,
		base: strings.TrimRight(o.BaseURL, "/"),
		http: o.HTTPClient,
		log:  o.Logger,
		// A tenth of a second of margin: the platform counts arrivals, and
		// requests do not all take the same time to arrive.
		limiter: newRecipientLimiter(o.PerRecipientPerSecond, 1100*time.Millisecond),
	}, nil
}

// envelope is the shape of every JSON answer.
type envelope struct {
	Code int             `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
	raw  []byte
}

// tenantToken returns a valid tenant access token, fetching a new one when
// none is cached or the cached one expires within TokenRefreshBefore.
func (c *Client) tenantToken(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && time.Until(c.tokenExp) > c.opts.TokenRefreshBefore {
		return c.token, nil
	}
	body, _ := json.Marshal(map[string]string{"app_id": c.opts.AppID, "app_secret": c.opts.AppSecret})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/open-apis/auth/v3/tenant_access_token/internal", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("feishu: token request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("feishu: requesting a tenant access token: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONResponse))
	if err != nil {
		return "", fmt.Errorf("feishu: reading the tenant access token: %w", err)
	}
	var tr struct {
		Code   int    `json:"code"`
		Msg    string `json:"msg"`
		Token  string `json:"tenant_access_token"`
		Expire int    `json:"expire"`
	}
	if err := json.Unmarshal(raw, &tr); err != nil || resp.StatusCode != http.StatusOK || tr.Code != 0 || tr.Token == "" {
		return "", &APIError{Op: "tenant access token", HTTPStatus: resp.StatusCode, Code: tr.Code, Msg: tr.Msg}
	}
	c.token = tr.Token
	c.tokenExp = time.Now().Add(time.Duration(tr.Expire) * time.Second)
	return c.token, nil
}

// dropToken forgets tok, when it is still the cached one, so the next call
// fetches another.
func (c *Client) dropToken(tok string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == tok {
		c.token = ""
	}
}

// request is one call of the HTTP API.
type request struct {
	op          string
	method      string
	path        string
	query       url.Values
	jsonBody    any
	body        []byte // with contentType, instead of jsonBody
	contentType string
	// recipient, when set, is rate-limited to PerRecipientPerSecond.
	recipient string
	// noRetry makes a rate-limited call fail at once (streaming frames
	// are skipped rather than delayed).
	noRetry bool
	// whole decodes the whole answer into out, not its data (for the
	// few calls that answer beside data).
	whole bool
}

// call makes r and decodes the answer's data into out (when not nil). It
// renews the token once when the platform refuses it and retries rate
// limits and server errors up to MaxRetries times, waiting what the
// platform asks (x-ogw-ratelimit-reset) or a growing backoff.
func (c *Client) call(ctx context.Context, r request, out any) error {
	body := r.body
	if r.jsonBody != nil {
		var err error
		if body, err = json.Marshal(r.jsonBody); err != nil {
			return fmt.Errorf("feishu %s: encoding the request: %w", r.op, err)
		}
		r.contentType = "application/json; charset=utf-8"
	}
	renewed := false
	for attempt := 0; ; attempt++ {
		tok, err := c.tenantToken(ctx)
		if err != nil {
			return err
		}
		// After the token: a send is counted as close as can be to when
		// it reaches the platform, which counts arrivals.
		if r.recipient != "" {
			if err := c.limiter.wait(ctx, r.recipient); err != nil {
				return err
			}
		}
		env, err := c.once(ctx, r, body, tok)
		if err == nil {
			if r.whole {
				env.Data = env.raw
			}
			if out != nil && len(env.Data) > 0 && string(env.Data) != "null" {
				if err := json.Unmarshal(env.Data, out); err != nil {
					return fmt.Errorf("feishu %s: decoding the answer: %w", r.op, err)
				}
			}
			return nil
		}
		var ae *APIError
		if errors.As(err, &ae) && tokenCode(ae.Code) && !renewed {
			renewed = true
			c.dropToken(tok)
			c.log.Info("Feishu refused the tenant access token; renewing it", "op", r.op, "code", ae.Code)
			continue
		}
		if r.noRetry || attempt >= c.opts.MaxRetries || !IsRetryable(err) {
			return err
		}
		wait := c.retryWait(ae, attempt)
		c.log.Warn("Feishu call failed; retrying", "op", r.op, "attempt", attempt+1, "wait", wait, "err", err)
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

func (c *Client) retryWait(ae *APIError, attempt int) time.Duration {
	wait := time.Duration(200<<attempt) * time.Millisecond
	if ae != nil && ae.RetryAfter > 0 {
		wait = ae.RetryAfter
	}
	return min(wait, c.opts.MaxRetryWait)
}

// once makes one HTTP request and returns the envelope of a success, or
// an error: an *APIError for an answer, another error for a transport
// failure.
func (c *Client) once(ctx context.Context, r request, body []byte, tok string) (*envelope, error) {
	u := c.base + r.path
	if len(r.query) > 0 {
		u += "?" + r.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("feishu %s: %w", r.op, err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("feishu %s: %w", r.op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONResponse))
	if err != nil {
		return nil, fmt.Errorf("feishu %s: reading the answer: %w", r.op, err)
	}
	var env envelope
	jerr := json.Unmarshal(raw, &env)
	if resp.StatusCode == http.StatusOK && jerr == nil && env.Code == 0 {
		env.raw = raw
		return &env, nil
	}
	ae := &APIError{Op: r.op, HTTPStatus: resp.StatusCode, Code: env.Code, Msg: env.Msg}
	if s := resp.Header.Get("x-ogw-ratelimit-reset"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			ae.RetryAfter = time.Duration(n) * time.Second
		}
	}
	return nil, ae
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// BotInfo is the bot's own identity.
type BotInfo struct {
	OpenID  string `json:"open_id"`
	AppName string `json:"app_name"`
}

// Bot returns the bot's identity: its open_id is how a group message
// mentions it (MessageEvent.MentionsOpenID).
func (c *Client) Bot(ctx context.Context) (BotInfo, error) {
	var out struct {
		Bot BotInfo `json:"bot"`
	}
	err := c.call(ctx, request{op: "bot info", method: http.MethodGet, path: "/open-apis/bot/v3/info", whole: true}, &out)
	if err == nil && out.Bot.OpenID == "" {
		err = &APIError{Op: "bot info", HTTPStatus: http.StatusOK, Msg: "the answer has no open_id; is the bot capability enabled?"}
	}
	return out.Bot, err
}
