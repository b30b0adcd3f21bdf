package approval

import (
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
)

func TestGolden(t *testing.T) {
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
	tests := []struct {
		name  string
		width int
		d     func() *Dialog
	}{
		{"with_rule", 70, func() *Dialog { return New(bash, "{\n  \"command\": \"go test ./...\"\n}") }},
		{"once_only", 70, func() *Dialog { return New(read, "{\n  \"path\": \".env\"\n}") }},
		{"arguments", 70, func() *Dialog {
			d := New(bash, "{\n  \"command\": \"go test ./...\"\n}")
			d.ShowArgs = true
			return d
		}},
		{"long_arguments", 50, func() *Dialog {
			d := New(bash, strings.Repeat("line\n", 30))
			d.ShowArgs = true
			d.SetMaxArgLines(3)
			return d
		}},
		{"narrow", 40, func() *Dialog { return New(bash, "{}") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tt.d().View(st, tt.width)
			golden.RequireWidth(t, out, tt.width)
			golden.RequireEqual(t, out)
		})
	}
	if New(read, "").CanApproveSession() {
		t.Error("a request without a rule offers session approval")
	}
}
