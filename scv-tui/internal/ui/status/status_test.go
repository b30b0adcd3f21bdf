package status

import (
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
)

func TestGolden(t *testing.T) {
	st := styles.Default()
	full := Bar{Model: "gpt-4.1-mini", Workspace: "/home/ana/project", ContextTokens: 12_345, ContextMax: 128_000,
		Turn: "running", Elapsed: 83 * time.Second, Queued: 2}
	tests := []struct {
		name  string
		width int
		bar   Bar
	}{
		{"connecting", 80, Bar{Turn: "starting the server"}},
		{"idle", 80, Bar{Model: "gpt-4.1-mini", Workspace: "/home/ana/project", ContextMax: 128_000}},
		{"running", 80, full},
		{"demo", 80, Bar{Model: "scv-demo", Demo: true, Workspace: "/w/p", ContextTokens: 900, ContextMax: 32_000}},
		{"warning", 80, func() Bar {
			b := full
			b.Warning = "events were lost (seq 4 → 7); Ctrl+R restarts the server"
			return b
		}()},
		{"narrow", 40, full},
		{"narrow_warning", 40, func() Bar { b := full; b.Warning = "duplicate event (seq 5)"; return b }()},
		// A stopped server says so; no "connecting…" stands for the model.
		{"stopped", 80, Bar{Turn: "server stopped · Ctrl+R restarts", Stopped: true, Workspace: "/home/ana/project"}},
		{"paused", 80, Bar{Model: "m", Queued: 3, Paused: true, Turn: "idle"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.bar.View(st, tt.width)
			golden.RequireWidth(t, out, tt.width)
			golden.RequireStyled(t, out)
		})
	}
}
