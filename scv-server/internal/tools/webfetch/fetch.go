package webfetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"

	"github.com/scv-cli/scv/scv-server/internal/netguard"
	"github.com/scv-cli/scv/scv-server/internal/oneline"

	"github.com/scv-cli/scv/shared/textcut"
)

// maxHeaderBytes bounds the response headers the client reads.
const maxHeaderBytes = 64 << 10

// kind is how a content type is handled.
type kind int

const (
	kindSniff  kind = iota // unknown: read, then sniff the bytes
	kindHTML               // converted to text
	kindText               // passed through
	kindBinary             // refused before the body is read
)

// classify maps a media type (lower case, no parameters) to its kind.
func classify(mt string) kind {
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return kindHTML
	case strings.HasPrefix(mt, "text/"),
		mt == "application/json", strings.HasSuffix(mt, "+json"), mt == "application/x-ndjson",
		mt == "application/xml", strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript", mt == "application/ecmascript", mt == "application/x-javascript",
		mt == "application/yaml", mt == "application/x-yaml", mt == "application/toml",
		mt == "application/x-sh", mt == "application/sql", mt == "application/graphql",
		mt == "application/x-www-form-urlencoded", mt == "application/manifest+json":
		return kindText
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"),
		strings.HasPrefix(mt, "font/"), strings.HasPrefix(mt, "model/"),
		mt == "application/octet-stream", mt == "application/pdf", mt == "application/postscript",
		mt == "application/zip", mt == "application/gzip", mt == "application/x-gzip",
		mt == "application/x-tar", mt == "application/x-bzip2", mt == "application/x-xz", mt == "application/zstd",
		mt == "application/x-7z-compressed", mt == "application/vnd.rar", mt == "application/x-rar-compressed",
		mt == "application/java-archive", mt == "application/wasm", mt == "application/x-executable",
		mt == "application/x-msdownload", mt == "application/x-shockwave-flash", mt == "application/vnd.android.package-archive",
		mt == "application/x-iso9660-image", mt == "application/x-apple-diskimage", mt == "application/x-debian-package",
		mt == "application/x-rpm", mt == "application/msword", mt == "application/rtf",
		strings.HasPrefix(mt, "application/vnd.ms-"), strings.HasPrefix(mt, "application/vnd.openxmlformats"),
		strings.HasPrefix(mt, "application/vnd.oasis.opendocument"), strings.HasPrefix(mt, "application/font"),
		strings.HasPrefix(mt, "application/x-font"), mt == "application/vnd.ms-fontobject",
		strings.HasPrefix(mt, "multipart/"):
		return kindBinary
	}
	return kindSniff
}

// response is what one fetch brought back.
type response struct {
	URL         string
	Status      string
	Code        int
	ContentType string // as declared, or as sniffed when none was
	Kind        kind
	Body        []byte
	Cut         bool // the body was longer than MaxBytes
}

// failure is a fetch that failed in a way the model reads.
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

// failf formats a failure, each URL, string and error in it shown within
// maxShown bytes: a redirect target or a header comes from the server,
// bounded by the header limit (64 KiB), not by the output limit.
func failf(format string, a ...any) error {
	for i, v := range a {
		switch v := v.(type) {
		case *url.URL:
			a[i] = shown(v.String())
		case string:
			a[i] = shown(v)
		case error:
			a[i] = shown(v.Error())
		}
	}
	return &failure{fmt.Sprintf(format, a...)}
}

// maxShown bounds a URL or other outside value within a message: longer
// than most browsers take in their address bar.
const maxShown = 2048

// shown is s as one line of at most maxShown bytes, ending in "…" when
// cut.
func shown(s string) string { return oneline.Bound(s, maxShown) }

// autoKey marks a request context whose fetch runs without approval: its
// redirects may go only to allowlisted HTTPS hosts.
type autoKey struct{}

// checkRedirect bounds redirects, re-checks every target URL like the
// first one and keeps the Referer out.
func (t *Tool) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > t.opts.MaxRedirects {
		return failf("%s redirected more than %d times (web.max_redirects); the last redirect went to %s", via[0].URL, t.opts.MaxRedirects, req.URL)
	}
	req.Header.Del("Referer")
	req.Header.Del("Cookie")
	req.Header.Del("Authorization")
	target, h, err := t.checkURL(req.URL.String())
	if err != nil {
		return failf("%s redirected to %s, which web_fetch refuses: %v", via[len(via)-1].URL, redactUser(req.URL), err)
	}
	if err := t.checkTarget(target, h); err != nil {
		return failf("%s redirected to %s, which is refused: %v", via[len(via)-1].URL, target, err)
	}
	if auto, _ := req.Context().Value(autoKey{}).(bool); auto && !t.autoApproved(target, h) {
		return failf("%s redirected to %s, which is not an HTTPS URL on a host in web.auto_approve_domains, so it was not followed; call web_fetch with that URL to fetch it (it asks for approval)", via[0].URL, target)
	}
	req.URL = target
	req.Host = ""
	return nil
}

// fetch downloads u. A *failure error is meant for the model.
func (t *Tool) fetch(ctx context.Context, u *url.URL, auto bool) (*response, error) {
	ctx, cancel := context.WithTimeout(ctx, t.opts.Timeout)
	defer cancel()
	ctx = context.WithValue(ctx, autoKey{}, auto)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, failf("cannot build a request for %s: %v", u, err)
	}
	req.Header.Set("User-Agent", t.opts.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/json;q=0.9,text/*;q=0.8,*/*;q=0.5")
	resp, err := t.client.Do(req)
	if err != nil {
		return nil, t.describe(ctx, u, err)
	}
	defer resp.Body.Close()
	r := &response{URL: resp.Request.URL.String(), Status: resp.Status, Code: resp.StatusCode}
	declared := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(declared)
	r.ContentType, r.Kind = declared, classify(strings.ToLower(mt))
	if declared == "" {
		r.Kind = kindSniff
	}
	if r.Kind == kindBinary {
		// Closing the unread body drops the connection: nothing more of
		// it is downloaded.
		return nil, failf("%s has content type %s, which web_fetch does not download: it returns text (HTML, JSON and other text types) only", r.URL, mt)
	}
	if ce := resp.Header.Get("Content-Encoding"); !resp.Uncompressed && ce != "" && !strings.EqualFold(ce, "identity") {
		return nil, failf("%s sent its body with content encoding %q, which web_fetch cannot decode", r.URL, ce)
	}
	// The transport decompresses gzip itself, so the limit counts the
	// decompressed bytes: a small gzip bomb stops at MaxBytes too.
	body, err := io.ReadAll(io.LimitReader(resp.Body, t.opts.MaxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			if parentDone(ctx) {
				return nil, ctx.Err()
			}
			return nil, failf("fetching %s timed out after %s (web.fetch_timeout_seconds) while reading the body, after %d bytes", r.URL, t.opts.Timeout, len(body))
		}
		return nil, failf("reading the body of %s failed after %d bytes: %v", r.URL, len(body), err)
	}
	if int64(len(body)) > t.opts.MaxBytes {
		body, r.Cut = body[:t.opts.MaxBytes], true
	}
	r.Body = body
	if r.Kind == kindSniff {
		sniffed := http.DetectContentType(body)
		smt, _, _ := mime.ParseMediaType(sniffed)
		switch k := classify(smt); {
		case k == kindHTML || k == kindText:
			r.Kind = k
		case bytes.IndexByte(body[:min(len(body), 8192)], 0) < 0 && utf8.Valid(textcut.Prefix(body, 8192)):
			r.Kind = kindText
		default:
			return nil, failf("%s looks binary (its content type is %q; its bytes look like %s); web_fetch returns text only", r.URL, declared, smt)
		}
		if declared == "" {
			r.ContentType = sniffed
		}
	}
	return r, nil
}

// parentDone reports whether ctx ended because its parent did (the call
// was cancelled), not because the fetch timeout expired.
func parentDone(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), context.Canceled)
}

// describe turns a client error into a message for the model.
func (t *Tool) describe(ctx context.Context, u *url.URL, err error) error {
	var f *failure
	if errors.As(err, &f) {
		return f
	}
	var re *netguard.RefusedError
	if errors.As(err, &re) {
		return failf("fetching %s was refused: web_fetch reaches only public addresses, and %v (the setting web.allow_private_addresses lifts this)", u, re)
	}
	var pe *netguard.PortRefusedError
	if errors.As(err, &pe) {
		return failf("fetching %s was refused: %v; the ports web_fetch reaches are set by web.allowed_ports in the user configuration", u, pe)
	}
	if ctx.Err() != nil {
		if parentDone(ctx) {
			return ctx.Err()
		}
		return failf("fetching %s timed out after %s (web.fetch_timeout_seconds)", u, t.opts.Timeout)
	}
	if strings.Contains(err.Error(), "server response headers exceeded") {
		return failf("%s sent response headers larger than %d KiB; web_fetch does not read them", u, maxHeaderBytes>>10)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return failf("fetching %s failed: %v", u, err)
}

// decodeText returns body as UTF-8. A declared charset is decoded (from
// the header, a BOM or, for HTML, a <meta> tag); undeclared HTML that is
// valid UTF-8 is UTF-8, otherwise windows-1252 as browsers assume. The
// result is always valid UTF-8, whatever the bytes and declarations.
func decodeText(body []byte, contentType string, isHTML bool) string {
	var enc encoding.Encoding
	if isHTML {
		e, name, certain := charset.DetermineEncoding(body, contentType)
		enc = e
		if !certain && name == "windows-1252" && utf8.Valid(body) {
			enc = nil
		}
	} else {
		enc = declaredCharset(body, contentType)
	}
	if enc == nil || enc == encoding.Nop {
		return validText(string(body))
	}
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		return validText(string(body))
	}
	return validText(string(out))
}

// declaredCharset returns the encoding a BOM or the content type's charset
// parameter names, or nil for UTF-8 or an unknown name.
func declaredCharset(body []byte, contentType string) encoding.Encoding {
	switch {
	case bytes.HasPrefix(body, []byte{0xEF, 0xBB, 0xBF}):
		return nil
	case bytes.HasPrefix(body, []byte{0xFE, 0xFF}), bytes.HasPrefix(body, []byte{0xFF, 0xFE}):
		e, _ := charset.Lookup("utf-16")
		return e
	}
	_, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil
	}
	cs, ok := params["charset"]
	if !ok {
		return nil
	}
	e, name := charset.Lookup(cs)
	if e == nil || name == "utf-8" {
		return nil
	}
	return e
}
