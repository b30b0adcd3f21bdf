// Package wrap holds the text measuring, cleaning and wrapping every TUI
// component uses, so that width math is done one way (cell widths, via
// charmbracelet/x/ansi) and untrusted server text never reaches the
// terminal with control sequences in it.
package wrap

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// TabWidth is how many spaces a tab becomes: a tab's width depends on the
// column it starts at, which would break every width computation.
const TabWidth = 4

// Sanitize makes untrusted text safe to print: it removes ANSI escape
// sequences and every control character except the newline, turns tabs
// into spaces and CRLF into LF, and replaces invalid UTF-8 with U+FFFD.
// Model output and tool output can hold anything; without this a reply
// could move the cursor, change colours or clear the screen.
func Sanitize(s string) string {
	if isClean(s) {
		return s
	}
	s = ansi.Strip(strings.ToValidUTF8(s, "\uFFFD"))
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteByte('\n')
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			// Dropped: C0 and C1 controls, including a lone \r.
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isClean reports whether s needs no sanitizing: valid UTF-8 without
// control characters other than '\n'. It is the fast path for the common
// case of plain text.
func isClean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\n' || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 || r >= 0x80 && r < 0xa0 {
				return false
			}
			i += size - 1
		}
	}
	return true
}

// Width is the number of terminal cells s takes, ignoring ANSI sequences.
func Width(s string) int { return ansi.StringWidth(s) }

// Lines wraps s to at most width cells per line, breaking at spaces when it
// can and inside words when it must, and returns the lines. s must already
// be sanitized; it may hold ANSI styling. A width below 1 is read as 1. An
// empty string is one empty line.
func Lines(s string, width int) []string {
	if width < 1 {
		width = 1
	}
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		out = appendLine(out, line, width)
	}
	return out
}

// AppendLines is Lines appending to dst, for callers that build one slice
// from several texts.
func AppendLines(dst []string, s string, width int) []string {
	if width < 1 {
		width = 1
	}
	for line := range strings.SplitSeq(s, "\n") {
		dst = appendLine(dst, line, width)
	}
	return dst
}

func appendLine(dst []string, line string, width int) []string {
	if ansi.StringWidth(line) <= width {
		return append(dst, line)
	}
	w := ansi.Wrap(line, width, "")
	for part := range strings.SplitSeq(w, "\n") {
		// Wrap can leave a part wider than the limit for a grapheme wider
		// than the whole width (a wide character at width 1).
		if ansi.StringWidth(part) > width {
			part = ansi.Truncate(part, width, "")
		}
		dst = append(dst, part)
	}
	return dst
}

// Truncate cuts s to at most width cells, ending with "…" when it cut.
func Truncate(s string, width int) string {
	if width < 1 {
		return ""
	}
	return ansi.Truncate(s, width, "…")
}

// OneLine turns s into a single line for summaries: newlines become "⏎ "
// and runs of spaces one space.
func OneLine(s string) string {
	s = Sanitize(s)
	s = strings.ReplaceAll(s, "\n", " ⏎ ")
	return strings.Join(strings.Fields(s), " ")
}

// Pad right-pads s with spaces to width cells (never cuts).
func Pad(s string, width int) string {
	w := ansi.StringWidth(s)
	if w >= width {
		return s
	}
	return s + strings.Repeat(" ", width-w)
}
