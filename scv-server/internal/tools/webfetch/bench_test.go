package webfetch

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"

	"github.com/scv-cli/scv/scv-server/internal/netguard"
)

// benchPage returns about size bytes of real HTML: the Wikipedia test page
// repeated.
func benchPage(b *testing.B, size int) []byte {
	b.Helper()
	page, err := os.ReadFile("testdata/pages/wikipedia.html")
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	for buf.Len() < size {
		buf.Write(page)
	}
	return buf.Bytes()[:size]
}

// BenchmarkConvertHTML converts 256 KiB, 1 MiB and 4 MiB pages; the time
// per byte should stay flat.
func BenchmarkConvertHTML(b *testing.B) {
	for _, size := range []int{256 << 10, 1 << 20, 4 << 20} {
		src := benchPage(b, size)
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if p := convertHTML(src, "https://en.wikipedia.org/wiki/Mozilla"); len(p.Text) == 0 {
					b.Fatal("empty text")
				}
			}
		})
	}
}

// BenchmarkDial compares one GET on loopback (a new connection each time)
// through a plain transport and through the checking resolver and dialer.
func BenchmarkDial(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	guard := &netguard.Dialer{Policy: &netguard.Policy{Exceptions: []netip.AddrPort{ap}}}
	for _, tc := range []struct {
		name string
		tr   *http.Transport
	}{
		{"plain", &http.Transport{Proxy: nil, DisableKeepAlives: true}},
		{"netguard", &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: guard.DialContext}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			client := &http.Client{Transport: tc.tr}
			defer tc.tr.CloseIdleConnections()
			b.ReportAllocs()
			for b.Loop() {
				resp, err := client.Get(srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkResolve is the checking step alone for an IP literal and for
// a name (with an in-memory resolver).
func BenchmarkResolve(b *testing.B) {
	d := &netguard.Dialer{Resolver: names{"public.test": {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"}}}
	for _, host := range []string{"93.184.216.34", "public.test"} {
		b.Run(host, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Resolve(b.Context(), host, 443); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConvertAdversarial converts 2 MiB (the default download limit)
// of pathological markup: the worst cases of the converter's per-node
// and per-escape costs.
func BenchmarkConvertAdversarial(b *testing.B) {
	const n = 2 << 20
	cases := []struct{ name, src string }{
		{"markdown-chars", "<p>" + strings.Repeat("*_[]()#`\\<>|", n/12) + "</p>"},
		{"unclosed-p", strings.Repeat("<p>x", n/4)},
		{"links", strings.Repeat(`<a href="/p?q=1234567">l</a>`, n/28)},
		{"wide-table", "<table><tr>" + strings.Repeat("<td>x</td>", n/10) + "</tr></table>"},
		{"tall-table", "<table>" + strings.Repeat("<tr><td>x</td></tr>", n/19) + "</table>"},
		{"too-deep", strings.Repeat("<div>", n/5)},
		// Nested elements named weakly as chrome, each holding prose: each
		// one's content test reads its subtree (up to proseNodes nodes).
		{"nested-weak-chrome", strings.Repeat(`<div class="menu"><p>`+strings.Repeat("prose words here ", 30)+`</p>`, 190) +
			strings.Repeat(`<div class="related">`+strings.Repeat("<p>a b c d e f g</p>", 20)+`</div>`, n/580)},
	}
	for _, tc := range cases {
		src := []byte(tc.src)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				convertHTML(src, "https://x.test/")
			}
		})
	}
}

// passThrough renders every element as its children: with it the
// converter does all its fixed work (the pre-render passes over the tree,
// sorting its renderers for every node, the post-render trims) and no
// rendering of its own.
type passThrough struct{}

func (passThrough) Name() string { return "pass-through" }

func (passThrough) Init(conv *converter.Converter) error {
	conv.Register.Renderer(func(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
		ctx.RenderChildNodes(ctx, w, n)
		return converter.RenderSuccess
	}, converter.PriorityEarly-50)
	return nil
}

// BenchmarkConvertStages splits the 1 MiB conversion: parsing alone;
// parsing and the work on the tree before conversion; that plus a
// converter that renders nothing (the converter's fixed cost); the whole
// conversion.
func BenchmarkConvertStages(b *testing.B) {
	src := benchPage(b, 1<<20)
	floor := converter.NewConverter(
		converter.WithEscapeMode(converter.EscapeModeDisabled),
		converter.WithPlugins(base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(), passThrough{}),
	)
	prepare := func() *html.Node {
		root, err := html.Parse(bytes.NewReader(src))
		if err != nil {
			b.Fatal(err)
		}
		_, tables := flattenDeep(root)
		doc := goquery.NewDocumentFromNode(root)
		guardTables(doc.FindNodes(tables...))
		content := stripChrome(doc)
		unwrapInline(content)
		return content
	}
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := html.Parse(bytes.NewReader(src)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse+prune", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			prepare()
		}
	})
	b.Run("parse+prune+converter-floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := floor.ConvertNode(prepare()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			convertHTML(src, "https://en.wikipedia.org/wiki/Mozilla")
		}
	})
}
