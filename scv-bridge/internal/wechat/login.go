package wechat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	qrcode "github.com/skip2/go-qrcode"
)

// Credentials are what a QR login yields: the account's binding.
type Credentials struct {
	// Token is the bot token; never printed.
	Token string `json:"bot_token"`
	// BaseURL is the API host to use from now on.
	BaseURL string `json:"base_url"`
	// BotID is the bot's id (…@im.bot).
	BotID string `json:"ilink_bot_id"`
	// OwnerID is ilink_user_id: the WeChat user who scanned the code, the
	// owner of the account's sessions.
	OwnerID string `json:"ilink_user_id"`
	// BoundAt is when the login was confirmed.
	BoundAt time.Time `json:"bound_at"`
}

// String describes c without its token.
func (c Credentials) String() string {
	return fmt.Sprintf("{bot_token=[redacted] base_url=%s ilink_bot_id=%s ilink_user_id=%s}", c.BaseURL, c.BotID, c.OwnerID)
}

// GoString is String for %#v.
func (c Credentials) GoString() string { return "wechat.Credentials" + c.String() }

// LogValue implements slog.LogValuer without the token.
func (c Credentials) LogValue() slog.Value {
	return slog.GroupValue(slog.String("bot_token", "[redacted]"), slog.String("base_url", c.BaseURL),
		slog.String("ilink_bot_id", c.BotID), slog.String("ilink_user_id", c.OwnerID))
}

// LoginOptions configure Login.
type LoginOptions struct {
	// BaseURL is where the QR code comes from; DefaultBaseURL when empty.
	BaseURL string
	// HTTPClient makes the requests; http.DefaultClient when nil.
	HTTPClient *http.Client
	// Out receives the QR code and the progress, for a person at a
	// terminal; nothing is drawn when nil.
	Out io.Writer
	// MaxCodes bounds the QR codes fetched (each lives about two minutes);
	// 4 when zero.
	MaxCodes int
	// PollTimeout bounds one status poll, which the server holds ~35 s;
	// 45 s when zero.
	PollTimeout time.Duration
	// Interval is the pause between two status answers; 1 s when zero.
	Interval time.Duration
}

// Errors of a login a person must act on.
var (
	ErrLoginExpired  = errors.New("the QR code expired too many times without being confirmed; run the login again")
	ErrLoginRefused  = errors.New("WeChat refused the binding")
	ErrAlreadyBound  = errors.New("this WeChat account is already bound to another bot; unbind it in WeChat (ClawBot settings) first")
	ErrVerifyNeeded  = errors.New("WeChat asks for a pairing code, which this version cannot answer; bind from a phone that does not ask, or update SCV")
	errUnknownStatus = errors.New("unknown QR status")
)

type qrStatus struct {
	Status       string `json:"status"`
	RedirectHost string `json:"redirect_host"`
	Token        string `json:"bot_token"`
	BotID        string `json:"ilink_bot_id"`
	UserID       string `json:"ilink_user_id"`
	BaseURL      string `json:"baseurl"`
}

// Login binds an account by QR code: it fetches a code, draws it on Out,
// follows its status (waiting, scanned, confirmed; a fresh code when one
// expires; another host when told to redirect) and returns the
// credentials at confirmation.
func Login(ctx context.Context, o LoginOptions) (Credentials, error) {
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	o.MaxCodes = cmpOr(o.MaxCodes, 4)
	o.PollTimeout = cmpOr(o.PollTimeout, 45*time.Second)
	o.Interval = cmpOr(o.Interval, time.Second)
	for codes := 1; codes <= o.MaxCodes; codes++ {
		code, img, err := fetchQR(ctx, o)
		if err != nil {
			return Credentials{}, err
		}
		drawQR(o.Out, img)
		creds, err := followQR(ctx, o, code)
		if errors.Is(err, errExpired) {
			fmt.Fprintln(o.Out, "The QR code expired; here is a fresh one.")
			continue
		}
		return creds, err
	}
	return Credentials{}, ErrLoginExpired
}

var errExpired = errors.New("expired")

// followQR polls one code's status until it is confirmed, fails or
// expires (errExpired).
func followQR(ctx context.Context, o LoginOptions, code string) (Credentials, error) {
	pollBase := o.BaseURL
	scanned := false
	fails := 0
	for {
		st, err := pollQR(ctx, o, pollBase, code)
		var ae *APIError
		if err != nil && ctx.Err() == nil && fails < 3 && (!errors.As(err, &ae) || ae.HTTPStatus >= 500) {
			// A network hiccup or a busy server must not cost the code.
			fails++
			if !sleep(ctx, o.Interval) {
				return Credentials{}, ctx.Err()
			}
			continue
		}
		if err != nil {
			return Credentials{}, err
		}
		fails = 0
		switch st.Status {
		case "wait", "":
		case "scaned":
			if !scanned {
				fmt.Fprintln(o.Out, "Scanned. Confirm the binding in WeChat.")
				scanned = true
			}
		case "scaned_but_redirect":
			if st.RedirectHost == "" || strings.ContainsAny(st.RedirectHost, "/?#@ ") {
				return Credentials{}, fmt.Errorf("wechat login: a redirect to an unusable host %q: %w", st.RedirectHost, ErrLoginRefused)
			}
			// Same scheme as the host that redirected: https in use,
			// http only for a local test server.
			u, _ := url.Parse(o.BaseURL)
			pollBase = u.Scheme + "://" + st.RedirectHost
			continue
		case "expired":
			return Credentials{}, errExpired
		case "confirmed":
			if st.Token == "" || st.UserID == "" {
				return Credentials{}, fmt.Errorf("wechat login: confirmed without a bot token or a user id: %w", ErrLoginRefused)
			}
			base := st.BaseURL
			if base == "" {
				base = pollBase
			}
			if p, err := url.Parse(base); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
				// Some answers name a bare host.
				base = "https://" + strings.TrimSuffix(base, "/")
			}
			fmt.Fprintln(o.Out, "Bound.")
			return Credentials{Token: st.Token, BaseURL: strings.TrimSuffix(base, "/"), BotID: st.BotID, OwnerID: st.UserID, BoundAt: time.Now().UTC()}, nil
		case "need_verifycode", "verify_code_blocked":
			return Credentials{}, ErrVerifyNeeded
		case "binded_redirect":
			return Credentials{}, ErrAlreadyBound
		default:
			return Credentials{}, fmt.Errorf("wechat login: status %q: %w", st.Status, errUnknownStatus)
		}
		if !sleep(ctx, o.Interval) {
			return Credentials{}, ctx.Err()
		}
	}
}

func fetchQR(ctx context.Context, o LoginOptions) (code, img string, err error) {
	var out struct {
		Code string `json:"qrcode"`
		Img  string `json:"qrcode_img_content"`
	}
	if err := getJSON(ctx, o.HTTPClient, o.BaseURL+"/ilink/bot/get_bot_qrcode?bot_type=3", &out); err != nil {
		return "", "", fmt.Errorf("wechat login: fetching the QR code: %w", err)
	}
	if out.Code == "" || out.Img == "" {
		return "", "", fmt.Errorf("wechat login: the QR code answer is empty: %w", ErrLoginRefused)
	}
	return out.Code, out.Img, nil
}

func pollQR(ctx context.Context, o LoginOptions, base, code string) (qrStatus, error) {
	pctx, cancel := context.WithTimeout(ctx, o.PollTimeout)
	defer cancel()
	var st qrStatus
	err := getJSON(pctx, o.HTTPClient, base+"/ilink/bot/get_qrcode_status?qrcode="+url.QueryEscape(code), &st)
	if err != nil && ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
		return qrStatus{Status: "wait"}, nil // an idle long poll
	}
	if err != nil {
		return st, fmt.Errorf("wechat login: polling the QR status: %w", err)
	}
	return st, nil
}

func getJSON(ctx context.Context, hc *http.Client, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("iLink-App-ClientVersion", "1")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONResponse))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &APIError{Op: "login", HTTPStatus: resp.StatusCode, Msg: strings.TrimSpace(string(raw))}
	}
	return json.Unmarshal(raw, out)
}

// drawQR draws content as a QR code of half-height blocks, with the URL
// below for terminals that cannot show it.
func drawQR(w io.Writer, content string) {
	q, err := qrcode.New(content, qrcode.Medium)
	if err == nil {
		fmt.Fprint(w, q.ToSmallString(false))
	}
	fmt.Fprintf(w, "Scan this code with WeChat (Me > Settings > Plugins > ClawBot), or open %s on the phone.\n", content)
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
