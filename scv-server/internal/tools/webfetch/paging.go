package webfetch

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/tools"
)

// render returns the part of doc starting at character offset, within
// limit bytes including its header and footer. requested is the URL asked
// for; the header names it when redirects led elsewhere.
func render(doc *document, requested string, offset int64, limit int) tools.Result {
	if offset > int64(doc.Runes) {
		return tools.Failed(fmt.Sprintf("offset %d is past the end of the text of %s, which has %d characters", offset, doc.URL, doc.Runes))
	}
	var head strings.Builder
	fmt.Fprintf(&head, "URL: %s\n", doc.URL)
	if requested != doc.URL {
		fmt.Fprintf(&head, "Redirected from: %s\n", requested)
	}
	fmt.Fprintf(&head, "Status: %s\nContent-Type: %s\n", doc.Status, doc.ContentType)
	if doc.Title != "" {
		fmt.Fprintf(&head, "Title: %s\n", truncateBytes(doc.Title, 300))
	}
	if doc.Cut {
		head.WriteString("Note: the download stopped at web.fetch_max_bytes; the text is of that first part only.\n")
	}
	footerRoom := len(footer(int64(doc.Runes), int64(doc.Runes))) + 2
	headRoom := head.Len() + len(rangeLine(int64(doc.Runes), int64(doc.Runes), doc.Runes)) + 1
	budget := max(limit-headRoom-footerRoom, 256)

	start := byteIndex(doc.Text, offset)
	rest := doc.Text[start:]
	chunk := rest
	if len(chunk) > budget {
		chunk = truncateBytes(rest, budget)
		// End on a line break near the cut, when there is one.
		if i := strings.LastIndexByte(chunk, '\n'); i >= len(chunk)*3/4 {
			chunk = chunk[:i+1]
		}
	}
	end := offset + int64(utf8.RuneCountInString(chunk))
	more := end < int64(doc.Runes)
	var b strings.Builder
	b.WriteString(head.String())
	b.WriteString(rangeLine(offset, end, doc.Runes))
	b.WriteString("\n")
	b.WriteString(chunk)
	if more {
		if !strings.HasSuffix(chunk, "\n") {
			b.WriteString("\n")
		}
		b.WriteString(footer(end, int64(doc.Runes)))
	}
	return tools.Result{Success: doc.OK, Output: b.String(), Truncated: more || doc.Cut}
}

func rangeLine(start, end int64, total int) string {
	return fmt.Sprintf("Characters: %d-%d of %d\n", start, end, total)
}

func footer(end, total int64) string {
	return fmt.Sprintf("[%d more characters: call web_fetch with the same url and \"offset\": %d for the next part]\n", total-end, end)
}

// byteIndex returns the byte index of character offset in s.
func byteIndex(s string, offset int64) int {
	var n int64
	for i := range s {
		if n == offset {
			return i
		}
		n++
	}
	return len(s)
}

// truncateBytes returns the longest prefix of s of at most n bytes that
// does not cut a character.
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
