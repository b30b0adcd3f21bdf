package webfetch

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// pageThrough renders every part of doc within limit, checking each one,
// and returns the parts' text.
func pageThrough(t *testing.T, doc *document, requested string, limit int) string {
	t.Helper()
	var got strings.Builder
	offset := int64(0)
	for parts := 0; ; parts++ {
		if parts > doc.Runes+1 {
			t.Fatalf("more parts than characters: paging does not move on")
		}
		res := render(doc, requested, offset, limit)
		out := res.Output
		if len(out) > limit && limit >= minLimit {
			t.Fatalf("part at %d has %d bytes, over the limit %d:\n%.600s", offset, len(out), limit, out)
		}
		if !utf8.ValidString(out) {
			t.Fatalf("part at %d is not valid UTF-8", offset)
		}
		_, body, ok := strings.Cut(out, fmt.Sprintf("\nCharacters: %d-", offset))
		if !ok {
			t.Fatalf("part at %d has no range line:\n%.600s", offset, out)
		}
		var end, total int64
		if _, err := fmt.Sscanf(body, "%d of %d\n", &end, &total); err != nil || total != int64(doc.Runes) || end <= offset && total > 0 {
			t.Fatalf("part at %d range %q: %v", offset, body[:min(len(body), 40)], err)
		}
		_, text, _ := strings.Cut(body, "\n\n")
		if end == total {
			if res.Truncated != doc.Cut {
				t.Fatalf("the last part is marked truncated %v", res.Truncated)
			}
			got.WriteString(text)
			return got.String()
		}
		foot := footer(end, total)
		if !res.Truncated || !strings.HasSuffix(text, foot) {
			t.Fatalf("part at %d does not end with its footer %q:\n%.600s", offset, foot, out)
		}
		text = strings.TrimSuffix(text, foot)
		if !strings.HasSuffix(text, "\n") {
			t.Fatalf("no line break before the footer")
		}
		if n := int64(utf8.RuneCountInString(text)); n != end-offset && n != end-offset+1 {
			t.Fatalf("part at %d holds %d characters for the range %d-%d", offset, n, offset, end)
		}
		if int64(utf8.RuneCountInString(text)) == end-offset+1 {
			text = strings.TrimSuffix(text, "\n") // the line break added before the footer
		}
		got.WriteString(text)
		offset = end
	}
}

// TestRenderBoundLongValues: URLs, redirect targets, status lines and
// content types of any length (a URL of 8192 characters escapes to three
// times as many bytes; a server's headers may take 64 KiB) never push a
// part over the output limit, and paging still reads the whole text.
func TestRenderBoundLongValues(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("Ünïcode line of text, with a link [1].\n", 60)
	for _, n := range []int{0, 400, 8192 * 3, 70_000} {
		long := "https://x.test/" + strings.Repeat("%C3%A9", n/6)
		for _, limit := range []int{minLimit, 1024, 64 << 10} {
			doc := &document{URL: long, Status: "200 " + strings.Repeat("OK ", n/3), OK: true,
				ContentType: "text/plain; charset=utf-8; x=" + strings.Repeat("y", n), Title: strings.Repeat("T", n),
				Text: text, Runes: utf8.RuneCountInString(text), Cut: n%2 == 0}
			if got := pageThrough(t, doc, long+"?from", limit); got != text {
				t.Fatalf("URL of %d bytes, limit %d: the parts do not make up the text", len(long), limit)
			}
			res := render(doc, long, int64(doc.Runes)+1, limit)
			if res.Success || len(res.Output) > limit || !strings.Contains(res.Output, "is past the end") {
				t.Fatalf("offset past the end, limit %d: %d bytes: %.200s", limit, len(res.Output), res.Output)
			}
		}
	}
}

// FuzzRenderBound: for any document and any limit from minLimit up, every
// part fits the limit, is valid UTF-8, ends with the footer when more
// follows, and the parts make up the text.
func FuzzRenderBound(f *testing.F) {
	f.Add("https://x.test/a", "https://x.test/", "200 OK", "text/html", "Title", "line one\nline two\n", uint16(1), uint16(0))
	f.Add("https://x.test/é", "", "404 Not Found", "", "", "日本語のテキスト", uint16(3000), uint16(100))
	f.Add("u", "v", "s", "c", "t", strings.Repeat("x\n", 600), uint16(20000), uint16(9000))
	f.Fuzz(func(t *testing.T, u, from, status, ctype, title, text string, grow, lim uint16) {
		n := int(grow) % 20_000
		text = strings.ToValidUTF8(text, "?")
		doc := &document{URL: strings.Repeat(u, n+1), Status: strings.Repeat(status, n/4+1), ContentType: strings.Repeat(ctype, n/4+1),
			Title: strings.Repeat(title, n/8+1), Text: text, Runes: utf8.RuneCountInString(text), Cut: grow%2 == 1}
		requested := doc.URL
		if from != "" {
			requested = strings.Repeat(from, n+1)
		}
		limit := minLimit + int(lim)*8
		if got := pageThrough(t, doc, requested, limit); got != text {
			t.Fatalf("the parts make up %q, not %q", got, text)
		}
	})
}

// TestLongURLsEndToEnd: a long request URL that redirects to a long
// Location, answered with a long status line and content type, comes back
// within a small output limit, with its footer.
func TestLongURLsEndToEnd(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("Some text of the page.\n", 200)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/final") {
			http.Redirect(w, r, "/final/"+strings.Repeat("%E6%97%A5", 5000), http.StatusFound)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		fmt.Fprintf(rw, "HTTP/1.1 200 %s\r\nContent-Type: text/plain; charset=utf-8; note=%s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
			strings.Repeat("Fine ", 4000), strings.Repeat("z", 30_000), len(body), body)
		rw.Flush()
	})
	tool := newTool(Options{}, srv)
	long := srv.URL + "/start/" + strings.Repeat("日", 8000) // 8000 characters; 72,000 bytes escaped
	for _, limit := range []int{1024, 4096} {
		res := call(t, tool, env(limit), map[string]any{"url": long})
		if len(res.Output) > limit || !res.Success || !res.Truncated {
			t.Fatalf("limit %d: %d bytes, success %v truncated %v:\n%.400s", limit, len(res.Output), res.Success, res.Truncated, res.Output)
		}
		if !strings.Contains(res.Output, "Some text of the page.") || !strings.HasSuffix(res.Output, "for the next part]\n") || !strings.Contains(res.Output, "…\nRedirected from: ") {
			t.Fatalf("limit %d:\n%s", limit, res.Output)
		}
	}
}
