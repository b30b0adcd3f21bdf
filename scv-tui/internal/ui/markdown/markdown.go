// Package markdown renders finished assistant replies as terminal
// Markdown with glamour, with highlighted code blocks. Building a glamour
// renderer is costly, so one is kept per width.
package markdown

import (
	"regexp"
	"strings"

	"charm.land/glamour/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// maxRenderers bounds the per-width renderer cache; a window dragged
// through many widths must not keep a renderer for each.
const maxRenderers = 4

// Renderer turns Markdown into lines of at most a given width. It is not
// safe for concurrent use (the TUI renders on one goroutine).
type Renderer struct {
	style string
	byW   map[int]*glamour.TermRenderer
	order []int
	code  *glamour.TermRenderer
}

// New returns a renderer using the glamour style name ("dark", "light",
// "ascii", ...).
func New(style string) *Renderer {
	if style == "" {
		style = "dark"
	}
	return &Renderer{style: style, byW: make(map[int]*glamour.TermRenderer)}
}

// Render renders text (already sanitized) to lines no wider than width.
// If glamour fails, the text is wrapped plainly instead: a reply is never
// lost to a rendering problem.
//
// Top-level fenced code blocks are rendered apart, without glamour's word
// wrap (which restarts a wrapped code line at the margin), and cut to the
// width at their own indentation instead.
func (r *Renderer) Render(text string, width int) []string {
	if width < 1 {
		width = 1
	}
	segs := splitFences(text)
	if len(segs) == 1 {
		return r.renderPart(text, width, segs[0].code)
	}
	var out []string
	for _, sg := range segs {
		lines := r.renderPart(sg.text, width, sg.code)
		if len(lines) == 1 && lines[0] == "" {
			continue
		}
		if len(out) > 0 {
			out = append(out, "")
		}
		out = append(out, lines...)
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// renderPart renders one part of a reply: a fenced code block (code) or
// the Markdown between them.
func (r *Renderer) renderPart(text string, width int, code bool) []string {
	tr := r.renderer(width)
	if code {
		tr = r.codeRenderer()
	}
	if tr == nil {
		return wrap.Lines(text, width)
	}
	out, err := tr.Render(text)
	if err != nil {
		return wrap.Lines(text, width)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	// glamour pads with blank lines above and below; the transcript spaces
	// items itself.
	start, end := 0, len(lines)
	for start < end && strings.TrimSpace(ansi.Strip(lines[start])) == "" {
		start++
	}
	for end > start && strings.TrimSpace(ansi.Strip(lines[end-1])) == "" {
		end--
	}
	var res []string
	for _, l := range lines[start:end] {
		l = TrimStyledRight(l)
		// Code blocks and tables are not wrapped by glamour; cut them into
		// lines that fit rather than letting the terminal wrap them.
		if ansi.StringWidth(l) > width {
			res = append(res, cutIndented(l, width)...)
			continue
		}
		res = append(res, l)
	}
	if len(res) == 0 {
		return []string{""}
	}
	return res
}

// segment is a part of a reply: a top-level fenced code block or the
// Markdown between two of them.
type segment struct {
	text string
	code bool
}

// splitFences splits text at its top-level fenced code blocks (a fence of
// three or more backticks or tildes indented at most three spaces, closed
// by a fence of the same character at least as long, or by the end of the
// text, as CommonMark has it). Fences inside list items stay with their
// Markdown.
func splitFences(text string) []segment {
	var segs []segment
	lines := strings.SplitAfter(text, "\n")
	start, open := 0, ""
	flush := func(end int, code bool) {
		if end > start {
			segs = append(segs, segment{text: strings.Join(lines[start:end], ""), code: code})
		}
		start = end
	}
	for i, l := range lines {
		f := fence(l)
		switch {
		case open == "" && f != "":
			flush(i, false)
			open = f
		case open != "" && f != "" && f[0] == open[0] && len(f) >= len(open) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), f[:1])) == "":
			flush(i+1, true)
			open = ""
		}
	}
	flush(len(lines), open != "")
	if len(segs) == 0 {
		return []segment{{text: text}}
	}
	return segs
}

// fence returns the fence that opens or closes a code block on line l
// ("```", "~~~~"), or "".
func fence(l string) string {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 || len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return ""
	}
	n := len(t) - len(strings.TrimLeft(t, t[:1]))
	if n < 3 {
		return ""
	}
	return t[:n]
}

// codeWrap is the word-wrap width of the code renderer: wide enough that
// glamour never wraps a real code line (Render cuts it to the screen), not
// so wide that its padding of every line costs much.
const codeWrap = 1024

// codeRenderer returns the renderer of fenced code blocks, which does not
// depend on the width.
func (r *Renderer) codeRenderer() *glamour.TermRenderer {
	if r.code == nil {
		r.code, _ = glamour.NewTermRenderer(glamour.WithStandardStyle(r.style), glamour.WithWordWrap(codeWrap))
	}
	return r.code
}

// cutIndented cuts a styled line wider than width into lines that fit,
// continuing at the line's own indentation so wrapped code keeps its
// shape (an indentation over half the width is not kept: the text would
// barely fit beside it). Each piece carries on the colour the line had
// where it was cut.
func cutIndented(l string, width int) []string {
	parts := strings.Split(ansi.Hardwrap(l, width, true), "\n")
	plain := ansi.Strip(l)
	indent := len(plain) - len(strings.TrimLeft(plain, " "))
	if len(parts) < 2 || indent == 0 || indent > width/2 {
		return carryStyle(parts, "")
	}
	rest := strings.Split(ansi.Hardwrap(strings.Join(parts[1:], ""), width-indent, true), "\n")
	return carryStyle(append(parts[:1], rest...), strings.Repeat(" ", indent))
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// carryStyle starts every piece after the first with pad and the style
// in force where the previous one ended, and closes a piece whose style is
// still open, so each line stands on its own on the screen.
func carryStyle(parts []string, pad string) []string {
	active := ""
	for i, p := range parts {
		if i > 0 {
			parts[i] = pad + active + p
		}
		for _, m := range sgr.FindAllString(p, -1) {
			if m == "\x1b[0m" || m == "\x1b[m" {
				active = ""
			} else {
				active = m
			}
		}
		if active != "" {
			parts[i] += "\x1b[m"
		}
	}
	return parts
}

func (r *Renderer) renderer(width int) *glamour.TermRenderer {
	if tr, ok := r.byW[width]; ok {
		return tr
	}
	// glamour's margins take 2 cells on each side of the word-wrap width.
	ww := max(width-4, 8)
	tr, err := glamour.NewTermRenderer(glamour.WithStandardStyle(r.style), glamour.WithWordWrap(ww),
		// A model's single line breaks are meant (a listing, an address):
		// keep them rather than joining the lines as CommonMark would.
		glamour.WithPreservedNewLines())
	if err != nil {
		return nil
	}
	if len(r.order) >= maxRenderers {
		delete(r.byW, r.order[0])
		r.order = r.order[1:]
	}
	r.byW[width] = tr
	r.order = append(r.order, width)
	return tr
}

var trailingSGR = regexp.MustCompile(`\x1b\[[0-9;]*m$`)

// TrimStyledRight removes trailing spaces from a styled line, including
// spaces wrapped in their own style sequences, which glamour uses to pad
// every line to the full width. The padding would cost hundreds of bytes
// a line in a transcript of thousands of items.
func TrimStyledRight(s string) string {
	for {
		t := strings.TrimRight(s, " \u00a0")
		var body string
		switch {
		case strings.HasSuffix(t, "\x1b[m"):
			body = t[:len(t)-3]
		case strings.HasSuffix(t, "\x1b[0m"):
			body = t[:len(t)-4]
		default:
			return t
		}
		trimmed := strings.TrimRight(body, " \u00a0")
		if loc := trailingSGR.FindStringIndex(trimmed); loc != nil {
			// A style that now styles nothing: drop it with its reset.
			s = trimmed[:loc[0]]
			continue
		}
		if len(trimmed) == len(body) {
			return t
		}
		// Visible text was styled up to here: keep the reset.
		return trimmed + "\x1b[m"
	}
}
