// Package oneline makes text from outside (a provider's error body, a
// search result's title) fit one bounded line of a message or a log.
package oneline

import (
	"strings"
	"unicode"

	"github.com/scv-cli/scv/shared/textcut"
)

// Ellipsis ends a line that Bound cut.
const Ellipsis = "…"

// Bound collapses runs of whitespace and control characters (line and
// paragraph separators included) to single spaces, trims, makes the text
// valid UTF-8 and cuts it to at most max bytes on a character boundary,
// ending in Ellipsis when cut (the ellipsis counts toward max).
func Bound(s string, max int) string {
	var b strings.Builder
	space, over := false, false
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
		if b.Len() > max {
			over = true
			break
		}
	}
	if !over {
		return b.String()
	}
	if max < len(Ellipsis) {
		return ""
	}
	out := b.String()
	return strings.TrimRight(textcut.Prefix(out, max-len(Ellipsis)), " ") + Ellipsis
}
