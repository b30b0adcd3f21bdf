// Package wechat is SCV's adapter for WeChat through Tencent's official
// iLink bot API: QR login, getupdates long polling, typed inbound
// messages, CDN media (AES-128-ECB), and sending final messages and media
// within the platform's send budget. It knows nothing of sessions or
// storage: the bridge core drives it, stores each batch before the cursor
// advances, persists the cursor, the peers' context tokens and the budget,
// and passes outbox row ids as client_id.
package wechat

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Default hosts of the platform.
const (
	DefaultBaseURL = "https://ilinkai.weixin.qq.com"
	DefaultCDNURL  = "https://novac2c.cdn.weixin.qq.com/c2c"
)

// botAgent names SCV in base_info, as the official client names itself.
const botAgent = "SCV/1.0"

// maxJSONResponse bounds a JSON answer read into memory.
const maxJSONResponse = 8 << 20

// Errors callers act on.
var (
	// ErrSessionExpired is errcode -14: the bot token no longer works; the
	// account must be bound again (scv channels login wechat).
	ErrSessionExpired = errors.New("the WeChat session expired (errcode -14); bind the account again with the QR code")
	// ErrThrottled is a send refused with ret=-2, or not attempted because
	// the account is still in its penalty time.
	ErrThrottled = errors.New("WeChat refused further sends for now (ret=-2); the account is throttled")
	errBadInput  = errors.New("bad input")
)

// APIError is an answer that is not a success: an HTTP status other than
// 200, or HTTP 200 with a non-zero ret or errcode.
type APIError struct {
	Op         string
	HTTPStatus int
	Ret        int
	ErrCode    int
	Msg        string
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("wechat %s failed: HTTP %d, ret %d, errcode %d", e.Op, e.HTTPStatus, e.Ret, e.ErrCode)
	if e.Msg != "" {
		s += " (" + e.Msg + ")"
	}
	return s
}

// Options configure a Client.
type Options struct {
	// Token is the bot token from the QR login. Never logged.
	Token string
	// BaseURL is the API host the login returned; DefaultBaseURL when empty.
	BaseURL string
	// CDNURL is the media CDN; DefaultCDNURL when empty.
	CDNURL string
	// HTTPClient makes the requests; http.DefaultClient when nil.
	HTTPClient *http.Client
	// Logger receives diagnostics; slog.Default when nil.
	Logger *slog.Logger
	// PollTimeout bounds one getupdates request; the server holds it about
	// 35 s, so 45 s when zero. A timeout means no messages.
	PollTimeout time.Duration
	// MaxMediaBytes caps one download or upload; 100 MiB when zero.
	MaxMediaBytes int64
	// Budget is the send budget shared by every send of the account; a
	// default one (NewBudget(0, 0)) when nil. The core persists its state.
	Budget *Budget
}

// String describes o without its token.
func (o Options) String() string {
	return fmt.Sprintf("{token=[redacted] base_url=%s cdn_url=%s}", o.BaseURL, o.CDNURL)
}

// GoString is String for %#v.
func (o Options) GoString() string { return "wechat.Options" + o.String() }

// LogValue implements slog.LogValuer without the token.
func (o Options) LogValue() slog.Value {
	return slog.GroupValue(slog.String("token", "[redacted]"), slog.String("base_url", o.BaseURL), slog.String("cdn_url", o.CDNURL))
}

// Client talks to the iLink bot API of one bound account. It is safe for
// concurrent use.
type Client struct {
	opts   Options
	http   *http.Client
	log    *slog.Logger
	budget *Budget

	mu       sync.Mutex
	contexts map[string]string // peer → latest context_token
}

// New checks o and returns a Client.
func New(o Options) (*Client, error) {
	if o.Token == "" {
		return nil, fmt.Errorf("wechat: no bot token; bind the account first (scv channels login wechat): %w", errBadInput)
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if o.CDNURL == "" {
		o.CDNURL = DefaultCDNURL
	}
	for _, u := range []string{o.BaseURL, o.CDNURL} {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return nil, fmt.Errorf("wechat: %q is not an http(s) URL such as %s: %w", u, DefaultBaseURL, errBadInput)
		}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PollTimeout == 0 {
		o.PollTimeout = 45 * time.Second
	}
	if o.MaxMediaBytes == 0 {
		o.MaxMediaBytes = 100 << 20
	}
	if o.Budget == nil {
		o.Budget = NewBudget(0, 0)
	}
	return &Client{opts: o, http: o.HTTPClient, log: o.Logger, budget: o.Budget, contexts: map[string]string{}}, nil
}

// Budget returns the client's send budget.
func (c *Client) Budget() *Budget { return c.budget }

// SetContextToken records peer's latest context_token (the core restores
// the persisted ones at start; Poll records new ones itself).
func (c *Client) SetContextToken(peer, token string) {
	if token == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.contexts[peer] = token
}

// ContextToken returns peer's latest context_token, "" when none is known.
func (c *Client) ContextToken(peer string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.contexts[peer]
}

// baseInfo goes into every bot request body.
type baseInfo struct {
	ChannelVersion string `json:"channel_version"`
	BotAgent       string `json:"bot_agent"`
}

func newBaseInfo() baseInfo { return baseInfo{ChannelVersion: "1.0.0", BotAgent: botAgent} }

// result is the status part of every answer.
type result struct {
	Ret     int    `json:"ret"`
	ErrCode int    `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// randomUIN is X-WECHAT-UIN: base64 of the decimal form of a random
// uint32, fresh per request as the official client does.
func randomUIN() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString([]byte(strconv.FormatUint(uint64(binary.BigEndian.Uint32(b[:])), 10)))
}

// post makes one bot call: body in, JSON answer decoded into out (which
// must embed result through the returned value).
func (c *Client) post(ctx context.Context, op, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("wechat %s: %w", op, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.opts.BaseURL+path, bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("wechat %s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("AuthorizationType", "ilink_bot_token")
	req.Header.Set("Authorization", "Bearer "+c.opts.Token)
	req.Header.Set("X-WECHAT-UIN", randomUIN())
	req.Header.Set("iLink-App-ClientVersion", "1")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("wechat %s: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONResponse))
	if err != nil {
		return fmt.Errorf("wechat %s: reading the answer: %w", op, err)
	}
	var r result
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &r) != nil {
		return &APIError{Op: op, HTTPStatus: resp.StatusCode, Msg: http.StatusText(resp.StatusCode)}
	}
	if r.ErrCode == -14 || r.Ret == -14 {
		return fmt.Errorf("wechat %s: %w", op, ErrSessionExpired)
	}
	if r.Ret != 0 || r.ErrCode != 0 {
		return &APIError{Op: op, HTTPStatus: resp.StatusCode, Ret: r.Ret, ErrCode: r.ErrCode, Msg: r.ErrMsg}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("wechat %s: the answer is not the expected JSON: %w", op, err)
		}
	}
	return nil
}
