package servertest_test

import (
	"strings"
	"testing"
	"time"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestSlowClientKeepsItsTurn: a client stops reading for 5 seconds (more
// than the 3 s that used to end the connection) while the model streams a
// long reply. The turn keeps running: the reply is read from the provider
// in full within its 3-second request deadline (the streamed text waits,
// coalesced, instead of stalling the stream), the next event that is not
// streamed waits for the client, and a request sent meanwhile waits for
// room. When the client reads again, everything arrives, in order, with
// gapless seq and the whole text.
func TestSlowClientKeepsItsTurn(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "timeout_seconds = 3", st.Options{Tools: st.WithTools(&st.Waiter{})})
	sid, _ := session(t, s, 3)
	c := s.Client
	const chunks = 5000
	f.Enqueue(
		fo.Script(fo.Repeat(chunks, "word "), fo.ToolCall("call_1", "wait", `{"ms":0}`)),
		fo.Script(fo.Text("done")),
	)
	c.Pause()
	c.Send(&protocol.TurnStart{RequestID: "t", SessionID: sid, Prompt: "talk a lot"})
	if err := waitRequests(f, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	c.Send(&protocol.SessionRules{RequestID: "r", SessionID: sid})
	time.Sleep(2500 * time.Millisecond)
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("%d model requests while the client was not reading: the tool ran before its events were read", n)
	}
	c.Resume()

	evs, end := st.Until[*protocol.TurnCompleted](c)
	var text strings.Builder
	deltas := 0
	for _, ev := range evs {
		if d, ok := ev.(*protocol.AssistantDelta); ok {
			text.WriteString(d.Content)
			deltas++
		}
	}
	if want := strings.Repeat("word ", chunks) + "done"; text.String() != want {
		t.Fatalf("the streamed text is %d bytes, want %d", text.Len(), len(want))
	}
	if deltas >= chunks {
		t.Fatalf("%d assistant.delta events for %d chunks: nothing was coalesced while the client lagged", deltas, chunks)
	}
	if end.Steps != 2 {
		t.Fatalf("turn.completed = %+v", end)
	}
	kinds := strings.ReplaceAll(st.Kinds(evs), " session.rules_listed", "")
	if !strings.Contains(kinds, "assistant.delta assistant.completed tool.proposed tool.started tool.completed assistant.delta assistant.completed turn.completed") {
		t.Fatalf("events out of order: %.300s", kinds[strings.LastIndex(kinds, "turn.started"):])
	}
	// The request sent while the client lagged was answered too (its
	// answer may come before or among the turn's events).
	found := false
	for _, ev := range evs {
		if r, ok := ev.(*protocol.RulesListed); ok && r.RequestID == "r" {
			found = true
		}
	}
	if !found {
		st.Expect[*protocol.RulesListed](c)
	}
	t.Logf("%d chunks arrived in %d assistant.delta events", chunks, deltas)
}

// TestTooSlowClientEndsTheConnection: the slow-client rule. A client that
// leaves the output unread for the stall limit (here 300 ms) is too slow;
// with stdio that ends the connection as a backpressure failure, after
// its turn is cancelled.
func TestTooSlowClientEndsTheConnection(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{StallLimit: 300 * time.Millisecond, Grace: 200 * time.Millisecond})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.Repeat(5000, "x"), fo.ToolCall("call_1", "read", `{"path":"x"}`)))
	s.Client.Pause()
	start := time.Now()
	s.Client.Send(&protocol.TurnStart{RequestID: "t", SessionID: sid, Prompt: "go"})
	err := s.Done()
	if err == nil || !strings.Contains(err.Error(), "client stopped reading: no output could be written to it for 300ms") {
		t.Fatalf("Serve = %v, want the slow-client error", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("the connection ended after %v, before the stall limit", d)
	}
	s.Client.Resume()
}

// TestSlowReaderIsNotTooSlow: a client that keeps reading, however
// haltingly, is never too slow: the limit is about output none of which
// could be written for that long. Here the client stops for 300 ms at a
// time, again and again, for several times the 1 s limit in all (the
// margin of each pause is 700 ms, for a loaded machine: with 500 ms it
// failed once under the full suite).
func TestSlowReaderIsNotTooSlow(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{StallLimit: time.Second})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.Pace(5*time.Millisecond), fo.Repeat(600, "y")))
	c := s.Client
	stop := make(chan struct{})
	toggled := make(chan int)
	go func() {
		n := 0
		defer func() { toggled <- n }()
		for {
			c.Pause()
			select {
			case <-stop:
				c.Resume()
				return
			case <-time.After(300 * time.Millisecond):
			}
			c.Resume()
			n++
			time.Sleep(20 * time.Millisecond)
		}
	}()
	c.Turn(sid, "go")
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	close(stop)
	if n := <-toggled; n < 5 { // 5 × 300 ms: past the limit in all
		t.Fatalf("the client paused only %d times; the test needs a turn longer than several limits", n)
	}
	c.Send(&protocol.SessionRules{RequestID: "r", SessionID: sid})
	st.Expect[*protocol.RulesListed](c)
	t.Logf("%d events", len(evs))
}
