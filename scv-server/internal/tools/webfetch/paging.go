package webfetch

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/oneline"
	"github.com/scv-cli/scv/scv-server/internal/tools"

	"github.com/scv-cli/scv/shared/textcut"
)

// render returns the part of doc starting at character offset, within
// limit bytes including its header and footer. requested is the URL asked
// for; the header names it when redirects led elsewhere.
//
// The bound holds for every document and every limit of at least
// minLimit: the header takes at most half the limit (its values, which a
// long URL, a server's redirect target, status line or content type can
// make as long as the header limit, are cut to fit, ending in "…"), and
// the text the rest. Below minLimit (the configuration allows no less
// than 1 KiB) a part still holds one character, so paging moves on.
func render(doc *document, requested string, offset int64, limit int) tools.Result {
	if offset > int64(doc.Runes) {
		return tools.Failed(oneline.Bound(fmt.Sprintf("offset %d is past the end of the text of %s, which has %d characters", offset, shown(doc.URL), doc.Runes), limit))
	}
	head := header(doc, requested, limit/2)
	// The footer's numbers have at most as many digits as the total.
	total := int64(doc.Runes)
	footerRoom := len(footer(total, 2*total)) + 1 // and a line break before it
	budget := max(limit-len(head)-len(rangeLine(total, total, doc.Runes))-1-footerRoom, utf8.UTFMax)

	start := byteIndex(doc.Text, offset)
	rest := doc.Text[start:]
	chunk := rest
	if len(chunk) > budget {
		chunk = textcut.Prefix(rest, budget)
		// End on a line break near the cut, when there is one.
		if i := strings.LastIndexByte(chunk, '\n'); i >= len(chunk)*3/4 {
			chunk = chunk[:i+1]
		}
	}
	end := offset + int64(utf8.RuneCountInString(chunk))
	more := end < total
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(rangeLine(offset, end, doc.Runes))
	b.WriteString("\n")
	b.WriteString(chunk)
	if more {
		if !strings.HasSuffix(chunk, "\n") {
			b.WriteString("\n")
		}
		b.WriteString(footer(end, total))
	}
	return tools.Result{Success: doc.OK, Output: b.String(), Truncated: more || doc.Cut}
}

// minLimit is the least output limit render keeps to.
const minLimit = 512

// maxTitle bounds the title in the header.
const maxTitle = 300

// cutNote is the header line of a document cut at web.fetch_max_bytes.
const cutNote = "Note: the download stopped at web.fetch_max_bytes; the text is of that first part only.\n"

// header writes the header lines of doc within room bytes (the cut note
// and the labels are counted first; the values share what is left).
func header(doc *document, requested string, room int) string {
	type line struct{ label, value string }
	lines := []line{{"URL: ", doc.URL}}
	if requested != doc.URL {
		lines = append(lines, line{"Redirected from: ", requested})
	}
	lines = append(lines, line{"Status: ", doc.Status}, line{"Content-Type: ", doc.ContentType})
	if doc.Title != "" {
		lines = append(lines, line{"Title: ", oneline.Bound(doc.Title, maxTitle)})
	}
	if doc.Cut {
		room -= len(cutNote)
	}
	sizes := make([]int, len(lines))
	for i, l := range lines {
		// One line of valid UTF-8: a server's status line or content
		// type may hold any byte.
		lines[i].value = oneline.Bound(l.value, len(l.value)*utf8.UTFMax)
		room -= len(l.label) + 1
		sizes[i] = len(lines[i].value)
	}
	caps := share(sizes, room)
	var b strings.Builder
	for i, l := range lines {
		b.WriteString(l.label)
		b.WriteString(oneline.Bound(l.value, caps[i]))
		b.WriteByte('\n')
	}
	if doc.Cut {
		b.WriteString(cutNote)
	}
	return b.String()
}

// share divides room bytes among values of the given sizes: each gets
// what it needs when that is no more than an even share of what the
// smaller ones left, and the longest ones split the rest evenly.
func share(sizes []int, room int) []int {
	caps := make([]int, len(sizes))
	order := make([]int, len(sizes))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return sizes[a] - sizes[b] })
	left := max(room, 0)
	for k, i := range order {
		caps[i] = min(sizes[i], left/(len(order)-k))
		left -= caps[i]
	}
	return caps
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
