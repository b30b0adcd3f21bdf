package conversations

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// clock is a settable test clock.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func newTable(max int) (*Table, *clock) {
	c := &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	return New(Options{Max: max, Idle: time.Hour, Agents: []string{"claude", "codex"}, Now: c.Now}), c
}

// start starts a conversation and ends its first turn with cli.
func start(t *testing.T, tb *Table, agent, cli string) string {
	t.Helper()
	c, err := tb.Start(agent, "/w")
	if err != nil {
		t.Fatal(err)
	}
	tb.End(c.Handle, cli)
	return c.Handle
}

func TestAgent(t *testing.T) {
	t.Parallel()
	tb, _ := newTable(8)
	for h, want := range map[string]string{"codex-2": "codex", "claude-10": "claude", "codex-0": "", "codex-02": "", "pi-1": "", "codex": "", "-1": "", "codex-x": ""} {
		got, ok := tb.Agent(h)
		if got != want || ok != (want != "") {
			t.Errorf("Agent(%q) = %q, %v; want %q", h, got, ok, want)
		}
	}
}

func TestTurns(t *testing.T) {
	t.Parallel()
	tb, _ := newTable(8)
	c, err := tb.Start("codex", "/w/proj")
	if err != nil || c.Handle != "codex-1" || c.Turns != 1 || c.Dir != "/w/proj" || c.CLI != "" {
		t.Fatalf("Start: %+v %v", c, err)
	}
	// Busy while the first turn runs.
	if _, err := tb.Lookup("codex-1"); err == nil || !strings.HasPrefix(err.Error(), "session busy: conversation codex-1 is running a turn;") {
		t.Fatalf("Lookup while busy: %v", err)
	}
	tb.SetJob("codex-1", "job-3")
	if _, err := tb.Resume("codex-1"); err == nil || !strings.Contains(err.Error(), "in background job job-3; wait for it (agent_wait job-3)") {
		t.Fatalf("Resume while busy: %v", err)
	}
	if !tb.End("codex-1", "thread-9") {
		t.Fatal("a turn that reported its CLI session does not name its conversation")
	}
	c, err = tb.Lookup("codex-1")
	if err != nil || c.CLI != "thread-9" || c.Turns != 1 {
		t.Fatalf("Lookup: %+v %v", c, err)
	}
	c, err = tb.Resume("codex-1")
	if err != nil || c.Turns != 2 || c.CLI != "thread-9" {
		t.Fatalf("Resume: %+v %v", c, err)
	}
	// A later turn that reports nothing keeps the CLI session.
	if !tb.End("codex-1", "") {
		t.Fatal("the conversation was forgotten")
	}
	if c, _ := tb.Lookup("codex-1"); c.CLI != "thread-9" {
		t.Fatalf("CLI session %q", c.CLI)
	}
	if c, _ := tb.Start("codex", "/w"); c.Handle != "codex-2" {
		t.Fatalf("second conversation %q", c.Handle)
	}
	if got := tb.TakeForgotten(); got != nil {
		t.Fatalf("forgotten %v", got)
	}
}

func TestFirstTurnWithoutCLISessionIsForgotten(t *testing.T) {
	t.Parallel()
	tb, _ := newTable(8)
	c, _ := tb.Start("claude", "/w")
	if tb.End(c.Handle, "") {
		t.Fatal("a conversation with no CLI session lives on")
	}
	_, err := tb.Lookup("claude-1")
	if err == nil || !strings.HasPrefix(err.Error(), "conversation claude-1 has ended") {
		t.Fatalf("Lookup: %v", err)
	}
	// Nothing to release: it had no CLI session.
	if got := tb.TakeForgotten(); len(got) != 0 {
		t.Fatalf("forgotten %v", got)
	}
}

func TestUnknownHandles(t *testing.T) {
	t.Parallel()
	tb, _ := newTable(8)
	for _, h := range []string{"codex-1", "pi-1", "nonsense"} {
		_, err := tb.Lookup(h)
		want := `session "` + h + `" is not a conversation of this session; pass a handle an earlier agent result returned (such as claude-1)`
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Lookup(%q): %v", h, err)
		}
	}
	if _, err := tb.Resume("codex-1"); err == nil || !strings.HasPrefix(err.Error(), "conversation codex-1 has ended since the call was checked") {
		t.Errorf("Resume: %v", err)
	}
}

func TestLeastRecentlyUsedMakesRoom(t *testing.T) {
	t.Parallel()
	tb, clk := newTable(2)
	start(t, tb, "codex", "t1")
	clk.now = clk.now.Add(time.Second)
	start(t, tb, "claude", "c1")
	clk.now = clk.now.Add(time.Second)
	if _, err := tb.Resume("codex-1"); err != nil {
		t.Fatal(err)
	}
	tb.End("codex-1", "")
	clk.now = clk.now.Add(time.Second)
	if err := tb.Room(); err != nil {
		t.Fatalf("Room: %v", err)
	}
	start(t, tb, "codex", "t2") // claude-1 is the least recently used
	if got := tb.TakeForgotten(); !slices.Equal(got, []Forgotten{{"claude", "c1"}}) {
		t.Fatalf("forgotten %v", got)
	}
	// With both remembered conversations running a turn, none can go.
	for _, h := range []string{"codex-1", "codex-2"} {
		if _, err := tb.Resume(h); err != nil {
			t.Fatal(err)
		}
	}
	want := "all 2 conversations this session keeps are running a turn (agent.max_conversations = 2)"
	if err := tb.Room(); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Room: %v", err)
	}
	if _, err := tb.Start("claude", "/w"); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Start: %v", err)
	}
}

func TestIdleExpiry(t *testing.T) {
	t.Parallel()
	tb, clk := newTable(8)
	start(t, tb, "codex", "t1")
	c, _ := tb.Start("claude", "/w") // stays busy: a running turn never expires
	clk.now = clk.now.Add(59 * time.Minute)
	if _, err := tb.Lookup("codex-1"); err != nil {
		t.Fatalf("before the idle limit: %v", err)
	}
	clk.now = clk.now.Add(time.Minute)
	if _, err := tb.Lookup("codex-1"); err == nil || !strings.HasPrefix(err.Error(), "conversation codex-1 has ended") {
		t.Fatalf("after the idle limit: %v", err)
	}
	if got := tb.TakeForgotten(); !slices.Equal(got, []Forgotten{{"codex", "t1"}}) {
		t.Fatalf("forgotten %v", got)
	}
	if !tb.End(c.Handle, "c1") {
		t.Fatal("the busy conversation expired")
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	tb, _ := newTable(8)
	start(t, tb, "codex", "t1")
	c, _ := tb.Start("claude", "/w")
	tb.Close()
	if got := tb.TakeForgotten(); !slices.Equal(got, []Forgotten{{"codex", "t1"}}) {
		t.Fatalf("forgotten at Close %v", got)
	}
	// The turn that was running ends after Close: its result still names
	// the conversation, which goes with the session.
	if !tb.End(c.Handle, "c1") {
		t.Fatal("the last turn's result does not name its conversation")
	}
	if got := tb.TakeForgotten(); !slices.Equal(got, []Forgotten{{"claude", "c1"}}) {
		t.Fatalf("forgotten after Close %v", got)
	}
	if _, err := tb.Lookup(c.Handle); err == nil {
		t.Fatal("a conversation outlived Close")
	}
}
