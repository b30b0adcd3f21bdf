package transcript

import (
	"strings"

	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// The visible lines and scrolling.

// visibleRange returns the indexes of the first and last items on screen
// (-1, -1 when empty).
func (t *Transcript) visibleRange() (first, last int) {
	if len(t.items) == 0 {
		return -1, -1
	}
	if t.follow {
		n := 0
		i := len(t.items) - 1
		for ; i > 0; i-- {
			n += t.itemHeight(i)
			if n >= t.height {
				break
			}
		}
		return i, len(t.items) - 1
	}
	n := t.itemHeight(t.top.idx) - t.top.line
	i := t.top.idx
	for i+1 < len(t.items) && n < t.height-1 {
		i++
		n += t.itemHeight(i)
	}
	return t.top.idx, i
}

// View renders the visible lines, exactly height lines of at most width
// cells.
func (t *Transcript) View() string {
	lines := t.visible()
	for len(lines) < t.height {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// visible returns the lines on screen: from the anchor down, or the last
// height lines when following. It renders only the items it reaches.
func (t *Transcript) visible() []string {
	h := t.height
	if len(t.items) == 0 {
		return nil
	}
	if t.follow {
		var chunks [][]string
		n := 0
		for i := len(t.items) - 1; i >= 0 && n < h; i-- {
			l := t.itemLines(i)
			chunks = append(chunks, l)
			n += len(l)
		}
		// Copy only the last h lines: the oldest chunk may be a long
		// reply of which a few lines show.
		out := make([]string, 0, min(n, h))
		skip := max(n-h, 0)
		for i := len(chunks) - 1; i >= 0; i-- {
			c := chunks[i]
			if skip >= len(c) {
				skip -= len(c)
				continue
			}
			out = append(out, c[skip:]...)
			skip = 0
		}
		return out
	}
	body := h - 1 // the last line says there is more below
	out := make([]string, 0, h)
	p := t.top
	for p.idx < len(t.items) && len(out) < body {
		l := t.itemLines(p.idx)
		if p.line < len(l) {
			out = append(out, l[p.line:min(len(l), p.line+body-len(out))]...)
		}
		p = pos{p.idx + 1, 0}
	}
	out = append(out, t.st.Dim.Render(wrap.Truncate("── more below · End follows the conversation ──", t.width)))
	return out
}

// followTop is the anchor of the view when it follows the bottom.
func (t *Transcript) followTop() (pos, bool) {
	n := 0
	for i := len(t.items) - 1; i >= 0; i-- {
		n += t.itemHeight(i)
		if n >= t.height {
			return pos{i, n - t.height}, true
		}
	}
	return pos{}, false // everything fits: nothing to scroll
}

// ScrollUp moves the view n lines up.
func (t *Transcript) ScrollUp(n int) {
	if t.follow {
		top, ok := t.followTop()
		if !ok {
			return
		}
		t.top = top
		t.follow = false
	}
	for n > 0 {
		if t.top.line > 0 {
			d := min(n, t.top.line)
			t.top.line -= d
			n -= d
			continue
		}
		if t.top.idx == 0 {
			break
		}
		t.top.idx--
		t.top.line = t.itemHeight(t.top.idx)
	}
}

// ScrollDown moves the view n lines down; reaching the bottom follows it
// again.
func (t *Transcript) ScrollDown(n int) {
	if t.follow {
		return
	}
	for n > 0 && t.top.idx < len(t.items) {
		rem := t.itemHeight(t.top.idx) - t.top.line
		if n < rem {
			t.top.line += n
			break
		}
		n -= rem
		t.top = pos{t.top.idx + 1, 0}
	}
	// Follow again once the rest fits on the screen.
	need := t.height - 1
	seen := 0
	for i := t.top.idx; i < len(t.items) && seen <= need; i++ {
		h := t.itemHeight(i)
		if i == t.top.idx {
			h -= t.top.line
		}
		seen += h
	}
	if seen <= need {
		t.follow = true
	}
}

// PageUp scrolls one screen up.
func (t *Transcript) PageUp() { t.ScrollUp(max(t.height-2, 1)) }

// PageDown scrolls one screen down.
func (t *Transcript) PageDown() { t.ScrollDown(max(t.height-2, 1)) }

// Home shows the oldest item.
func (t *Transcript) Home() {
	if _, ok := t.followTop(); !ok {
		return
	}
	t.follow = false
	t.top = pos{}
}

// End follows the newest output again.
func (t *Transcript) End() { t.follow = true }
