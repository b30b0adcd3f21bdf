package agenttool

import (
	"context"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
)

// BenchmarkCall measures what the agent tool adds to a delegated run:
// Prepare (choice, checks, cwd resolution, the backend's Plan, the
// summary) and Run (conversation bookkeeping, decoration, encoding) around
// a scripted backend that returns at once.
func BenchmarkCall(b *testing.B) {
	fx := newFixture(b, []string{"claude", "codex", "dsh"}, func(o *Options) { o.Prefer = []string{"dsh"} })
	raw := []byte(`{"prompt":"Land the fix with the feature-flow skill.","cwd":"proj/sub"}`)
	tool := fx.tool(NameAgent)
	b.ReportAllocs()
	for b.Loop() {
		p, err := tool.Prepare(fx.env, raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConversationTurn is one more turn of a Claude conversation.
func BenchmarkConversationTurn(b *testing.B) {
	fx := newFixture(b, []string{"claude"}, func(o *Options) { o.Prefer = []string{"claude"} })
	fx.call(NameAgent, map[string]any{"prompt": "start"})
	raw := []byte(`{"session":"claude-1","prompt":"go on"}`)
	tool := fx.tool(NameAgent)
	b.ReportAllocs()
	for b.Loop() {
		p, err := tool.Prepare(fx.env, raw)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitResult fits a result whose 64 KiB reply (as the runner
// bounds it, with characters JSON escapes) takes its JSON over a 64 KiB
// output limit: one marshal to measure, one cut, one marshal to check.
func BenchmarkFitResult(b *testing.B) {
	reply, _ := boundText(strings.Repeat("ü\"<😀\n&abcdefgh ", 5000), 64<<10)
	base := delegate.Result{Agent: "claude", Status: delegate.StatusCompleted, Reply: reply, StderrTail: strings.Repeat("e", 2048), Session: "claude-1", Turn: 3}
	b.ReportAllocs()
	for b.Loop() {
		r := base
		if out, cut := fitResult(&r, 64<<10); !cut || len(out) > 64<<10 {
			b.Fatal("not fitted")
		}
	}
}
