package webfetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/netguard"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit/golden"
	"github.com/scv-cli/scv/shared/version"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// server is an httptest server on loopback that the test policy treats
// as public, through an exact address:port exception.
type server struct {
	*httptest.Server
	ap       netip.AddrPort
	requests atomic.Int64
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	s.ap = netip.MustParseAddrPort(s.Listener.Addr().String())
	return s
}

func newTLSServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	s.ap = netip.MustParseAddrPort(s.Listener.Addr().String())
	return s
}

// names resolves test host names from a table.
type names map[string][]string

func (m names) LookupNetIP(_ context.Context, _ string, host string) ([]netip.Addr, error) {
	addrs, ok := m[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		out = append(out, netip.MustParseAddr(a))
	}
	return out, nil
}

// newTool returns the tool with a policy that allows exactly the given
// servers on loopback.
func newTool(o Options, servers ...*server) *Tool {
	p := &netguard.Policy{}
	for _, s := range servers {
		p.Exceptions = append(p.Exceptions, s.ap)
	}
	o.Policy = p
	for _, s := range servers {
		if s.TLS != nil {
			o.RootCAs = s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
		}
	}
	return New(o)
}

func env(limit int) tools.Env { return tools.Env{OutputLimit: limit} }

func call(t *testing.T, tool *Tool, e tools.Env, a map[string]any) tools.Result {
	t.Helper()
	raw, _ := json.Marshal(a)
	plan, err := tool.Prepare(e, raw)
	if err != nil {
		t.Fatalf("Prepare(%v): %v", a, err)
	}
	type out struct {
		res tools.Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := plan.Run(context.Background())
		ch <- out{res, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatalf("Run(%v): %v", a, o.err)
		}
		return o.res
	case <-time.After(60 * time.Second):
		t.Fatalf("Run(%v) did not return", a)
		return tools.Result{}
	}
}

func prepareErr(t *testing.T, tool *Tool, rawURL string) error {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"url": rawURL})
	_, err := tool.Prepare(env(0), raw)
	return err
}

func wantFailed(t *testing.T, res tools.Result, substrs ...string) {
	t.Helper()
	if res.Success {
		t.Fatalf("success, want failure; output:\n%s", res.Output)
	}
	for _, s := range substrs {
		if !strings.Contains(res.Output, s) {
			t.Fatalf("output does not mention %q:\n%s", s, res.Output)
		}
	}
}

func TestGoldenPages(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("testdata/pages/*.html")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages: %v", err)
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(filepath.Join("testdata/pages", filepath.Base(r.URL.Path)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write(b)
	})
	tool := newTool(Options{}, srv)
	for _, p := range pages {
		name := filepath.Base(p)
		t.Run(name, func(t *testing.T) {
			res := call(t, tool, env(8<<20), map[string]any{"url": srv.URL + "/pages/" + name})
			if !res.Success || res.Truncated {
				t.Fatalf("success %v truncated %v:\n%.2000s", res.Success, res.Truncated, res.Output)
			}
			if !utf8.ValidString(res.Output) {
				t.Fatal("output is not valid UTF-8")
			}
			got := strings.ReplaceAll(res.Output, srv.URL, "http://pages.test")
			golden.Equal(t, filepath.Join("testdata/golden", strings.TrimSuffix(name, ".html")+".md"), got)
		})
	}
}

func TestConvertHTML(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		html string
		want []string // substrings that must be there
		not  []string // substrings that must not
	}{
		{
			name: "headings lists code",
			html: `<h1>Title</h1><h2>Sub</h2><ul><li>one</li><li>two</li></ul><ol><li>first</li></ol><pre><code>x := 1
y := 2</code></pre><p>inline <code>f()</code></p>`,
			want: []string{"# Title", "## Sub", "- one\n- two", "1. first", "```\nx := 1\ny := 2\n```", "`f()`"},
		},
		{
			name: "table",
			html: `<table><tr><th>Name</th><th>Size</th></tr><tr><td>a</td><td>1</td></tr></table>`,
			want: []string{"| Name | Size |", "| a    | 1    |"},
		},
		{
			name: "numbered links, deduplicated and resolved",
			html: `<p><a href="/docs">Docs</a>, <a href="https://x.test/">X</a> and <a href="/docs">docs again</a>; <a href="#top">top</a> <a href="javascript:alert(1)">js</a></p>`,
			want: []string{"[Docs][1]", "[X][2]", "[docs again][1]", "[1]: https://site.test/docs", "[2]: https://x.test/", "top js"},
			not:  []string{"[3]", "javascript"},
		},
		{
			name: "base href",
			html: `<head><base href="/docs/v2/"></head><body><p><a href="intro">Intro</a> <a href="https://x.test/abs">Abs</a></p></body>`,
			want: []string{"[1]: https://site.test/docs/v2/intro", "[2]: https://x.test/abs"},
		},
		{
			name: "chrome dropped",
			html: `<html><head><title>T</title><style>.a{}</style><script>var secret=1</script></head><body>
<header><a href="/">Home</a> site banner</header><nav><a href="/a">Menu item</a></nav>
<div class="sidebar">side stuff</div><aside>aside text</aside><div class="story-related">more stories</div><div id="cookie_banner">accept</div>
<p>Body text.</p><form><input name=q><button>Search</button></form>
<div hidden>hidden one</div><div style="display: none">hidden two</div><span aria-hidden="true">hidden three</span>
<footer>copyright footer</footer><noscript>enable js</noscript></body></html>`,
			want: []string{"Body text."},
			not:  []string{"secret", "banner", "more stories", "accept", "Menu item", "side stuff", "aside text", "Search", "hidden", "copyright", "enable js", ".a{}"},
		},
		{
			name: "article header kept",
			html: `<body><header>site</header><article><header><h1>Story</h1></header><p>text</p><footer>by me</footer></article></body>`,
			want: []string{"# Story", "text", "by me"},
			not:  []string{"site"},
		},
		{
			name: "main preferred",
			html: `<body><div>outside</div><main><p>inside</p></main></body>`,
			want: []string{"inside"},
			not:  []string{"outside"},
		},
		{
			name: "form wrapping the page kept",
			html: `<body><form id="aspnetForm"><h1>Page</h1><p>content</p><input type=hidden name=v></form></body>`,
			want: []string{"# Page", "content"},
		},
		{
			name: "images become alt text",
			html: `<p><img src="data:image/png;base64,AAAA" alt="a chart"> <img src="x.png"></p>`,
			want: []string{"[image: a chart]"},
			not:  []string{"base64", "x.png"},
		},
		{
			name: "nesting the parser refuses: text kept, markup and scripts dropped",
			html: "<p>start</p>" + strings.Repeat("<div>", 100000) + "deep text<script>var x</script>" + strings.Repeat("</div>", 100000),
			want: []string{"start", "deep text"},
			not:  []string{"<div>", "var x"},
		},
		{
			name: "too many elements: plain text",
			html: "<h1>Head</h1>" + strings.Repeat("<p>x", maxElements) + "<script>var x</script><p>end",
			want: []string{"Head\n\nx\nx", "end"},
			not:  []string{"# Head", "var x", "<p>"},
		},
		{
			name: "nesting below the parser's limit is flattened past 200 levels",
			html: strings.Repeat("<div>", 400) + "<p>deep <b>text</b></p>" + strings.Repeat("</div>", 400),
			want: []string{"deep text"},
			not:  []string{"<div>", "**"},
		},
		{
			name: "huge table spans rendered as text",
			html: `<table><tr><td colspan=99999 rowspan=99999>wide cell</td><td>next</td></tr><tr><td>row two</td></tr></table>`,
			want: []string{"wide cell next", "row two"},
			not:  []string{"|"},
		},
		{
			name: "invalid UTF-8 replaced",
			html: "<p>bad \xff\xfe bytes</p>",
			want: []string{"bad \uFFFD bytes"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := convertHTML([]byte(tc.html), "https://site.test/page")
			checkText(t, p.Text, tc.want, tc.not)
			if !utf8.ValidString(p.Text) {
				t.Error("invalid UTF-8")
			}
		})
	}
}

// TestBinaryRefusedBeforeBody: the handler sends the headers of an image
// and then holds the body until the client hangs up. Had the tool started
// reading the body it would wait for the timeout; it must refuse at once
// and close the connection.
func TestBinaryRefusedBeforeBody(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"image/png", "application/pdf", "application/zip", "application/octet-stream", "video/mp4", "font/woff2", "audio/ogg; codecs=opus"} {
		t.Run(ct, func(t *testing.T) {
			hungUp := make(chan struct{})
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", ct)
				w.Header().Set("Content-Length", "1073741824")
				w.WriteHeader(200)
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				close(hungUp)
			})
			tool := newTool(Options{Timeout: 10 * time.Minute}, srv)
			res := call(t, tool, env(0), map[string]any{"url": srv.URL + "/file"})
			mt := strings.SplitN(ct, ";", 2)[0]
			wantFailed(t, res, "content type "+mt, "text")
			select {
			case <-hungUp:
			case <-time.After(30 * time.Second):
				t.Fatal("the client did not hang up after refusing the body")
			}
		})
	}
}

func TestSniffedBinaryRefused(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no type: Go would sniff one
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"))
	})
	res := call(t, newTool(Options{}, srv), env(0), map[string]any{"url": srv.URL})
	wantFailed(t, res, "looks binary")
}

func TestSizeLimit(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(bytes.Repeat([]byte("x"), 3<<20))
	})
	tool := newTool(Options{MaxBytes: 1 << 20}, srv)
	res := call(t, tool, env(4096), map[string]any{"url": srv.URL})
	if !res.Success || !res.Truncated {
		t.Fatalf("success %v truncated %v", res.Success, res.Truncated)
	}
	if !strings.Contains(res.Output, "download stopped at web.fetch_max_bytes") || !strings.Contains(res.Output, fmt.Sprintf("of %d\n", 1<<20)) {
		t.Fatalf("output:\n%.600s", res.Output)
	}
}

// TestNeverEndingBody: a body that never ends is cut at MaxBytes when it
// streams, and by the timeout when it stalls.
func TestNeverEndingBody(t *testing.T) {
	t.Parallel()
	fast := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := bytes.Repeat([]byte("y"), 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	stall := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	// The streaming case gets a timeout a loaded machine cannot reach, so
	// only the byte bound can end it.
	tool := newTool(Options{MaxBytes: 512 << 10, Timeout: time.Minute}, fast)
	res := call(t, tool, env(1024), map[string]any{"url": fast.URL})
	if !res.Success || !res.Truncated || !strings.Contains(res.Output, "download stopped") {
		t.Fatalf("fast: %v %v\n%.500s", res.Success, res.Truncated, res.Output)
	}
	tool = newTool(Options{MaxBytes: 512 << 10, Timeout: 300 * time.Millisecond}, stall)
	res = call(t, tool, env(1024), map[string]any{"url": stall.URL})
	wantFailed(t, res, "timed out after 300ms", "while reading the body")
}

func TestGzipBomb(t *testing.T) {
	t.Parallel()
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for i := range zero {
		zero[i] = 'a'
	}
	for range 64 {
		zw.Write(zero)
	}
	zw.Close()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding %q", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb.Bytes())
	})
	tool := newTool(Options{MaxBytes: 1 << 20}, srv)
	res := call(t, tool, env(2048), map[string]any{"url": srv.URL})
	if !res.Success || !strings.Contains(res.Output, fmt.Sprintf("of %d\n", 1<<20)) || !strings.Contains(res.Output, "download stopped") {
		t.Fatalf("%d compressed bytes; output:\n%.500s", bomb.Len(), res.Output)
	}
}

func TestUnknownContentEncodingRefused(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "br")
		w.Write([]byte{0x1b, 0x02, 0x00})
	})
	wantFailed(t, call(t, newTool(Options{}, srv), env(0), map[string]any{"url": srv.URL}), `content encoding "br"`)
}

// TestPaging reads a long multi-byte page part by part: each part fits the
// output limit, cuts no character, and the parts make up the text; the
// later parts come from the cache.
func TestPaging(t *testing.T) {
	t.Parallel()
	var text strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&text, "line %d: café 日本語 \U0001F600\n", i)
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, text.String())
	})
	tool := newTool(Options{}, srv)
	const limit = 4096
	var got strings.Builder
	offset := 0
	parts := 0
	for {
		res := call(t, tool, env(limit), map[string]any{"url": srv.URL, "offset": offset})
		if !res.Success {
			t.Fatalf("part at %d failed: %s", offset, res.Output)
		}
		if len(res.Output) > limit {
			t.Fatalf("part at %d has %d bytes, over the limit %d", offset, len(res.Output), limit)
		}
		if !utf8.ValidString(res.Output) {
			t.Fatalf("part at %d is not valid UTF-8", offset)
		}
		head, body, ok := strings.Cut(res.Output, fmt.Sprintf("Characters: %d-", offset))
		if !ok || !strings.HasPrefix(head, "URL: "+srv.URL) {
			t.Fatalf("part at %d header:\n%.300s", offset, res.Output)
		}
		_, body, _ = strings.Cut(body, "\n")
		body = strings.TrimPrefix(body, "\n") // the blank line after the header
		parts++
		if !res.Truncated {
			got.WriteString(body)
			break
		}
		i := strings.LastIndex(body, "[")
		var more, next int
		if _, err := fmt.Sscanf(body[i:], "[%d more characters: call web_fetch with the same url and \"offset\": %d for the next part]", &more, &next); err != nil {
			t.Fatalf("part at %d footer %q: %v", offset, body[i:], err)
		}
		got.WriteString(body[:i])
		if next <= offset {
			t.Fatalf("next offset %d does not advance from %d", next, offset)
		}
		offset = next
	}
	if got.String() != text.String() {
		g, w := got.String(), text.String()
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Fatalf("the parts do not make up the text (%d vs %d bytes); first difference at %d: %q vs %q", got.Len(), text.Len(), i, g[i:min(len(g), i+40)], w[i:min(len(w), i+40)])
	}
	if parts < 10 {
		t.Fatalf("only %d parts", parts)
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("%d requests for %d parts, want 1", n, parts)
	}
	res := call(t, tool, env(limit), map[string]any{"url": srv.URL, "offset": 10_000_000})
	wantFailed(t, res, "offset 10000000 is past the end")
	call(t, tool, env(limit), map[string]any{"url": srv.URL})
	if n := srv.requests.Load(); n != 2 {
		t.Fatalf("offset 0 did not fetch again: %d requests", n)
	}
}

func TestCacheBounds(t *testing.T) {
	t.Parallel()
	c := newCache(3, 100)
	for i := range 5 {
		c.put(fmt.Sprint(i), &document{Text: strings.Repeat("x", 10)})
	}
	if n, b := c.len(); n != 3 || b != 30 {
		t.Fatalf("entries %d bytes %d", n, b)
	}
	if _, ok := c.get("0"); ok {
		t.Fatal("oldest entry kept")
	}
	c.get("2") // most recent now
	c.put("big", &document{Text: strings.Repeat("x", 85)})
	if _, ok := c.get("2"); !ok {
		t.Fatal("recently used entry evicted")
	}
	if n, b := c.len(); n != 2 || b != 95 {
		t.Fatalf("after big: entries %d bytes %d", n, b)
	}
	c.put("huge", &document{Text: strings.Repeat("x", 101)})
	if _, ok := c.get("huge"); ok {
		t.Fatal("document larger than the cache kept")
	}
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/r/%d", &n); err == nil {
			if n == 0 {
				io.WriteString(w, "arrived")
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/r/%d", n-1), http.StatusFound)
			return
		}
		http.Redirect(w, r, r.URL.Path, http.StatusFound) // loop
	})
	tool := newTool(Options{MaxRedirects: 3}, srv)
	res := call(t, tool, env(0), map[string]any{"url": srv.URL + "/r/3"})
	if !res.Success || !strings.HasPrefix(res.Output, "URL: "+srv.URL+"/r/0\nRedirected from: "+srv.URL+"/r/3\nStatus: 200 OK\n") || !strings.Contains(res.Output, "arrived") {
		t.Fatalf("3 redirects:\n%s", res.Output)
	}
	wantFailed(t, call(t, tool, env(0), map[string]any{"url": srv.URL + "/r/4"}), "redirected more than 3 times")
	wantFailed(t, call(t, tool, env(0), map[string]any{"url": srv.URL + "/loop"}), "more than 3 times")
	none := newTool(Options{MaxRedirects: -1}, srv)
	wantFailed(t, call(t, none, env(0), map[string]any{"url": srv.URL + "/r/1"}), "more than 0 times")
}

// TestRedirectToRefused: redirects to loopback on another port, the
// metadata address (in several notations) and other schemes are refused,
// and the refused server is never reached.
func TestRedirectToRefused(t *testing.T) {
	t.Parallel()
	private := newServer(t, func(w http.ResponseWriter, r *http.Request) { t.Error("the private server was reached") })
	privPort := private.ap.Port()
	targets := map[string]string{
		"/loopback":  private.URL + "/secret",
		"/decimal":   fmt.Sprintf("http://2130706433:%d/", privPort),
		"/mapped":    fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", privPort),
		"/metadata":  "http://169.254.169.254/latest/meta-data/",
		"/meta-hex":  "http://0xa9fea9fe/latest/meta-data/",
		"/nat64":     "http://[64:ff9b::a9fe:a9fe]/",
		"/name":      "http://internal.test/",
		"/localhost": fmt.Sprintf("http://localhost:%d/", privPort),
		"/file":      "file:///etc/passwd",
		"/userinfo":  "http://user:pw@example.test/",
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", targets[r.URL.Path])
		w.WriteHeader(http.StatusFound)
	})
	tool := newTool(Options{Resolver: names{"internal.test": {"10.1.2.3"}}}, srv)
	for path, target := range targets {
		t.Run(path, func(t *testing.T) {
			res := call(t, tool, env(0), map[string]any{"url": srv.URL + path})
			wantFailed(t, res)
			if strings.Contains(res.Output, "pw@") {
				t.Errorf("the redirect's credentials are in the output: %s", res.Output)
			}
			if !strings.Contains(res.Output, "refuse") && !strings.Contains(res.Output, "public address") {
				t.Fatalf("redirect to %s: %s", target, res.Output)
			}
		})
	}
}

// TestAddressPolicy: literal URLs are refused before any connection, in
// Prepare; names are refused at dial time when any address is refused.
func TestAddressPolicy(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "public side") })
	other := newServer(t, func(w http.ResponseWriter, r *http.Request) { t.Error("refused server reached") })
	port, otherPort := srv.ap.Port(), other.ap.Port()
	tool := newTool(Options{Resolver: names{
		"public.test":   {"127.0.0.1"},
		"mixed.test":    {"127.0.0.1", "10.0.0.1"},
		"mixed6.test":   {"127.0.0.1", "fd00::1"},
		"metadata.test": {"169.254.169.254"},
		"mapped.test":   {"::ffff:169.254.169.254"},
	}}, srv)

	for _, u := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/", otherPort),
		fmt.Sprintf("http://0177.0.0.1:%d/", otherPort),
		fmt.Sprintf("http://2130706433:%d/", otherPort),
		fmt.Sprintf("http://0x7f.1:%d/", otherPort),
		fmt.Sprintf("http://127.1:%d/", otherPort),
		fmt.Sprintf("http://[::1]:%d/", otherPort),
		"http://169.254.169.254/latest/meta-data/",
		"http://2852039166/", "http://0251.0376.0251.0376/", "http://169.254.43518/",
		"http://10.0.0.1/", "http://192.168.1.1/", "http://100.64.0.1/", "http://0.0.0.0/", "http://0/",
		"http://[::ffff:169.254.169.254]/", "http://[::169.254.169.254]/", "http://[64:ff9b::a9fe:a9fe]/",
		"http://[2002:a9fe:a9fe::1]/", "http://[2001:0:4136:e378::5601:5601]/", "http://[fe80::1%25eth0]/",
		"http://[fd00:ec2::254]/", "http://[::]/", "http://１２７.０.０.１/",
	} {
		err := prepareErr(t, tool, u)
		if err == nil || !strings.Contains(err.Error(), "public address") {
			t.Errorf("Prepare(%s) = %v, want a refusal", u, err)
		}
	}
	// The same address in other notations reaches the allowed port.
	for _, u := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/", port), fmt.Sprintf("http://2130706433:%d/", port),
		fmt.Sprintf("http://0177.0.0.1:%d/", port), fmt.Sprintf("http://public.test:%d/", port),
	} {
		res := call(t, tool, env(0), map[string]any{"url": u})
		if !res.Success || !strings.Contains(res.Output, "public side") {
			t.Errorf("%s: %s", u, res.Output)
		}
	}
	for host, addr := range map[string]string{"mixed.test": "10.0.0.1", "mixed6.test": "fd00::1", "metadata.test": "169.254.169.254", "mapped.test": "169.254.169.254", "localhost": "localhost", "x.localhost": "localhost"} {
		res := call(t, tool, env(0), map[string]any{"url": fmt.Sprintf("http://%s:%d/", host, port)})
		wantFailed(t, res, "public address", addr)
	}
	if n := srv.requests.Load(); n != 4 {
		t.Fatalf("%d requests reached the server, want 4", n)
	}
	open := New(Options{AllowPrivate: true})
	if err := prepareErr(t, open, "http://10.0.0.1/"); err != nil {
		t.Errorf("AllowPrivate: %v", err)
	}
}

func TestURLChecks(t *testing.T) {
	t.Parallel()
	tool := New(Options{})
	for u, want := range map[string]string{
		"ftp://example.com/f":                          `scheme "ftp"`,
		"file:///etc/passwd":                           `scheme "file"`,
		"javascript:alert(1)":                          `scheme "javascript"`,
		"gopher://example.com/":                        `scheme "gopher"`,
		"//example.com/x":                              "no scheme",
		"example.com":                                  "no scheme",
		"http://user:pass@example.com/":                "credentials",
		"https://token@example.com/":                   "credentials",
		"http:///path":                                 "no host",
		"http:example.com":                             "no host",
		"http://exa mple.com/":                         "cannot be parsed",
		"http://example.com:99999/":                    "port",
		"http://example.com:0/":                        "port",
		"http://example.com:/":                         "empty port",
		"http://[::1/":                                 "cannot be parsed",
		"http://foo.123/":                              "bad host",
		"http://256.1.1.1/":                            "bad host",
		"http://a..b/":                                 "bad host",
		"http://xn--zz.example/":                       "bad host",
		"http://" + strings.Repeat("a.", 130) + "com/": "bad host",
	} {
		err := prepareErr(t, tool, u)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Prepare(%q) = %v, want an error with %q", u, err, want)
		}
	}
	// IDN hosts go out as punycode; the approval shows the URL fetched.
	raw, _ := json.Marshal(map[string]any{"url": "https://Bücher.example/Straße?q=1#frag"})
	plan, err := tool.Prepare(env(0), raw)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Summary != "Fetch https://xn--bcher-kva.example/Stra%C3%9Fe?q=1" {
		t.Fatalf("summary %q", plan.Summary)
	}
}

func TestCheckDomain(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"docs.rs", ".rust-lang.org", "*.go.dev", "Bücher.example", "93.184.216.34", "[2606:4700::1]"} {
		if err := CheckDomain(ok); err != nil {
			t.Errorf("CheckDomain(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "a..b", "foo.123", ".1.2.3.4", "exa mple.com", "https://docs.rs"} {
		if err := CheckDomain(bad); err == nil {
			t.Errorf("CheckDomain(%q) accepted", bad)
		}
	}
}

func TestRiskAndRules(t *testing.T) {
	t.Parallel()
	tool := New(Options{AutoApproveDomains: []string{"docs.rs", ".rust-lang.org", "Bücher.example", "*.go.dev", "bad..entry"}})
	tests := []struct {
		url  string
		risk protocol.Risk
		key  string
	}{
		{"https://docs.rs/serde/latest/serde/", protocol.RiskReadOnly, ""},
		{"https://DOCS.RS./x", protocol.RiskReadOnly, ""},
		{"http://docs.rs/x", protocol.RiskNetwork, "web:docs.rs"},
		{"https://api.docs.rs/x", protocol.RiskNetwork, "web:api.docs.rs"},
		{"https://docs.rs:8443/x", protocol.RiskReadOnly, ""},
		{"http://docs.rs:8080/x", protocol.RiskNetwork, "web:docs.rs:8080"},
		{"https://rust-lang.org/", protocol.RiskReadOnly, ""},
		{"https://doc.rust-lang.org/std/", protocol.RiskReadOnly, ""},
		{"https://a.b.rust-lang.org/", protocol.RiskReadOnly, ""},
		{"https://evilrust-lang.org/", protocol.RiskNetwork, "web:evilrust-lang.org"},
		{"https://rust-lang.org.evil.test/", protocol.RiskNetwork, "web:rust-lang.org.evil.test"},
		{"https://xn--bcher-kva.example/", protocol.RiskReadOnly, ""},
		{"https://pkg.go.dev/net", protocol.RiskReadOnly, ""},
		{"https://go.dev/", protocol.RiskReadOnly, ""},
		{"https://example.com/?u=https://docs.rs/", protocol.RiskNetwork, "web:example.com"},
		{"http://example.com:80/", protocol.RiskNetwork, "web:example.com"},
	}
	for _, tc := range tests {
		raw, _ := json.Marshal(map[string]any{"url": tc.url})
		plan, err := tool.Prepare(env(0), raw)
		if err != nil {
			t.Fatalf("%s: %v", tc.url, err)
		}
		if plan.Risk != tc.risk {
			t.Errorf("%s: risk %s, want %s", tc.url, plan.Risk, tc.risk)
		}
		if tc.key == "" {
			if plan.Rule != nil || len(plan.Keys) != 0 {
				t.Errorf("%s: read-only call has rule %+v keys %v", tc.url, plan.Rule, plan.Keys)
			}
			continue
		}
		if plan.Rule == nil || plan.Rule.Key != tc.key || len(plan.Keys) != 1 || plan.Keys[0] != tc.key {
			t.Errorf("%s: rule %+v keys %v, want key %s", tc.url, plan.Rule, plan.Keys, tc.key)
		}
		if !strings.HasPrefix(plan.Summary, "Fetch ") || !strings.Contains(plan.Summary, strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(tc.url, "https://"), "http://"), "/", 2)[1]) {
			t.Errorf("%s: summary %q does not show the full URL", tc.url, plan.Summary)
		}
	}
}

// TestAutoApproveRedirects: an allowlisted HTTPS fetch may follow
// redirects only to other allowlisted HTTPS hosts.
func TestAutoApproveRedirects(t *testing.T) {
	t.Parallel()
	var port uint16
	srv := newTLSServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-listed":
			http.Redirect(w, r, fmt.Sprintf("https://docs.example.com:%d/page", port), http.StatusFound)
		case "/to-unlisted":
			http.Redirect(w, r, fmt.Sprintf("https://other.example.com:%d/page", port), http.StatusFound)
		case "/to-http":
			http.Redirect(w, r, fmt.Sprintf("http://docs.example.com:%d/page", port), http.StatusFound)
		default:
			io.WriteString(w, "page of "+r.Host)
		}
	})
	port = srv.ap.Port()
	resolver := names{"example.com": {"127.0.0.1"}, "docs.example.com": {"127.0.0.1"}, "other.example.com": {"127.0.0.1"}}
	tool := newTool(Options{AutoApproveDomains: []string{"example.com", "docs.example.com"}, Resolver: resolver}, srv)
	base := fmt.Sprintf("https://example.com:%d", port)

	raw, _ := json.Marshal(map[string]any{"url": base + "/to-listed"})
	plan, err := tool.Prepare(env(0), raw)
	if err != nil || plan.Risk != protocol.RiskReadOnly {
		t.Fatalf("Prepare: %v %+v", err, plan)
	}
	res := call(t, tool, env(0), map[string]any{"url": base + "/to-listed"})
	if !res.Success || !strings.Contains(res.Output, "page of docs.example.com") {
		t.Fatalf("listed redirect: %s", res.Output)
	}
	unlisted := fmt.Sprintf("https://other.example.com:%d/page", port)
	wantFailed(t, call(t, tool, env(0), map[string]any{"url": base + "/to-unlisted"}), unlisted, "web.auto_approve_domains")
	wantFailed(t, call(t, tool, env(0), map[string]any{"url": base + "/to-http"}), fmt.Sprintf("http://docs.example.com:%d/page", port))

	// The same redirect from an approved (network) fetch is followed.
	approved := newTool(Options{Resolver: resolver}, srv)
	res = call(t, approved, env(0), map[string]any{"url": base + "/to-unlisted"})
	if !res.Success || !strings.Contains(res.Output, "page of other.example.com") {
		t.Fatalf("approved redirect: %s", res.Output)
	}
}

// TestRequestHeaders: scv's User-Agent, no cookies (even ones the server
// set), no Referer on redirects, no credentials. (Proxy variables:
// TestProxyVariablesIgnored.)
func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []http.Header
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		if r.URL.Path == "/start" {
			http.SetCookie(w, &http.Cookie{Name: "session", Value: "secret"})
			http.Redirect(w, r, "/end", http.StatusFound)
			return
		}
		io.WriteString(w, "end")
	})
	tool := newTool(Options{}, srv)
	res := call(t, tool, env(0), map[string]any{"url": srv.URL + "/start"})
	if !res.Success {
		t.Fatalf("%s", res.Output)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d requests", len(seen))
	}
	for i, h := range seen {
		if h.Get("User-Agent") != version.UserAgent() {
			t.Errorf("request %d User-Agent %q", i, h.Get("User-Agent"))
		}
		for _, k := range []string{"Cookie", "Referer", "Authorization", "Proxy-Authorization"} {
			if h.Get(k) != "" {
				t.Errorf("request %d sent %s: %q", i, k, h.Get(k))
			}
		}
	}
}

func TestHTTPErrorStatus(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "<html><body><h1>Not here</h1><p>Try <a href='/home'>home</a>.</p></body></html>")
	})
	res := call(t, newTool(Options{}, srv), env(0), map[string]any{"url": srv.URL + "/missing"})
	wantFailed(t, res, "Status: 404 Not Found", "# Not here", "[home][1]", "[1]: "+srv.URL+"/home")
}

func TestJSONPassesThrough(t *testing.T) {
	t.Parallel()
	body := `{"name":"scv","tags":["<b>x</b>"]}`
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, body)
	})
	res := call(t, newTool(Options{}, srv), env(0), map[string]any{"url": srv.URL})
	if !res.Success || !strings.HasSuffix(res.Output, "\n"+body) || !strings.Contains(res.Output, "Content-Type: application/json\n") {
		t.Fatalf("%s", res.Output)
	}
}

func TestCharsets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ctype string
		body        []byte
		want        string
	}{
		{"latin1 header", "text/plain; charset=iso-8859-1", []byte("caf\xe9"), "café"},
		{"windows-1252 meta", "text/html", []byte("<html><head><meta charset=\"windows-1252\"></head><body><p>caf\xe9 \x93q\x94</p></body></html>"), "café “q”"},
		{"shift_jis header", "text/plain; charset=Shift_JIS", []byte("\x93\xfa\x96\x7b"), "日本"},
		{"utf-8 undeclared html", "text/html", []byte("<p>日本 café</p>"), "日本 café"},
		{"utf-16 BOM", "text/plain", []byte("\xff\xfeh\x00i\x00"), "hi"},
		{"utf-8 declared, latin1 sent", "text/plain; charset=utf-8", []byte("caf\xe9!"), "caf\uFFFD!"},
		{"unknown charset", "text/plain; charset=x-bogus", []byte("ok \xff"), "ok \uFFFD"},
		{"utf-16 declared, odd bytes", "text/plain; charset=utf-16le", []byte("a\x00\x00\xd8b"), "a"},
		{"euc-jp declared, garbage", "text/html; charset=euc-jp", []byte("<p>\xff\xfe\x8e</p>"), "\uFFFD"},
		{"NUL bytes", "text/plain", []byte("a\x00b"), "a\uFFFDb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ctype)
				w.Write(tc.body)
			})
			res := call(t, newTool(Options{}, srv), env(0), map[string]any{"url": srv.URL})
			if !res.Success || !utf8.ValidString(res.Output) || !strings.Contains(res.Output, tc.want) {
				t.Fatalf("success %v valid %v, want %q in:\n%s", res.Success, utf8.ValidString(res.Output), tc.want, res.Output)
			}
		})
	}
}

func TestHugeHeadersRefused(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("a", 200<<10))
		io.WriteString(w, "body")
	})
	wantFailed(t, call(t, newTool(Options{}, srv), env(0), map[string]any{"url": srv.URL}), "response headers larger than 64 KiB")
}

func TestCancelledCall(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	tool := newTool(Options{}, srv)
	raw, _ := json.Marshal(map[string]any{"url": srv.URL})
	plan, err := tool.Prepare(env(0), raw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := plan.Run(ctx); done <- err }()
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestSpec(t *testing.T) {
	t.Parallel()
	reg := tools.NewRegistry()
	if err := reg.Register(New(Options{})); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Validate("web_fetch", `{"url":"https://x.test","offset":-1}`); err == nil {
		t.Error("negative offset accepted")
	}
	if _, err := reg.Validate("web_fetch", `{"url":"https://x.test","offset":3}`); err != nil {
		t.Error(err)
	}
}

// TestPortPolicy: URLs and redirects reach only the allowed ports (80,
// 443 and 8000-8999 unless Options.AllowedPorts says otherwise), refused
// before approval is asked with a message naming the setting; the
// address policy does not lift it.
func TestPortPolicy(t *testing.T) {
	t.Parallel()
	tool := New(Options{})
	for _, u := range []string{"http://example.com/", "https://example.com/", "http://example.com:8080/", "https://example.com:8443/", "http://93.184.216.34:8000/", "http://[2606:2800:220:1::]:8999/"} {
		if err := prepareErr(t, tool, u); err != nil {
			t.Errorf("Prepare(%s): %v", u, err)
		}
	}
	for u, port := range map[string]string{
		"http://example.com:25/":            "25",
		"https://example.com:6379/":         "6379",
		"http://example.com:7999/":          "7999",
		"http://example.com:9000/":          "9000",
		"http://93.184.216.34:22/":          "22",
		"http://[2606:2800:220:1::]:11211/": "11211",
		"https://example.com:80/":           "80", // allowed: port 80 over TLS is still port 80
	} {
		err := prepareErr(t, tool, u)
		if port == "80" {
			if err != nil {
				t.Errorf("Prepare(%s): %v", u, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "port "+port+" is not one of the allowed ports (80, 443 and 8000-8999)") || !strings.Contains(err.Error(), "web.allowed_ports") {
			t.Errorf("Prepare(%s) = %v, want the port refused", u, err)
		}
	}
	custom := New(Options{AllowedPorts: []netguard.PortRange{{Lo: 3000, Hi: 3000}}, AllowPrivate: true})
	if err := prepareErr(t, custom, "http://example.com:3000/"); err != nil {
		t.Errorf("custom port: %v", err)
	}
	for _, u := range []string{"https://example.com/", "http://127.0.0.1:6379/", "http://10.0.0.1/"} {
		if err := prepareErr(t, custom, u); err == nil || !strings.Contains(err.Error(), "(3000)") {
			t.Errorf("Prepare(%s) with only port 3000 = %v", u, err)
		}
	}
	// A private literal on a refused port is refused for its address.
	if err := prepareErr(t, tool, "http://10.0.0.1:25/"); err == nil || !strings.Contains(err.Error(), "public address") {
		t.Errorf("private address, refused port: %v", err)
	}

	// Redirects: to a refused port, by name or literal, the redirect is
	// refused before any lookup or connection.
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	looked := 0
	rt := newTool(Options{Resolver: resolverFunc(func(host string) ([]netip.Addr, error) {
		looked++
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	})}, srv)
	for _, to := range []string{"http://smtp.test:25/", "http://93.184.216.34:6379/", "https://db.test:5432/"} {
		res := call(t, rt, env(0), map[string]any{"url": srv.URL + "/?to=" + to})
		_, port, _ := strings.Cut(strings.TrimSuffix(strings.SplitN(to, "://", 2)[1], "/"), ":")
		wantFailed(t, res, "redirected to", "port "+port+" is not one of the allowed ports", "web.allowed_ports")
	}
	if looked != 0 {
		t.Fatalf("%d lookups for refused redirects", looked)
	}
	// The dialer enforces the ports too: here the exception's port passes
	// the URL check, but the name resolves to another (public) address.
	dt := newTool(Options{Resolver: names{"elsewhere.test": {"8.8.8.8"}}}, srv)
	res := call(t, dt, env(0), map[string]any{"url": fmt.Sprintf("http://elsewhere.test:%d/", srv.ap.Port())})
	wantFailed(t, res, fmt.Sprintf("was refused: port %d is not one of the allowed ports", srv.ap.Port()), "web.allowed_ports")
}

// resolverFunc is a netguard.Resolver from a function.
type resolverFunc func(host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(_ context.Context, _ string, host string) ([]netip.Addr, error) {
	return f(host)
}

// TestProxyVariablesIgnored: with HTTP_PROXY, HTTPS_PROXY and ALL_PROXY
// naming a working proxy that requires credentials, a fetch still goes
// straight to the origin, and the proxy sees nothing. The fetch runs in a
// child process: net/http reads the proxy variables once per process,
// and the URL's host is a name, since Go never proxies loopback
// addresses.
func TestProxyVariablesIgnored(t *testing.T) {
	if os.Getenv("SCV_WEBFETCH_PROXY_CHILD") == "1" {
		proxyChild(t)
		return
	}
	var proxied atomic.Int64
	proxy := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		io.WriteString(w, "answered by the proxy")
	})
	origin := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Proxy-Authorization") != "" {
			t.Errorf("the origin got Proxy-Authorization %q", r.Header.Get("Proxy-Authorization"))
		}
		io.WriteString(w, "answered by the origin")
	})
	proxyURL := "http://user:secret@" + proxy.Listener.Addr().String()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProxyVariablesIgnored$", "-test.count=1", "-test.v")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "SCV_WEBFETCH_PROXY_CHILD=1",
		"SCV_WEBFETCH_ORIGIN=" + origin.Listener.Addr().String(), "SCV_WEBFETCH_PROXY=" + proxy.Listener.Addr().String()}
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		cmd.Env = append(cmd.Env, k+"="+proxyURL)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child fetch failed: %v\n%s", err, out)
	}
	if n := proxied.Load(); n != 0 {
		t.Fatalf("%d requests went through the proxy named by HTTP_PROXY:\n%s", n, out)
	}
	if n := origin.requests.Load(); n != 1 {
		t.Fatalf("%d requests reached the origin, want 1:\n%s", n, out)
	}
}

// proxyChild is TestProxyVariablesIgnored's fetch: both servers are
// reachable (policy exceptions), so only the tool's choice decides which
// one answers.
func proxyChild(t *testing.T) {
	origin := netip.MustParseAddrPort(os.Getenv("SCV_WEBFETCH_ORIGIN"))
	proxy := netip.MustParseAddrPort(os.Getenv("SCV_WEBFETCH_PROXY"))
	if os.Getenv("HTTP_PROXY") == "" || os.Getenv("REQUEST_METHOD") != "" {
		t.Fatal("the proxy variables are not set as the parent meant")
	}
	tool := New(Options{
		Policy:   &netguard.Policy{Exceptions: []netip.AddrPort{origin, proxy}},
		Resolver: names{"origin.test": {origin.Addr().String()}},
	})
	res := call(t, tool, env(0), map[string]any{"url": fmt.Sprintf("http://origin.test:%d/page", origin.Port())})
	if !res.Success || !strings.Contains(res.Output, "answered by the origin") {
		t.Fatalf("fetch: %s", res.Output)
	}
}
