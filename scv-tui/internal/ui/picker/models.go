package picker

import (
	"strings"

	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// Choice is one row of a Models picker: the value chosen and the line
// shown for it.
type Choice struct {
	ID, Label string
}

// Models is the /model picker: the models a session may switch to, the
// one in use marked and selected first.
type Models struct {
	choices  []Choice
	current  string
	selected int
}

// NewModels returns a picker of choices with current (the model in use)
// selected.
func NewModels(choices []Choice, current string) *Models {
	p := &Models{choices: choices, current: current}
	for i, c := range choices {
		if c.ID == current {
			p.selected = i
		}
	}
	return p
}

// Move moves the selection by d rows, within the list.
func (p *Models) Move(d int) {
	if len(p.choices) > 0 {
		p.selected = min(max(p.selected+d, 0), len(p.choices)-1)
	}
}

// Chosen is the selected model's id; "" when it is the one in use.
func (p *Models) Chosen() string {
	if p.selected >= len(p.choices) || p.choices[p.selected].ID == p.current {
		return ""
	}
	return p.choices[p.selected].ID
}

// View renders the picker within width columns and height rows.
func (p *Models) View(st styles.Styles, width, height int) string {
	lines := []string{st.Panel.Render(wrap.Truncate("Switch the session's model", width))}
	lines = appendRows(lines, st, len(p.choices), p.selected, width, height, func(i int) string {
		c := p.choices[i]
		if c.ID == p.current {
			return wrap.OneLine(c.Label + " (in use)")
		}
		return wrap.OneLine(c.Label)
	})
	lines = append(lines, st.Dim.Render(wrap.Truncate("↑/↓ choose · Enter switch · Esc close", width)))
	return strings.Join(lines, "\n")
}
