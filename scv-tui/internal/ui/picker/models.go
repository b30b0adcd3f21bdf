package picker

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// Choice is one row of a Models picker: the model and provider chosen,
// the line shown for it, and why it cannot be chosen ("" when it can).
type Choice struct {
	ID, Provider, Label, Unavailable string
}

// Models is the /model picker: the models a session may switch to,
// grouped by provider (rows of one provider are consecutive and its name
// shows on the first), the one in use marked and selected first.
type Models struct {
	choices  []Choice
	current  Choice // ID and Provider of the model in use
	selected int
}

// NewModels returns a picker of choices with the model id of provider
// (the one in use) selected.
func NewModels(choices []Choice, id, provider string) *Models {
	p := &Models{choices: choices, current: Choice{ID: id, Provider: provider}}
	for i, c := range choices {
		if p.inUse(c) {
			p.selected = i
		}
	}
	return p
}

func (p *Models) inUse(c Choice) bool {
	return c.ID == p.current.ID && c.Provider == p.current.Provider
}

// Move moves the selection by d rows, within the list.
func (p *Models) Move(d int) {
	if len(p.choices) > 0 {
		p.selected = min(max(p.selected+d, 0), len(p.choices)-1)
	}
}

// Chosen is the selected row; ok is false when it is the model in use.
func (p *Models) Chosen() (c Choice, ok bool) {
	if p.selected >= len(p.choices) || p.inUse(p.choices[p.selected]) {
		return Choice{}, false
	}
	return p.choices[p.selected], true
}

// View renders the picker within width columns and height rows.
func (p *Models) View(st styles.Styles, width, height int) string {
	lines := []string{st.Panel.Render(wrap.Truncate("Switch the session's model", width))}
	// The provider column is as wide as the longest name, at most a third
	// of the width; without providers (an older server) there is none.
	col := 0
	for _, c := range p.choices {
		col = max(col, ansi.StringWidth(wrap.OneLine(c.Provider)))
	}
	col = min(col, width/3)
	lines = appendRows(lines, st, len(p.choices), p.selected, width, height, func(i int) string {
		c := p.choices[i]
		label := wrap.OneLine(c.Label)
		switch {
		case p.inUse(c):
			label += " (in use)"
		case c.Unavailable != "":
			label += " · unavailable: " + wrap.OneLine(c.Unavailable)
		}
		if col == 0 {
			return label
		}
		name := ""
		if i == 0 || p.choices[i-1].Provider != c.Provider {
			name = wrap.Truncate(wrap.OneLine(c.Provider), col)
		}
		return name + strings.Repeat(" ", col-ansi.StringWidth(name)) + "  " + label
	})
	lines = append(lines, st.Dim.Render(wrap.Truncate("↑/↓ choose · Enter switch · Esc close", width)))
	return strings.Join(lines, "\n")
}
