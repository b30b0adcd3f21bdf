// Package picker is the /resume list: the workspace's stored sessions, as
// session.listed returned them, newest first.
package picker

import (
	"fmt"
	"strings"
	"time"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// Picker chooses one stored session.
type Picker struct {
	sessions []protocol.SessionSummary
	current  string // the open session: shown, not choosable
	selected int
}

// New returns a picker over sessions; current is the session already open.
func New(sessions []protocol.SessionSummary, current string) *Picker {
	return &Picker{sessions: sessions, current: current}
}

// Len is the number of sessions listed.
func (p *Picker) Len() int { return len(p.sessions) }

// Move moves the selection by d.
func (p *Picker) Move(d int) {
	if len(p.sessions) > 0 {
		p.selected = min(max(p.selected+d, 0), len(p.sessions)-1)
	}
}

// Chosen returns the selected session's id, or "" when nothing can be
// chosen (no sessions, or the open one is selected).
func (p *Picker) Chosen() string {
	if p.selected >= len(p.sessions) {
		return ""
	}
	id := p.sessions[p.selected].SessionID
	if id == p.current {
		return ""
	}
	return id
}

// View renders the picker in at most height rows of width cells.
func (p *Picker) View(st styles.Styles, width, height int) string {
	lines := []string{st.Panel.Render(wrap.Truncate("Resume a session of this workspace", width))}
	if len(p.sessions) == 0 {
		lines = append(lines, st.Dim.Render(wrap.Truncate("No stored sessions yet: a session is stored once it has run a turn.", width)))
		lines = append(lines, st.Dim.Render(wrap.Truncate("Esc closes", width)))
		return strings.Join(lines, "\n")
	}
	lines = appendRows(lines, st, len(p.sessions), p.selected, width, height, func(i int) string {
		s := p.sessions[i]
		when := s.UpdatedAt
		if t, err := time.Parse(time.RFC3339, s.UpdatedAt); err == nil {
			when = t.UTC().Format("2006-01-02 15:04")
		}
		title := wrap.OneLine(s.Title)
		if title == "" {
			title = "(untitled)"
		}
		turns := "turns"
		if s.Turns == 1 {
			turns = "turn"
		}
		line := fmt.Sprintf("%s · %d %s · %s", when, s.Turns, turns, title)
		if s.SessionID == p.current {
			line += " (open now)"
		}
		return line
	})
	lines = append(lines, st.Dim.Render(wrap.Truncate("↑/↓ choose · Enter resume · Esc close", width)))
	return strings.Join(lines, "\n")
}

// appendRows appends the window of n rows (label(i) each) that keeps
// selected in view within height minus a title and a hint line, the
// selected one marked.
func appendRows(lines []string, st styles.Styles, n, selected, width, height int, label func(int) string) []string {
	rows := max(height-2, 1)
	start := 0
	if selected >= rows {
		start = selected - rows + 1
	}
	for i := start; i < min(start+rows, n); i++ {
		line := wrap.Truncate(label(i), width-2)
		if i == selected {
			lines = append(lines, "▸ "+st.Selected.Render(line))
		} else {
			lines = append(lines, "  "+line)
		}
	}
	return lines
}
