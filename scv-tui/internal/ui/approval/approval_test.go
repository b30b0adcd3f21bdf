package approval

import (
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
)

func TestGolden(t *testing.T) {
	t.Parallel()
	st := styles.Default()
	bash := protocol.ApprovalRequested{
		ApprovalID: "a1", CallID: "call_2", Name: "bash", Risk: protocol.RiskProcess,
		Cwd: "/home/ana/project", Summary: "Run shell command: go test ./...",
		Rule: &protocol.Rule{Tool: "bash", Key: "bash:go test", Description: "bash commands that start with `go test`"},
	}
	read := protocol.ApprovalRequested{
		ApprovalID: "a2", CallID: "call_1", Name: "read", Risk: protocol.RiskFilesystem,
		Cwd: "/home/ana/project", Summary: "Read .env (the name looks like a secret)",
	}
	fetch := protocol.ApprovalRequested{
		ApprovalID: "a3", CallID: "call_3", Name: "web_fetch", Risk: protocol.RiskNetwork,
		Cwd: "/home/ana/project", Summary: "Fetch https://docs.example.org/" + strings.Repeat("path/", 300),
	}
	tests := []struct {
		name          string
		width, height int
		d             func() *Dialog
	}{
		{"with_rule", 70, 40, func() *Dialog { return New(bash, "{\n  \"command\": \"go test ./...\"\n}") }},
		{"once_only", 70, 40, func() *Dialog { return New(read, "{\n  \"path\": \".env\"\n}") }},
		{"arguments", 70, 40, func() *Dialog {
			d := New(bash, "{\n  \"command\": \"go test ./...\"\n}")
			d.ShowArgs = true
			return d
		}},
		{"long_arguments", 50, 16, func() *Dialog {
			d := New(bash, strings.Repeat("line\n", 30))
			d.ShowArgs = true
			return d
		}},
		{"narrow", 40, 40, func() *Dialog { return New(bash, "{}") }},
		// A long summary keeps its start (the host) and a marker.
		{"long_summary", 40, 18, func() *Dialog { return New(fetch, "{}") }},
		// Short screens give up the blank line, the workspace, summary
		// lines and the long hints, never the title, host, risk or keys.
		{"short", 40, 9, func() *Dialog { return New(bash, "{}") }},
		{"shortest", 40, 7, func() *Dialog { return New(fetch, "{}") }},
		// Shorter still, the session rule's words go; the a key stays.
		{"shortest_rule", 40, 7, func() *Dialog { return New(bash, "{}") }},
		{"short_arguments", 40, 12, func() *Dialog {
			d := New(fetch, strings.Repeat("line\n", 30))
			d.ToggleArgs()
			return d
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.d().View(st, tt.width, tt.height)
			golden.RequireWidth(t, out, tt.width)
			if n := strings.Count(out, "\n") + 1; n > tt.height {
				t.Errorf("%d lines, over the height %d", n, tt.height)
			}
			golden.RequireStyled(t, out)
		})
	}
	if New(read, "").CanApproveSession() {
		t.Error("a request without a rule offers session approval")
	}
}
