package picker

import (
	"testing"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
)

func TestPicker(t *testing.T) {
	t.Parallel()
	st := styles.Default()
	sessions := []protocol.SessionSummary{
		{SessionID: "s1", Title: "Fix the failing test.", UpdatedAt: "2026-12-01T08:05:00Z", Turns: 2},
		{SessionID: "s2", Title: "Add a --json flag to scv config show", UpdatedAt: "2026-11-30T17:00:00Z", Turns: 7},
	}
	p := New(sessions, "s1")
	if p.Chosen() != "" {
		t.Error("the open session can be chosen")
	}
	p.Move(1)
	if p.Chosen() != "s2" {
		t.Errorf("chosen %q", p.Chosen())
	}
	p.Move(5)
	if p.Chosen() != "s2" {
		t.Error("selection not clamped")
	}
	t.Run("list", func(t *testing.T) {
		out := p.View(st, 60, 6)
		golden.RequireWidth(t, out, 60)
		golden.RequireStyled(t, out)
	})
	t.Run("empty", func(t *testing.T) {
		out := New(nil, "").View(st, 40, 6)
		golden.RequireWidth(t, out, 40)
		golden.RequireStyled(t, out)
	})
}

func TestModelsPicker(t *testing.T) {
	t.Parallel()
	st := styles.Default()
	choices := []Choice{
		{ID: "gpt-4.1", Provider: "openai", Label: "gpt-4.1 · 1M context"},
		{ID: "gpt-4.1-mini", Provider: "openai", Label: "gpt-4.1-mini · 1M context"},
		{ID: "llama3.1", Provider: "local", Label: "llama3.1 · 128k context", Unavailable: "LOCAL_KEY is not set"},
		{ID: "o3", Provider: "openrouter", Label: "o3 · 200k context"},
	}
	p := NewModels(choices, "gpt-4.1-mini", "openai")
	if _, ok := p.Chosen(); ok {
		t.Error("the model in use can be chosen")
	}
	p.Move(2)
	if c, ok := p.Chosen(); !ok || c.ID != "o3" || c.Provider != "openrouter" {
		t.Errorf("chosen %+v", c)
	}
	p.Move(-5)
	if c, _ := p.Chosen(); c.ID != "gpt-4.1" {
		t.Errorf("selection not clamped: %+v", c)
	}
	// The same id on another provider is not the one in use.
	q := NewModels([]Choice{{ID: "m", Provider: "a"}, {ID: "m", Provider: "b"}}, "m", "b")
	if q.Move(-1); !func() bool { c, ok := q.Chosen(); return ok && c.Provider == "a" }() {
		t.Error("a model of the same name on another provider counts as in use")
	}
	out := p.View(st, 70, 6)
	golden.RequireWidth(t, out, 70)
	golden.RequireStyled(t, out)
}
