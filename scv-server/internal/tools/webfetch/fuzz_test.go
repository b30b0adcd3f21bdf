package webfetch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzConvertHTML: any bytes convert without a panic to valid UTF-8.
func FuzzConvertHTML(f *testing.F) {
	f.Add([]byte(`<h1>T</h1><p>a <a href="/x">link</a></p><table><tr><td>1</td></tr></table><pre><code>x</code></pre>`))
	f.Add([]byte("<p>\xff\xfe</p><script>x</script><nav>n</nav>"))
	f.Add([]byte(strings.Repeat("<div><ul><li>", 300)))
	f.Add([]byte(`<a href="javascript:x">j</a><a href="">e</a><a href="%zz">bad</a><img alt="[x]">`))
	f.Add([]byte(`<table><tr><td colspan=99999 rowspan=99999>x</td></tr></table>`))
	if b, err := os.ReadFile(filepath.Join("testdata", "pages", "rtl-1.html")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := convertHTML(b, "https://fuzz.test/dir/page")
		if !utf8.ValidString(p.Text) || !utf8.ValidString(p.Title) {
			t.Fatalf("invalid UTF-8 from %q", b)
		}
	})
}

// FuzzDecodeText: any bytes under any declared type decode to valid UTF-8.
func FuzzDecodeText(f *testing.F) {
	f.Add([]byte("caf\xe9"), "text/plain; charset=iso-8859-1", false)
	f.Add([]byte("\xff\xfeh\x00"), "text/plain", false)
	f.Add([]byte(`<meta charset="shift_jis">\x93\xfa`), "text/html", true)
	f.Add([]byte("a\x00\xd8"), "text/plain; charset=utf-16be", false)
	f.Fuzz(func(t *testing.T, b []byte, ctype string, isHTML bool) {
		if s := decodeText(b, ctype, isHTML); !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8 from %q as %q", b, ctype)
		}
	})
}

// FuzzCheckURL: no panic; an accepted URL is http(s) with a host and no
// credentials, and checking its canonical form again gives the same URL.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://docs.rs/serde/", "http://0x7f.1:8080/", "http://[::ffff:1.2.3.4]/", "https://Bücher.example/ä?q#f",
		"http://user@x/", "ftp://x/", "http://%31/", "http://a..b/", "http://１２７.０.０.１/", "HTTP://EXAMPLE.COM:80/"} {
		f.Add(s)
	}
	tool := New(Options{})
	f.Fuzz(func(t *testing.T, s string) {
		u, h, err := tool.checkURL(s)
		if err != nil {
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.User != nil || u.Host == "" || u.Fragment != "" {
			t.Fatalf("checkURL(%q) accepted %q", s, u)
		}
		if h.Addr.IsValid() == (h.Name != "") {
			t.Fatalf("checkURL(%q) host %+v", s, h)
		}
		again, h2, err := tool.checkURL(u.String())
		if err != nil || again.String() != u.String() || h2 != h {
			t.Fatalf("checkURL(%q) = %q, which checks to %q, %v", s, u, again, err)
		}
	})
}
