package webfetch

import (
	"strings"
	"unicode/utf8"
)

// entities undoes the converter's escaping of < and >, which is for
// Markdown renderers, not for a reader of the text.
var entities = strings.NewReplacer("&lt;", "<", "&gt;", ">")

// tidy trims trailing spaces and tabs from lines, keeps at most one blank
// line in a row, and trims the text, in one pass over its lines.
func tidy(s string) string {
	s = entities.Replace(validText(s))
	var b strings.Builder
	b.Grow(len(s) + 1)
	blank, started := false, false
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			blank = started
			continue
		}
		if started {
			b.WriteByte('\n')
			if blank {
				b.WriteByte('\n')
			}
		}
		b.WriteString(line)
		blank, started = false, true
	}
	return strings.TrimSpace(b.String()) + "\n"
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// validText replaces invalid UTF-8 and NUL characters.
func validText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
