package websearch

import (
	"html"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/oneline"
)

// StripHTML returns the text of an HTML snippet: tags (such as the
// <strong> that search services put around matched words) and comments
// removed, entities decoded. A "<" that does not start a tag ("a < b") is
// kept as text. The result may still hold whitespace runs; bound collapses
// them.
func StripHTML(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '<' || i+1 >= len(s) || !startsTag(s[i+1]) {
			b.WriteByte(c)
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "<!--") {
			end := strings.Index(s[i+4:], "-->")
			if end < 0 {
				break // an unclosed comment hides the rest
			}
			i += 4 + end + 3
			continue
		}
		end := strings.IndexByte(s[i:], '>')
		if end < 0 {
			break // an unclosed tag: drop it and what follows
		}
		// A tag separates words, as a browser would show it.
		b.WriteByte(' ')
		i += end + 1
	}
	return html.UnescapeString(b.String())
}

func startsTag(c byte) bool {
	return c == '/' || c == '!' || c == '?' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// bound makes s one line of at most max bytes (oneline.Bound).
func bound(s string, max int) string { return oneline.Bound(s, max) }
