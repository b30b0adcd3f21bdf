// Package webfetch is the web_fetch tool: one public http or https URL,
// fetched with GET through the netguard address policy and returned as
// text. HTML becomes Markdown-like text with numbered link references;
// other text types pass through; binary types are refused before their
// body is read. A long page is returned in parts selected by a character
// offset, and the pages a session fetched are kept in a small cache so
// reading the next part does not download again.
package webfetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/netguard"
	"github.com/scv-cli/scv/scv-server/internal/oneline"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/version"
)

//go:embed description.md
var description string

const schema = `{
  "type": "object",
  "properties": {
    "url": {"type": "string", "minLength": 1, "maxLength": 8192, "description": "The http or https URL to fetch."},
    "offset": {"type": "integer", "minimum": 0, "description": "Character offset into the page's text to return from (default 0); a truncated result names the offset of its next part."}
  },
  "required": ["url"],
  "additionalProperties": false
}`

// Defaults of Options.
const (
	DefaultMaxBytes     = 2 << 20
	DefaultMaxRedirects = 5
	DefaultTimeout      = 30 * time.Second
	// defaultOutputLimit is used when the call's Env has none.
	defaultOutputLimit = 64 << 10
)

// Options configure the tool; the zero value of a field means its default.
type Options struct {
	// MaxBytes bounds the bytes downloaded (decompressed) per fetch
	// (web.fetch_max_bytes; default 2 MiB).
	MaxBytes int64
	// MaxRedirects bounds the redirects followed (web.max_redirects;
	// default 5; negative: none).
	MaxRedirects int
	// Timeout bounds a whole fetch, body included
	// (web.fetch_timeout_seconds; default 30 s).
	Timeout time.Duration
	// AllowPrivate lifts the address policy
	// (web.allow_private_addresses).
	AllowPrivate bool
	// AllowedPorts are the ports fetched URLs and redirects may connect
	// to (web.allowed_ports); empty means netguard.DefaultPorts. They
	// apply to Policy too when it has no Ports of its own.
	AllowedPorts []netguard.PortRange
	// AutoApproveDomains are the hosts whose HTTPS URLs run without
	// approval (web.auto_approve_domains): "docs.rs" is that host only,
	// ".rust-lang.org" is rust-lang.org and every subdomain of it.
	AutoApproveDomains []string
	// UserAgent is sent with every request; default scv/<version>.
	UserAgent string
	// Policy replaces the address policy built from AllowPrivate (tests:
	// a policy whose exceptions are httptest servers).
	Policy *netguard.Policy
	// Resolver replaces the pure-Go DNS resolver (tests).
	Resolver netguard.Resolver
	// RootCAs replaces the system's certificate authorities (tests: the
	// httptest TLS server's certificate).
	RootCAs *x509.CertPool
}

// Tool is the web_fetch tool. It holds the session's page cache, so the
// server builds one per session.
type Tool struct {
	opts   Options
	policy *netguard.Policy
	client *http.Client
	cache  *cache
	// exact and suffixes are the allowlist: exact hosts, and ".domain"
	// entries as suffixes (with the leading dot) plus the domain itself.
	exact    map[string]bool
	suffixes []string
}

// New returns the tool with its own HTTP client and cache.
func New(o Options) *Tool {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	switch {
	case o.MaxRedirects == 0:
		o.MaxRedirects = DefaultMaxRedirects
	case o.MaxRedirects < 0:
		o.MaxRedirects = 0
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.UserAgent == "" {
		o.UserAgent = version.UserAgent()
	}
	t := &Tool{opts: o, policy: o.Policy, cache: newCache(cacheEntries, max(cacheBytes, int(min(2*o.MaxBytes, 1<<30)))), exact: map[string]bool{}}
	if t.policy == nil {
		t.policy = &netguard.Policy{AllowPrivate: o.AllowPrivate}
	}
	if len(o.AllowedPorts) > 0 && len(t.policy.Ports) == 0 {
		p := *t.policy
		p.Ports = o.AllowedPorts
		t.policy = &p
	}
	for _, d := range o.AutoApproveDomains {
		h, sub, err := parseDomain(d)
		if err != nil {
			continue // config validation reports bad entries (CheckDomain); here they match nothing
		}
		if sub {
			t.exact[h.Name] = true
			t.suffixes = append(t.suffixes, "."+h.Name)
			continue
		}
		t.exact[strings.Trim(h.String(), "[]")] = true
	}
	dialer := &netguard.Dialer{Policy: t.policy, Resolver: o.Resolver}
	t.client = &http.Client{
		Transport: &http.Transport{
			// Proxy variables are ignored: through a proxy the address
			// check would see only the proxy.
			Proxy:                  nil,
			DialContext:            dialer.DialContext,
			ForceAttemptHTTP2:      true,
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs},
			TLSHandshakeTimeout:    10 * time.Second,
			ResponseHeaderTimeout:  o.Timeout,
			MaxResponseHeaderBytes: maxHeaderBytes,
			// No connection outlives its call: paging reads the cache,
			// and no idle-connection goroutine stays behind.
			DisableKeepAlives: true,
		},
		CheckRedirect: t.checkRedirect,
		// No Jar: no cookies are kept or sent.
	}
	return t
}

var _ tools.Tool = (*Tool)(nil)

// CheckDomain reports whether entry is a valid web.auto_approve_domains
// entry: a host name or IP address ("docs.rs"), or a domain with a leading
// "." or "*." (".rust-lang.org"), which also matches every subdomain.
func CheckDomain(entry string) error {
	_, _, err := parseDomain(entry)
	return err
}

func parseDomain(entry string) (h netguard.Host, sub bool, err error) {
	d := strings.TrimSpace(entry)
	switch {
	case strings.HasPrefix(d, "*."):
		d, sub = d[2:], true
	case strings.HasPrefix(d, "."):
		d, sub = d[1:], true
	}
	h, err = netguard.ParseHost(d)
	if err != nil {
		return h, sub, fmt.Errorf("auto-approve domain %q: %w", entry, err)
	}
	if sub && h.Name == "" {
		return h, sub, fmt.Errorf("auto-approve domain %q: a leading dot needs a domain name, not an IP address", entry)
	}
	return h, sub, nil
}

type args struct {
	URL    string `json:"url"`
	Offset *int64 `json:"offset"`
}

// Spec describes the tool.
func (*Tool) Spec() tools.Spec {
	return tools.Spec{Name: "web_fetch", Description: strings.TrimSpace(description), Schema: json.RawMessage(schema)}
}

// Prepare checks the URL and its IP literal, if it has one. An HTTPS URL
// on an allowlisted host is read-only; every other URL is network risk:
// the URL itself can carry what the model read to a host a page chose.
func (t *Tool) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("web_fetch arguments: %w", err)
	}
	u, h, err := t.checkURL(a.URL)
	if err != nil {
		return nil, err
	}
	if err := t.checkTarget(u, h); err != nil {
		return nil, err
	}
	var offset int64
	if a.Offset != nil {
		offset = *a.Offset
	}
	auto := t.autoApproved(u, h)
	plan := &tools.Plan{
		Risk:    protocol.RiskNetwork,
		Summary: "Fetch " + u.String(),
		Run: func(ctx context.Context) (tools.Result, error) {
			return t.run(ctx, env, u, auto, offset)
		},
	}
	if auto {
		plan.Risk = protocol.RiskReadOnly
		return plan, nil
	}
	key := "web:" + u.Host
	plan.Rule = &tools.Rule{Key: key, Description: "web_fetch of any URL on " + u.Host + " (http or https)"}
	plan.Keys = []string{key}
	return plan, nil
}

// checkURL parses and checks a URL: http or https, no credentials, a host
// that is a valid name (converted to punycode) or IP literal, a numeric
// port. It returns the canonical URL (no fragment) and its host.
func (t *Tool) checkURL(full string) (*url.URL, netguard.Host, error) {
	full = strings.TrimSpace(full)
	raw := shown(full) // for messages
	u, err := url.Parse(full)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, netguard.Host{}, fmt.Errorf("the URL %q cannot be parsed: %v", raw, err)
	}
	switch u.Scheme = strings.ToLower(u.Scheme); u.Scheme {
	case "http", "https":
	case "":
		return nil, netguard.Host{}, fmt.Errorf("the URL %q has no scheme; web_fetch needs an absolute http:// or https:// URL", raw)
	default:
		return nil, netguard.Host{}, fmt.Errorf("web_fetch fetches only http and https URLs, and %q has the scheme %q", raw, u.Scheme)
	}
	if u.User != nil {
		return nil, netguard.Host{}, fmt.Errorf("the URL %q carries credentials (user:password@); web_fetch never sends credentials, so remove them from the URL", shown(redactUser(u)))
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, netguard.Host{}, fmt.Errorf("the URL %q has no host; write it as %s://host/path", raw, u.Scheme)
	}
	h, err := netguard.ParseHost(u.Hostname())
	if err != nil {
		return nil, netguard.Host{}, fmt.Errorf("the URL %q has a bad host: %v", raw, err)
	}
	port := u.Port()
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 {
			return nil, netguard.Host{}, fmt.Errorf("the URL %q has the port %q, which is not a number from 1 to 65535", raw, port)
		}
		if port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
			port = ""
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return nil, netguard.Host{}, fmt.Errorf("the URL %q has an empty port", raw)
	}
	u.Host = h.String()
	if port != "" {
		u.Host = net.JoinHostPort(strings.Trim(h.String(), "[]"), port)
	}
	u.Fragment, u.RawFragment = "", ""
	return u, h, nil
}

// redactUser returns u with any user information replaced by "…".
func redactUser(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	c := *u
	c.User = nil
	return strings.Replace(c.String(), "://", "://…@", 1)
}

// urlPort is the port a checked URL connects to: its own, or its
// scheme's.
func urlPort(u *url.URL) uint16 {
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		return uint16(p)
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// checkTarget applies the policy to what a checked URL shows before any
// lookup: its port, and its address when the host is an IP literal. The
// dialer checks again what it connects to.
func (t *Tool) checkTarget(u *url.URL, h netguard.Host) error {
	port := urlPort(u)
	if h.Addr.IsValid() {
		err := t.policy.Check(netip.AddrPortFrom(h.Addr, port))
		var re *netguard.RefusedError
		if errors.As(err, &re) {
			return fmt.Errorf("web_fetch reaches only public addresses: %w (the setting web.allow_private_addresses lifts this)", err)
		}
		if err != nil {
			return portRefusal(u, err)
		}
		return nil
	}
	if err := t.policy.CheckPort(port); err != nil {
		return portRefusal(u, err)
	}
	return nil
}

// portRefusal is the message for a URL whose port the policy refuses.
func portRefusal(u *url.URL, err error) error {
	return fmt.Errorf("web_fetch does not connect to %s: %w; the ports it reaches are set by web.allowed_ports in the user configuration", u.Host, err)
}

// autoApproved reports whether u is an HTTPS URL on an allowlisted host.
func (t *Tool) autoApproved(u *url.URL, h netguard.Host) bool {
	// Any port: the allowlist names hosts the user trusts, whoever
	// listens on which port of them.
	if u.Scheme != "https" {
		return false
	}
	host := h.Name
	if h.Addr.IsValid() {
		host = h.Addr.String()
	}
	if t.exact[host] {
		return true
	}
	for _, s := range t.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	return false
}

func (t *Tool) run(ctx context.Context, env tools.Env, u *url.URL, auto bool, offset int64) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	key := fmt.Sprintf("%t %s", auto, u)
	requested := u.String()
	doc, ok := (*document)(nil), false
	if offset > 0 {
		doc, ok = t.cache.get(key)
	}
	limit := env.OutputLimit
	if limit <= 0 {
		limit = defaultOutputLimit
	}
	if !ok {
		r, err := t.fetch(ctx, u, auto)
		if err != nil {
			var f *failure
			if errors.As(err, &f) {
				return tools.Failed(oneline.Bound(f.msg, limit)), nil
			}
			return tools.Result{}, err
		}
		doc = toDocument(r)
		t.cache.put(key, doc)
	}
	return render(doc, requested, offset, limit), nil
}

// toDocument converts a response body to text.
func toDocument(r *response) *document {
	d := &document{URL: r.URL, Status: r.Status, OK: r.Code >= 200 && r.Code < 300, ContentType: r.ContentType, Cut: r.Cut}
	text := decodeText(r.Body, r.ContentType, r.Kind == kindHTML)
	if r.Kind == kindHTML {
		p := safeConvert([]byte(text), r.URL)
		d.Title, text = p.Title, p.Text
	}
	d.Text = text
	d.Runes = utf8.RuneCountInString(text)
	return d
}

// safeConvert converts HTML, falling back to the raw text should the
// converter panic on some input: a page must not take the server down.
func safeConvert(src []byte, base string) (p page) {
	defer func() {
		if recover() != nil {
			p = page{Text: validText(string(src))}
		}
	}()
	return convertHTML(src, base)
}
