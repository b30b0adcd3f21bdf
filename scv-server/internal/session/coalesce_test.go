package session

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/shared/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCoalescing: streamed events waiting for room merge as documented:
// consecutive deltas join their text, consecutive progress lines of one
// call keep the newest, and anything else keeps its place in the order.
func TestCoalescing(t *testing.T) {
	t.Parallel()
	var tr turn
	add := func(evs ...protocol.TurnEvent) {
		for _, ev := range evs {
			tr.addPendingLocked(ev)
		}
	}
	delta := func(s string) *protocol.AssistantDelta { return &protocol.AssistantDelta{Content: s} }
	line := func(call, s string) *protocol.ToolProgress {
		return &protocol.ToolProgress{CallID: call, Name: "bash", Line: s}
	}
	add(delta("Hel"), delta("lo, "), delta("world"), line("c1", "1"), line("c1", "2"), line("c2", "a"), line("c1", "3"), delta("!"), delta("!"))
	var got []string
	for _, p := range tr.pending {
		switch e := p.event().(type) {
		case *protocol.AssistantDelta:
			got = append(got, "delta:"+e.Content)
		case *protocol.ToolProgress:
			got = append(got, "progress:"+e.CallID+":"+e.Line)
		}
	}
	want := []string{"delta:Hello, world", "progress:c1:2", "progress:c2:a", "progress:c1:3", "delta:!!"}
	if len(got) != len(want) {
		t.Fatalf("pending = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pending = %q, want %q", got, want)
		}
	}
	for _, ev := range []protocol.TurnEvent{delta("x"), line("c", "x")} {
		if !coalescing(ev) {
			t.Fatalf("%s is not coalesced", ev.Kind())
		}
	}
	for _, ev := range []protocol.TurnEvent{&protocol.AssistantCompleted{}, &protocol.ToolCompleted{}, &protocol.ApprovalRequested{}} {
		if coalescing(ev) {
			t.Fatalf("%s is coalesced, but only streamed events may be", ev.Kind())
		}
	}
}
