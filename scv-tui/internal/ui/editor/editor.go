// Package editor is the prompt input: a multi-line editor (Enter is the
// caller's to send; Alt+Enter or Shift+Enter inserts a newline), bracketed
// paste of large text, and Up/Down recall of the prompt history.
//
// Rendering costs what is visible: only the logical lines around the cursor
// are wrapped, so a pasted 256 KiB prompt types as fast as an empty one.
package editor

import (
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/mattn/go-runewidth"

	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// Editor is the prompt input. The zero value is not ready; use New.
type Editor struct {
	lines [][]rune
	row   int // cursor line
	col   int // cursor rune index in the line

	history []string // oldest first
	histIdx int      // index into history while recalling; len(history) = the draft
	draft   string   // what was typed before recall began

	maxRows int // rows shown at most
	prompt  string

	// ver counts changes; the rows of the last render are reused while it
	// and the width stay the same (Height and View render the same rows).
	ver    uint64
	cacheV uint64
	cacheW int
	cache  []row
}

// New returns an empty editor showing at most maxRows rows.
func New(maxRows int) *Editor {
	return &Editor{lines: [][]rune{nil}, maxRows: max(maxRows, 1), prompt: "> "}
}

// SetMaxRows sets how many rows the editor may take.
func (e *Editor) SetMaxRows(n int) {
	if n = max(n, 1); n != e.maxRows {
		e.maxRows = n
		e.ver++
	}
}

// SetPrompt sets the text before the first row (for example "edit> ").
func (e *Editor) SetPrompt(p string) { e.prompt = p; e.ver++ }

// SetHistory sets the prompts Up/Down recall, oldest first, and ends any
// recall in progress.
func (e *Editor) SetHistory(h []string) {
	e.history = h
	e.histIdx = len(h)
}

// Value is the text in the editor.
func (e *Editor) Value() string {
	var b strings.Builder
	for i, l := range e.lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(string(l))
	}
	return b.String()
}

// Empty reports whether the editor holds no text.
func (e *Editor) Empty() bool { return len(e.lines) == 1 && len(e.lines[0]) == 0 }

// Lines is the number of logical lines.
func (e *Editor) Lines() int { return len(e.lines) }

// SetValue replaces the text; the cursor goes to its end.
func (e *Editor) SetValue(s string) {
	e.ver++
	e.lines = [][]rune{nil}
	e.row, e.col = 0, 0
	e.Insert(s)
}

// Reset empties the editor and ends any history recall.
func (e *Editor) Reset() {
	e.ver++
	e.lines = [][]rune{nil}
	e.row, e.col = 0, 0
	e.histIdx = len(e.history)
	e.draft = ""
}

// Insert inserts text at the cursor (typed or pasted). Text is sanitized:
// CRLF and a lone CR (what many terminals and old editors put at line ends)
// become LF, tabs become spaces, other control characters are dropped.
func (e *Editor) Insert(s string) {
	e.ver++
	if strings.IndexByte(s, '\r') >= 0 {
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
	}
	s = wrap.Sanitize(s)
	if s == "" {
		return
	}
	parts := strings.Split(s, "\n")
	line := e.lines[e.row]
	if len(parts) == 1 {
		// In place: typing into a long line must not copy it.
		ins := []rune(parts[0])
		e.lines[e.row] = slices.Insert(line, e.col, ins...)
		e.col += len(ins)
		return
	}
	tail := append([]rune(nil), line[e.col:]...)
	head := append(line[:e.col:e.col], []rune(parts[0])...)
	newLines := make([][]rune, 0, len(parts))
	newLines = append(newLines, head)
	for _, p := range parts[1 : len(parts)-1] {
		newLines = append(newLines, []rune(p))
	}
	last := []rune(parts[len(parts)-1])
	e.col = len(last)
	newLines = append(newLines, append(last, tail...))
	rest := append([][]rune(nil), e.lines[e.row+1:]...)
	e.lines = append(append(e.lines[:e.row], newLines...), rest...)
	e.row += len(parts) - 1
}

// Newline inserts a line break at the cursor.
func (e *Editor) Newline() { e.Insert("\n") }

// Backspace deletes the character before the cursor, joining lines at a
// line start.
func (e *Editor) Backspace() {
	e.ver++
	if e.col > 0 {
		l := e.lines[e.row]
		e.lines[e.row] = append(l[:e.col-1], l[e.col:]...)
		e.col--
		return
	}
	if e.row == 0 {
		return
	}
	prev := e.lines[e.row-1]
	e.col = len(prev)
	e.lines[e.row-1] = append(prev, e.lines[e.row]...)
	e.lines = append(e.lines[:e.row], e.lines[e.row+1:]...)
	e.row--
}

// Delete deletes the character under the cursor.
func (e *Editor) Delete() {
	e.ver++
	l := e.lines[e.row]
	if e.col < len(l) {
		e.lines[e.row] = append(l[:e.col], l[e.col+1:]...)
		return
	}
	if e.row+1 < len(e.lines) {
		e.lines[e.row] = append(l, e.lines[e.row+1]...)
		e.lines = append(e.lines[:e.row+1], e.lines[e.row+2:]...)
	}
}

// KeyResult says what the editor did with a key.
type KeyResult int

// Key results.
const (
	Ignored KeyResult = iota // not an editing key: the caller's
	Handled                  // the editor changed or moved
)

// HandleKey applies an editing key. Enter is never handled here: sending
// is the caller's decision.
func (e *Editor) HandleKey(k tea.KeyPressMsg) KeyResult {
	e.ver++
	switch k.Keystroke() {
	case "alt+enter", "shift+enter", "ctrl+j":
		e.Newline()
	case "backspace", "ctrl+h":
		e.Backspace()
	case "delete", "ctrl+d":
		e.Delete()
	case "left", "ctrl+b":
		if e.col > 0 {
			e.col--
		} else if e.row > 0 {
			e.row--
			e.col = len(e.lines[e.row])
		}
	case "right", "ctrl+f":
		if e.col < len(e.lines[e.row]) {
			e.col++
		} else if e.row+1 < len(e.lines) {
			e.row++
			e.col = 0
		}
	case "home", "ctrl+a":
		e.col = 0
	case "end", "ctrl+e":
		e.col = len(e.lines[e.row])
	case "ctrl+u":
		e.lines[e.row] = append([]rune(nil), e.lines[e.row][e.col:]...)
		e.col = 0
	case "ctrl+k":
		e.lines[e.row] = e.lines[e.row][:e.col]
	case "ctrl+w", "alt+backspace":
		l := e.lines[e.row]
		i := e.col
		for i > 0 && l[i-1] == ' ' {
			i--
		}
		for i > 0 && l[i-1] != ' ' {
			i--
		}
		e.lines[e.row] = append(l[:i], l[e.col:]...)
		e.col = i
	case "up":
		if e.row > 0 {
			e.row--
			e.col = min(e.col, len(e.lines[e.row]))
		} else {
			e.recall(-1)
		}
	case "down":
		if e.row+1 < len(e.lines) {
			e.row++
			e.col = min(e.col, len(e.lines[e.row]))
		} else {
			e.recall(+1)
		}
	default:
		if k.Text != "" && k.Mod&^tea.ModShift == 0 {
			e.Insert(k.Text)
			return Handled
		}
		return Ignored
	}
	return Handled
}

// recall moves through the history: -1 to older, +1 to newer; past the
// newest the draft typed before recall comes back.
func (e *Editor) recall(dir int) {
	if len(e.history) == 0 {
		return
	}
	if e.histIdx > len(e.history) {
		e.histIdx = len(e.history)
	}
	next := e.histIdx + dir
	if next < 0 || next > len(e.history) {
		return
	}
	if e.histIdx == len(e.history) {
		e.draft = e.Value()
	}
	e.histIdx = next
	idx := e.histIdx
	if idx == len(e.history) {
		e.SetValue(e.draft)
	} else {
		e.SetValue(e.history[idx])
	}
	e.histIdx = idx
	if dir < 0 {
		// Recalling older prompts keeps going up from the first line.
		e.row, e.col = 0, min(e.col, len(e.lines[0]))
	}
}

// Height is the number of rows View returns at width.
func (e *Editor) Height(width int) int {
	return len(e.rows(width))
}

type row struct {
	text   []rune
	cursor int // rune index of the cursor in this row, or -1
}

// rows returns the visible rows: the wrapped logical lines around the
// cursor, at most maxRows of them.
func (e *Editor) rows(width int) []row {
	if e.cache != nil && e.cacheV == e.ver && e.cacheW == width {
		return e.cache
	}
	e.cache, e.cacheV, e.cacheW = e.buildRows(width), e.ver, width
	return e.cache
}

func (e *Editor) buildRows(width int) []row {
	inner := max(width-runewidth.StringWidth(e.prompt), 1)
	cur := wrapLine(e.lines[e.row], inner, e.col)
	// Rows above and below the cursor's line fill the rest, the ones above
	// first so the cursor row stays near the bottom.
	out := cur
	ci := -1
	for i, r := range cur {
		if r.cursor >= 0 {
			ci = i
		}
	}
	// Keep the cursor row visible within maxRows.
	if len(out) > e.maxRows {
		start := max(0, min(ci-e.maxRows+1, len(out)-e.maxRows))
		return out[start : start+e.maxRows]
	}
	for l := e.row - 1; l >= 0 && len(out) < e.maxRows; l-- {
		above := wrapLine(e.lines[l], inner, -1)
		if len(above)+len(out) > e.maxRows {
			above = above[len(above)-(e.maxRows-len(out)):]
		}
		out = append(above, out...)
	}
	for l := e.row + 1; l < len(e.lines) && len(out) < e.maxRows; l++ {
		below := wrapLine(e.lines[l], inner, -1)
		if len(below)+len(out) > e.maxRows {
			below = below[:e.maxRows-len(out)]
		}
		out = append(out, below...)
	}
	return out
}

// wrapLine cuts a line into rows of at most width cells. cursor is the
// cursor's rune index in the line, or -1; a cursor at the end of a full
// row goes to the next row.
func wrapLine(l []rune, width, cursor int) []row {
	out := make([]row, 0, len(l)/width+1)
	start, w := 0, 0
	for i, r := range l {
		rw := runewidth.RuneWidth(r)
		if w+rw > width && i > start {
			out = append(out, row{text: l[start:i], cursor: -1})
			start, w = i, 0
		}
		w += rw
	}
	out = append(out, row{text: l[start:], cursor: -1})
	if cursor >= 0 {
		// Find the row holding the cursor.
		pos := 0
		for i := range out {
			n := len(out[i].text)
			if cursor < pos+n || i == len(out)-1 {
				c := cursor - pos
				if i == len(out)-1 && runewidth.StringWidth(string(out[i].text)) >= width && c == n {
					out = append(out, row{cursor: 0})
				} else {
					out[i].cursor = c
				}
				break
			}
			pos += n
		}
	}
	return out
}

// View renders the editor at width cells. placeholder is shown, dimmed,
// when the editor is empty.
func (e *Editor) View(st styles.Styles, width int, placeholder string) string {
	pad := strings.Repeat(" ", runewidth.StringWidth(e.prompt))
	if e.Empty() {
		ph := wrap.Truncate(placeholder, max(width-len(pad)-1, 0))
		return st.Prompt.Render(e.prompt) + st.Cursor.Render(" ") + st.Dim.Render(ph)
	}
	rows := e.rows(width)
	var b strings.Builder
	for i, r := range rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i == 0 {
			b.WriteString(st.Prompt.Render(e.prompt))
		} else {
			b.WriteString(pad)
		}
		if r.cursor < 0 {
			b.WriteString(string(r.text))
			continue
		}
		b.WriteString(string(r.text[:r.cursor]))
		under := " "
		if r.cursor < len(r.text) {
			under = string(r.text[r.cursor])
		}
		b.WriteString(st.Cursor.Render(under))
		if r.cursor < len(r.text) {
			b.WriteString(string(r.text[r.cursor+1:]))
		}
	}
	return b.String()
}

// WordAtCursor returns the word that ends at the cursor on its line (the
// runes back to the last space), for completion.
func (e *Editor) WordAtCursor() string {
	l := e.lines[e.row]
	i := e.col
	for i > 0 && l[i-1] != ' ' {
		i--
	}
	return string(l[i:e.col])
}

// ReplaceWordAtCursor replaces the word WordAtCursor returns with s, the
// cursor after it.
func (e *Editor) ReplaceWordAtCursor(s string) {
	e.ver++
	l := e.lines[e.row]
	i := e.col
	for i > 0 && l[i-1] != ' ' {
		i--
	}
	ins := []rune(s)
	tail := append([]rune(nil), l[e.col:]...)
	e.lines[e.row] = append(append(l[:i:i], ins...), tail...)
	e.col = i + len(ins)
}

// Position says where the cursor is, for a "line 3/40" hint on long input.
func (e *Editor) Position() (line, lines int) { return e.row + 1, len(e.lines) }
