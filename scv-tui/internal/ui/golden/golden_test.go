package golden

import (
	"strings"
	"testing"

	"charm.land/lipgloss/v2"
)

// TestStyledIgnoresTheTerminal renders with an environment that asks for
// no colour: a styled golden must still hold the colours, since it is
// compared on machines and CI runners with any terminal or none.
func TestStyledIgnoresTheTerminal(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv("NO_COLOR", "1")
	t.Setenv("TERM", "dumb")
	t.Setenv("COLORTERM", "")
	s := lipgloss.NewStyle().Foreground(lipgloss.Color("#9ece6a")).Bold(true)
	got := Styled(s.Render("ok"))
	if want := "\x1b[1;38;2;158;206;106mok\x1b[m"; got != want {
		t.Errorf("Styled = %q, want %q", got, want)
	}
	if Plain(got) != "ok" {
		t.Errorf("Plain = %q, want %q", Plain(got), "ok")
	}
}

// TestStyledKeepsNearbyColoursApart: colours one step apart must give
// different goldens, or a changed colour could pass unnoticed.
func TestStyledKeepsNearbyColoursApart(t *testing.T) {
	t.Parallel()
	a := Styled(lipgloss.NewStyle().Foreground(lipgloss.Color("#9ece6a")).Render("x"))
	b := Styled(lipgloss.NewStyle().Foreground(lipgloss.Color("#9ece6b")).Render("x"))
	if a == b {
		t.Errorf("two different colours render the same: %q", a)
	}
}

func TestRequireWidthMeasuresText(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("\x1b[1m", 20) + "abcd" + "\x1b[m"
	RequireWidth(t, line, 4) // escapes take no cells
}
