package webfetch

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
)

// trimNewlinesReference is textutils.TrimConsecutiveNewlines of
// html-to-markdown v2.5.2 (MIT), which trimNewlines must match.
func trimNewlinesReference(input []byte) []byte {
	var result []byte
	newlineCount := 0
	spaceBuffer := []byte{}
	for i := 0; i < len(input); {
		r, size := utf8.DecodeRune(input[i:])
		if r == '\n' {
			newlineCount++
			if newlineCount <= 2 {
				result = append(result, spaceBuffer...)
				result = append(result, '\n')
			}
			spaceBuffer = spaceBuffer[:0]
		} else if r == ' ' {
			spaceBuffer = append(spaceBuffer, input[i:i+size]...)
		} else {
			newlineCount = 0
			result = append(result, spaceBuffer...)
			result = append(result, input[i:i+size]...)
			spaceBuffer = spaceBuffer[:0]
		}
		i += size
	}
	return append(result, spaceBuffer...)
}

func TestTrimNewlines(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "a\nb", "a\n\nb", "a\n\n\nb", "a \n \n \n b", "a  \n\n\n\n  b  ", "\n\n\n", "x\xff\n\n\n\xfe", "a\n \n\tb\n\n\n"} {
		if got, want := string(trimNewlines([]byte(s))), string(trimNewlinesReference([]byte(s))); got != want {
			t.Errorf("trimNewlines(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzTrimNewlines(f *testing.F) {
	for _, s := range []string{"a \n \n \n b", "a  \n\n\n\n  b  ", "\n\n\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(trimNewlines([]byte(s))), string(trimNewlinesReference([]byte(s))); got != want {
			t.Fatalf("trimNewlines(%q) = %q, the converter's version gives %q", s, got, want)
		}
	})
}

// referenceConverter is htmlConverter without its fast paths.
var referenceConverter = newConverter(pageRenderers{converterOnly: true})

// convertBoth converts src with htmlConverter and referenceConverter.
func convertBoth(t *testing.T, src string) (got, want string) {
	t.Helper()
	var out [2]string
	for i, conv := range []*converter.Converter{htmlConverter, referenceConverter} {
		root, err := html.Parse(strings.NewReader(src))
		if err != nil {
			t.Skip("the parser refuses it")
		}
		if elements, _ := flattenDeep(root); elements > 5000 {
			t.Skip("too large")
		}
		unwrapInline(root)
		md, err := conv.ConvertNode(root, converter.WithDomain("https://x.test/"))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(md)
	}
	return out[0], out[1]
}

// TestFastPathsMatchConverter: renderList and renderPlainBlock write what
// the converter's own rendering (the commonmark plugin's lists, its
// per-node rendering of text and links) writes.
func TestFastPathsMatchConverter(t *testing.T) {
	t.Parallel()
	pages := []string{
		`<ul><li>one</li><li>two</li></ul>`,
		`<ol start="9"><li>nine</li><li>ten</li><li>eleven</li></ol>`,
		`<ol start="-2"><li>a</li><li>b</li><li>c</li><li>d</li></ol>`,
		`<ol start="x"><li>a</li></ol>`,
		`<ul><li>outer<ul><li>inner<ol><li>deep</li></ol></li></ul></li><li>  </li><li><p>para one</p><p>para two</p></li></ul>`,
		`<ul><li><pre><code>line 1
line 2</code></pre></li><li>a<br><br><br>b</li></ul><ul><li>second list</li></ul>`,
		`<ol>` + strings.Repeat(`<li><a href="/x">link</a> text</li>`, 120) + `</ol>`,
		`<ul><li><blockquote>quoted<br>twice</blockquote></li><li><h3>heading</h3>after</li></ul>`,
		`<p>plain <a href="/a">one</a>, <a href="#x">in page</a> and <a href="/b"> spaced </a>.</p><div>a &lt;tag&gt; <a href="/c">x &lt; y</a></div>`,
		`<table><tr><td><p>a &lt; b</p></td><td><a href="/t">c &gt; d</a></td></tr><tr><td>longer cell</td><td>x</td></tr></table>`,
		`<p>  leading and trailing  </p><p></p><li>stray item <a href="/l"><b>bold</b> link</a></li><div><a href="/e"></a></div>`,
	}
	for _, src := range pages {
		if got, want := convertBoth(t, src); got != want {
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", src, got, want)
		}
	}
}

func FuzzFastPathsMatchConverter(f *testing.F) {
	for _, s := range []string{
		`<ul><li>a<ol start=3><li>b</li></ol></li></ul><ul><li>c</li></ul>`,
		`<p>x <a href="/a">y</a> z</p><div>&lt;<a href="/b">&gt;</a></div>`,
		`<table><tr><td><p>a &lt; b</p></td></tr></table>`,
		`<li><pre>code
lines</pre></li><li>a<br><br><br>b</li>`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if got, want := convertBoth(t, src); got != want {
			t.Fatalf("%q:\ngot:\n%s\nwant:\n%s", src, got, want)
		}
	})
}

// tidyReference is the plain statement of tidy: trim the lines, collapse
// runs of blank lines, trim the text.
func tidyReference(s string) string {
	s = entities.Replace(validText(s))
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	s = regexp.MustCompile(`\n{3,}`).ReplaceAllString(strings.Join(lines, "\n"), "\n\n")
	return strings.TrimSpace(s) + "\n"
}

func FuzzTidy(f *testing.F) {
	for _, s := range []string{"", "a", "\n\n\na  \n \n\t\nb\n\n", "\u00a0\n\n\nfoo\r\n\n\n", "&lt;x&gt;\x00\xff", " \n x \n\n\n\n y \n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := tidy(s), tidyReference(s); got != want {
			t.Fatalf("tidy(%q) = %q, the plain version gives %q", s, got, want)
		}
	})
}
