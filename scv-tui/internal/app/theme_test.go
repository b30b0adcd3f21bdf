package app

import (
	"image/color"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/shared/protocol"
)

// TestThemeFromBackground: the TUI asks the terminal for its background;
// a light answer switches the styles (the status bar's surface and the
// rendered transcript) to the light palette, and Options.Theme skips the
// question.
func TestThemeFromBackground(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if h.m.Init() == nil {
		t.Fatal("Init does not ask for the background colour")
	}
	h.connect("gpt-4.1-mini")
	h.prompt("hello")
	h.event(turnEvent("turn.started", last[*protocol.TurnStart](h).RequestID, "t1", ""))
	h.event(turnEvent("assistant.completed", "r1", "t1", `"message_id":"m1","content":"Some **bold** text."`))
	const darkSurface, lightSurface = "48;2;36;40;59", "48;2;213;216;227"
	if out := h.m.render(); !strings.Contains(out, darkSurface) {
		t.Fatalf("before the answer the status bar is not dark:\n%q", out)
	}
	h.msg(tea.BackgroundColorMsg{Color: color.White})
	out := h.m.render()
	if !strings.Contains(out, lightSurface) || strings.Contains(out, darkSurface) {
		t.Fatalf("after a white background the status bar is not light:\n%q", out)
	}
	// Nothing keeps the dark palette's text colour (#c0caf5): the
	// transcript's items rendered again.
	if strings.Contains(out, "192;202;245") {
		t.Errorf("the transcript was not re-rendered with the light palette:\n%q", out)
	}
	h.msg(tea.BackgroundColorMsg{Color: color.Black})
	if out := h.m.render(); !strings.Contains(out, darkSurface) {
		t.Errorf("a black background did not bring the dark styles back")
	}

	fixed := New(Options{Theme: ThemeLight})
	if fixed.Init() != nil {
		t.Error("Init asks for the background although the theme is chosen")
	}
	fixed.Update(tea.BackgroundColorMsg{Color: color.Black})
	if !strings.Contains(fixed.render(), lightSurface) {
		t.Error("a chosen light theme did not hold")
	}
}
