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
