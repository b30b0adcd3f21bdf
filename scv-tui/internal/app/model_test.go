package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/protocol"
)

// TestModelCommand: /model asks for the models and opens a picker with the
// context windows; Enter on another model sends session.set_model, and the
// answer updates the status bar. /model NAME switches at once.
func TestModelCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	h.typeText("/model")
	h.key("enter")
	sm := last[*protocol.SessionModels](h)
	h.event(`{"type":"session.model","request_id":"` + sm.RequestID + `","session_id":"` + sid + `","model":"gpt-4.1-mini","context_max_tokens":128000,"models":[{"id":"gpt-4.1-mini","context_max_tokens":128000},{"id":"gpt-4.1","context_max_tokens":128000}]}`)
	s := h.screen()
	for _, want := range []string{"Switch the session's model", "▸ gpt-4.1-mini · 128k-token context window (in use)", "gpt-4.1 · 128k-token context window"} {
		if !strings.Contains(s, want) {
			t.Fatalf("picker lacks %q:\n%s", want, s)
		}
	}
	h.key("down", "enter")
	set := last[*protocol.SetModel](h)
	if set.Model != "gpt-4.1" || set.SessionID != sid {
		t.Fatalf("sent %s", encode(set))
	}
	if strings.Contains(h.screen(), "Switch the session's model") {
		t.Fatal("the picker stays open after Enter")
	}
	h.event(`{"type":"session.model","request_id":"` + set.RequestID + `","session_id":"` + sid + `","model":"gpt-4.1","context_max_tokens":128000,"models":[{"id":"gpt-4.1-mini","context_max_tokens":128000},{"id":"gpt-4.1","context_max_tokens":128000}]}`)
	if s := strings.Join(strings.Fields(h.screen()), " "); !strings.Contains(s, "now uses gpt-4.1 (context window 128k tokens)") || h.m.model != "gpt-4.1" {
		t.Fatalf("after the switch:\n%s", h.screen())
	}
	h.typeText("/model o3")
	h.key("enter")
	if set := last[*protocol.SetModel](h); set.Model != "o3" {
		t.Fatalf("sent %s", encode(set))
	}
}

// TestInitCommand: /init sends the built-in AGENTS.md prompt; with an
// AGENTS.md present it sends nothing and says how to revise it, which
// /init update does.
func TestInitCommand(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	dir := t.TempDir()
	h.m.cwd = dir
	h.typeText("/init")
	h.key("enter")
	ts := last[*protocol.TurnStart](h)
	if !strings.Contains(ts.Prompt, "Write a starting AGENTS.md") || !strings.Contains(ts.Prompt, "do not overwrite") {
		t.Fatalf("prompt %q", ts.Prompt)
	}
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("# Notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := len(h.sent)
	h.typeText("/init")
	h.key("enter")
	if len(h.sent) != n {
		t.Fatalf("/init with an AGENTS.md sent %s", encode(h.sent[len(h.sent)-1]))
	}
	if s := strings.Join(strings.Fields(h.screen()), " "); !strings.Contains(s, "already exists, so /init leaves it alone") {
		t.Fatalf("screen:\n%s", h.screen())
	}
	h.typeText("/init update")
	h.key("enter")
	if ts := last[*protocol.TurnStart](h); !strings.Contains(ts.Prompt, "edit AGENTS.md with the edit tool") {
		t.Fatalf("prompt %q", ts.Prompt)
	}
}

// TestModelAcrossProviders: the picker groups the models by provider
// with prices and the unavailable ones; Enter sends the chosen row's
// provider; "/model PROVIDER MODEL" names one; the answer's provider and
// price become the session's.
func TestModelAcrossProviders(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connectWith("gpt-4.1-mini", `,"provider":"openai"`)
	h.typeText("/model")
	h.key("enter")
	sm := last[*protocol.SessionModels](h)
	models := `"models":[{"id":"gpt-4.1-mini","context_max_tokens":128000,"provider":"openai"},{"id":"anthropic/claude-sonnet-4","context_max_tokens":200000,"provider":"openrouter","price":{"input_per_mtok":3,"output_per_mtok":15}},{"id":"llama3.1","context_max_tokens":8000,"provider":"work","unavailable":"WORK_KEY is not set"}]`
	h.event(`{"type":"session.model","request_id":"` + sm.RequestID + `","session_id":"` + sid + `","model":"gpt-4.1-mini","provider":"openai","context_max_tokens":128000,` + models + `}`)
	s := h.screen()
	for _, want := range []string{"openai      gpt-4.1-mini · 128k-token context window (in use)", "openrouter  anthropic/claude-sonnet-4 · 200k-token context window · $3/$15", "work        llama3.1 · 8.0k-token context window · unavailable: WORK_KEY"} {
		if !strings.Contains(s, want) {
			t.Fatalf("picker lacks %q:\n%s", want, s)
		}
	}
	h.key("down", "enter")
	set := last[*protocol.SetModel](h)
	if set.Model != "anthropic/claude-sonnet-4" || set.Provider != "openrouter" {
		t.Fatalf("sent %s", encode(set))
	}
	h.event(`{"type":"session.model","request_id":"` + set.RequestID + `","session_id":"` + sid + `","model":"anthropic/claude-sonnet-4","provider":"openrouter","price":{"input_per_mtok":3,"output_per_mtok":15},"context_max_tokens":200000,` + models + `}`)
	if s := strings.Join(strings.Fields(h.screen()), " "); !strings.Contains(s, "now uses anthropic/claude-sonnet-4 of openrouter (context window 200k tokens)") || h.m.provider != "openrouter" || h.m.price == nil {
		t.Fatalf("after the switch (provider %q, price %v):\n%s", h.m.provider, h.m.price, h.screen())
	}
	h.typeText("/model work llama3.1")
	h.key("enter")
	if set := last[*protocol.SetModel](h); set.Model != "llama3.1" || set.Provider != "work" {
		t.Fatalf("sent %s", encode(set))
	}
}

// TestCostMoney: /cost prices each model's tokens at its configured
// price, counting a resumed session's earlier tokens at the price of the
// model it starts on, and says how to configure a price for a model that
// has none.
func TestCostMoney(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connectWith("gpt-4.1", `,"provider":"openai","price":{"input_per_mtok":2,"output_per_mtok":8},"resumed":true,"usage":{"input_tokens":1000000,"output_tokens":100000}`)
	rid := h.prompt("go").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("turn.completed", rid, tid, `"steps":1,"usage":{"input_tokens":500000,"output_tokens":50000}`))
	// Switched to a model without a price, which then does a turn.
	h.typeText("/model gpt-4.1-mini")
	h.key("enter")
	set := last[*protocol.SetModel](h)
	h.event(`{"type":"session.model","request_id":"` + set.RequestID + `","session_id":"` + sid + `","model":"gpt-4.1-mini","provider":"openai","context_max_tokens":128000,"models":[]}`)
	rid = h.prompt("more").RequestID
	h.event(turnEvent("turn.started", rid, tid+"2", ""))
	h.event(turnEvent("turn.completed", rid, tid+"2", `"steps":1,"usage":{"input_tokens":1000,"output_tokens":10}`))
	h.typeText("/cost")
	h.key("enter")
	s := strings.Join(strings.Fields(h.screen()), " ")
	// 1.5M input at $2 + 150k output at $8 = $3 + $1.20.
	for _, want := range []string{"Cost: $4.20 (gpt-4.1 at $2/$8 per million input/output tokens)", `No price configured for gpt-4.1-mini: add [providers.openai.models."gpt-4.1-`, "with input_price and output_price (US dollars per million tokens)"} {
		if !strings.Contains(s, want) {
			t.Errorf("/cost lacks %q:\n%s", want, s)
		}
	}
	if money(protocol.Usage{InputTokens: 1234, OutputTokens: 10}, &protocol.Price{InputPerMTok: 2, OutputPerMTok: 8}) >= 0.01 {
		t.Error("a tiny session costs a cent or more")
	}
	if got := dollars(0.00256); got != "$0.0026" {
		t.Errorf("dollars(0.00256) = %q, want $0.0026 (a fraction of a cent is not $0.00)", got)
	}
}

func TestCostCachedTokens(t *testing.T) {
	t.Parallel()
	cost := func(price string) string {
		h := newHarness(t)
		h.connectWith("gpt-4.1", `,"provider":"openai","price":`+price)
		rid := h.prompt("go").RequestID
		h.event(turnEvent("turn.started", rid, tid, ""))
		// Two requests: 800k of the 1M input tokens came from the cache.
		h.event(turnEvent("turn.completed", rid, tid, `"steps":2,"usage":{"input_tokens":1000000,"output_tokens":0,"cached_input_tokens":800000}`))
		h.typeText("/cost")
		h.key("enter")
		return strings.Join(strings.Fields(h.screen()), " ")
	}
	// 200k uncached at $2 + 800k cached at $0.5 = $0.40 + $0.40.
	s := cost(`{"input_per_mtok":2,"output_per_mtok":8,"cached_input_per_mtok":0.5}`)
	for _, want := range []string{"Cost: $0.80 (gpt-4.1 at $2/$8 per million input/output tokens, $0.5 cached)", "of them cached)"} {
		if !strings.Contains(s, want) {
			t.Errorf("/cost with a cached price lacks %q:\n%s", want, s)
		}
	}
	// Without a cached price every input token counts at $2, and /cost says
	// how to get the lower figure.
	s = cost(`{"input_per_mtok":2,"output_per_mtok":8}`)
	for _, want := range []string{"Cost: $2.00", "cached input at the input price: add cached_input_price to [providers.openai.models.\"gpt-4.1\"]"} {
		if !strings.Contains(s, want) {
			t.Errorf("/cost without a cached price lacks %q:\n%s", want, s)
		}
	}
	u := protocol.Usage{InputTokens: 10, OutputTokens: 1}
	u.Add(protocol.Usage{InputTokens: 5, CachedInputTokens: new(int64(4))})
	if u.CachedInputTokens == nil || *u.CachedInputTokens != 4 || u.InputTokens != 15 {
		t.Errorf("Usage.Add = %+v, want 15 input of which 4 cached", u)
	}
}
