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
func (r *Renderer) Render(text string, width int) []string {
	if width < 1 {
		width = 1
	}
	tr := r.renderer(width)
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
		// Code blocks and tables are not wrapped by glamour; cut them into
		// lines that fit rather than letting the terminal wrap them.
		if ansi.StringWidth(l) > width {
			res = append(res, strings.Split(ansi.Hardwrap(l, width, true), "\n")...)
			continue
		}
		res = append(res, TrimStyledRight(l))
	}
	if len(res) == 0 {
		return []string{""}
	}
	return res
}

func (r *Renderer) renderer(width int) *glamour.TermRenderer {
	if tr, ok := r.byW[width]; ok {
		return tr
	}
	// glamour's margins take 2 cells on each side of the word-wrap width.
	ww := max(width-4, 8)
	tr, err := glamour.NewTermRenderer(glamour.WithStandardStyle(r.style), glamour.WithWordWrap(ww))
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
