package webfetch

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/marker"
	"golang.org/x/net/html"
)

// renderList renders <ul> and <ol> as the commonmark plugin does (the
// same markers, numbering, indentation and blank-line trimming), without
// its costs: it formats each number with fmt, trims every item with a
// byte-by-byte append loop and three bytes.ReplaceAll, and splits and
// rewrites every line; a page of lists spent a tenth of its conversion
// there.
func renderList(ctx converter.Context, w converter.Writer, n *html.Node) converter.RenderStatus {
	var items [][]byte
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		var buf bytes.Buffer
		ctx.RenderNodes(ctx, &buf, c)
		if item := bytes.TrimSpace(buf.Bytes()); len(item) > 0 {
			items = append(items, item)
		}
	}
	if len(items) == 0 {
		return converter.RenderSuccess
	}
	prefix := listPrefix(n, len(items))
	indent := bytes.Repeat([]byte{' '}, utf8.RuneCountInString(prefix(0)))
	w.WriteString("\n\n")
	for i, item := range items {
		w.WriteString(prefix(i))
		item = trimHardLineBreaks(trimNewlines(item))
		writeIndented(w, item, indent)
		if i < len(items)-1 {
			w.WriteByte('\n')
		}
	}
	w.WriteString("\n\n")
	return converter.RenderSuccess
}

// listPrefix returns the marker of each item: "- ", or for an ordered
// list its number, zero-padded to the width of the last one.
func listPrefix(n *html.Node, count int) func(int) string {
	if n.Data == "ul" {
		return func(int) string { return "- " }
	}
	start := 1
	for _, a := range n.Attr {
		if a.Key == "start" {
			if v, err := strconv.Atoi(a.Val); err == nil {
				start = v
			}
		}
	}
	width := utf8.RuneCountInString(strconv.Itoa(start + count - 1))
	return func(i int) string { return fmt.Sprintf("%0*d. ", width, start+i) }
}

// trimNewlines keeps at most two newlines in a row, dropping the spaces
// before the dropped ones (textutils.TrimConsecutiveNewlines).
func trimNewlines(s []byte) []byte {
	if bytes.Count(s, []byte("\n")) < 3 {
		return s
	}
	out := make([]byte, 0, len(s))
	newlines, spaces := 0, 0 // spaces: the pending run of ' ' before s[i]
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\n':
			newlines++
			if newlines <= 2 {
				out = append(out, s[i-spaces:i+1]...)
			}
			spaces = 0
		case ' ':
			spaces++
		default:
			newlines = 0
			out = append(out, s[i-spaces:i+1]...)
			spaces = 0
		}
	}
	return append(out, s[len(s)-spaces:]...)
}

// trimHardLineBreaks drops the two-space hard line breaks before a blank
// line (textutils.TrimUnnecessaryHardLineBreaks).
func trimHardLineBreaks(s []byte) []byte {
	if !bytes.Contains(s, []byte("  \n")) {
		return s
	}
	s = bytes.ReplaceAll(s, []byte("  \n\n"), []byte("\n\n"))
	s = bytes.ReplaceAll(s, []byte("  \n  \n"), []byte("\n\n"))
	return bytes.ReplaceAll(s, []byte("  \n \n"), []byte("\n\n"))
}

// writeIndented writes item with every line but the first indented, and
// the indent added after the code-block newline markers too.
func writeIndented(w converter.Writer, item, indent []byte) {
	if bytes.Contains(item, marker.BytesMarkerCodeBlockNewline) {
		item = bytes.ReplaceAll(item, marker.BytesMarkerCodeBlockNewline, append(bytes.Clone(marker.BytesMarkerCodeBlockNewline), indent...))
	}
	for first := true; ; first = false {
		if !first {
			w.WriteByte('\n')
			w.Write(indent)
		}
		i := bytes.IndexByte(item, '\n')
		if i < 0 {
			w.Write(item)
			return
		}
		w.Write(item[:i])
		item = item[i+1:]
	}
}
