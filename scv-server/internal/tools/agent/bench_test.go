package agent

import (
	"context"
	"testing"
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
