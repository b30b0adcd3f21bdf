package app

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
)

// TestHelpWrapsAtNarrowWidths checks the frame the program draws (View,
// after fit): a terminal cuts lines wider than itself, so every help line
// must be within the width and the log path must be whole once the lines
// are joined.
func TestHelpWrapsAtNarrowWidths(t *testing.T) {
	const logPath = "/tmp/audit-home/logs/tui-server-with-a-long-name.log"
	for _, w := range []int{20, 30, 40, 60} {
		h := newHarness(t)
		h.m.opts.LogPath = logPath
		h.connect("gpt-4.1-mini")
		h.msg(tea.WindowSizeMsg{Width: w, Height: 40})
		h.typeText("/help")
		h.key("enter")
		out := h.m.View().Content
		golden.RequireWidth(t, out, w)
		joined := strings.ReplaceAll(golden.Plain(out), "\n", "")
		if !strings.Contains(joined, logPath) {
			t.Errorf("width %d: the log path is not whole:\n%s", w, golden.Plain(out))
		}
	}
}
