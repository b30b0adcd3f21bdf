package transcript

import "github.com/scv-cli/scv/scv-tui/internal/ui/wrap"

// Rendering of items, and the cache of their rendered lines.

// itemLines returns the rendered lines of item i at the current width,
// rendering it only when its cache is stale. A separator blank line
// follows every item.
func (t *Transcript) itemLines(i int) []string {
	it := t.items[i]
	if it.live != nil {
		return t.streamLines(it)
	}
	if !it.dirty && it.cacheW == t.width {
		return it.lines
	}
	it.lines = append(clip(t.render(it), t.width), "")
	it.cacheW = t.width
	it.dirty = false
	n := 0
	for _, l := range it.lines {
		n += len(l) + 16
	}
	t.cached += n - it.cacheN
	it.cacheN = n
	if t.cached > t.cacheMax {
		t.evict(i)
	}
	return it.lines
}

// evictWindow is how many items on each side of the one being rendered,
// and of the scroll anchor, keep their cache when the cache is full.
const evictWindow = 256

// evict drops the rendered lines of items far from item keep and from the
// scroll anchor, so the cache stays bounded however far the user scrolls.
// A pass costs O(items) and frees all but two windows, so it is rare.
func (t *Transcript) evict(keep int) {
	near := func(i, c int) bool { return i >= c-evictWindow && i <= c+evictWindow }
	t.cached = 0
	for i, it := range t.items {
		if near(i, keep) || near(i, t.top.idx) || near(i, len(t.items)-1) {
			t.cached += it.cacheN
			continue
		}
		it.lines, it.cacheN, it.dirty = nil, 0, true
	}
}

func (t *Transcript) itemHeight(i int) int { return len(t.itemLines(i)) }

// markdownMax is the largest reply rendered as Markdown; a larger one is
// wrapped as plain text, since rendering megabytes would stall the screen.
const markdownMax = 128 << 10

func (t *Transcript) render(it *item) []string {
	t.renders++
	w := t.width
	switch it.kind {
	case User:
		bar := t.st.UserBar.Render("┃ ")
		var out []string
		for _, l := range wrap.Lines(it.text, w-2) {
			out = append(out, bar+t.st.User.Render(l))
		}
		return out
	case Assistant:
		if it.plain || len(it.text) > markdownMax {
			return indent(wrap.Lines(it.text, w-2), t.st.Assistant.Render)
		}
		return t.md.Render(it.text, w)
	case Tool:
		return it.card.Render(t.st, w, t.frame)
	case Marker:
		return indent(wrap.Lines(it.text, w-2), t.st.Dim.Render)
	default:
		style := t.st.Notice
		prefix := "• "
		switch it.level {
		case Warn:
			style, prefix = t.st.Warning, "! "
		case Error:
			style, prefix = t.st.Error, "✗ "
		}
		lines := wrap.Lines(it.text, w-2)
		for i, l := range lines {
			p := "  "
			if i == 0 {
				p = prefix
			}
			lines[i] = style.Render(p + l)
		}
		return lines
	}
}

// clip cuts lines wider than width, in place. Prefixes and margins can pass
// a very small width; a line must never wrap on the terminal. It runs when
// an item is rendered into its cache, not on every view.
func clip(lines []string, width int) []string {
	for i, l := range lines {
		if wrap.Width(l) > width {
			lines[i] = wrap.Truncate(l, width)
		}
	}
	return lines
}

func indent(lines []string, style func(...string) string) []string {
	for i, l := range lines {
		lines[i] = "  " + style(l)
	}
	return lines
}

// streamLines renders a live reply: the lines ended by a newline are
// wrapped once per width; only the partial last line is wrapped per call.
func (t *Transcript) streamLines(it *item) []string {
	s := it.live
	w := t.width
	text := s.buf.String()
	if s.stableW != w {
		s.lines = s.lines[:0]
		s.stable = 0
		s.wrapped = 0
		s.stableW = w
	}
	// Lines are appended in place, never copied: a delta costs the size
	// of its own line, not of the reply so far. The slice returned is
	// valid until the next call.
	if s.wrapped < s.stableEnd {
		seg := text[s.wrapped : s.stableEnd-1] // without the final '\n'
		s.lines = s.lines[:s.stable]
		for _, l := range wrap.Lines(seg, w-2) {
			s.lines = append(s.lines, "  "+t.st.Assistant.Render(l))
		}
		clip(s.lines[s.stable:], w)
		s.stable = len(s.lines)
		s.wrapped = s.stableEnd
	}
	s.lines = s.lines[:s.stable]
	for _, l := range wrap.Lines(text[s.stableEnd:]+"▍", w-2) {
		s.lines = append(s.lines, "  "+t.st.Assistant.Render(l))
	}
	clip(s.lines[s.stable:], w)
	s.lines = append(s.lines, "")
	it.dirty = false
	return s.lines
}
