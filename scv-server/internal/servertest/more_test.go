package servertest_test

import (
	"context"
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

func TestCancelDuringTool(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{Tools: st.WithTools(&st.Waiter{})})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.ToolCall("w1", "wait", `{}`)), fo.Script(fo.Text("after")))
	c := s.Client
	turn := c.Turn(sid, "wait")
	st.Until[*protocol.ToolStarted](c)
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: turn.TurnID})
	evs, _ := st.Until[*protocol.TurnCancelled](c)
	if got := st.Kinds(evs); got != "tool.completed turn.cancelled" {
		t.Fatalf("after cancel: %s, want the started call completed, then the terminal event", got)
	}
	if tc := evs[0].(*protocol.ToolCompleted); tc.Success || !strings.Contains(tc.Output, "cancelled") {
		t.Fatalf("tool.completed = %+v", tc)
	}
	c.Turn(sid, "again")
	st.Until[*protocol.TurnCompleted](c)
	m := f.Requests()[1].Messages
	var answered bool
	for _, x := range m {
		answered = answered || (x.Role == "tool" && x.ToolCallID == "w1")
	}
	if !answered {
		t.Fatal("the cancelled call has no result in the history")
	}
}

func TestToolProgressIsBoundedAndV3Only(t *testing.T) {
	t.Parallel()
	for _, v := range []int{2, 3} {
		f, s := fake(t, "", st.Options{Tools: st.WithTools(&st.Waiter{Lines: 50})})
		sid, _ := session(t, s, v)
		f.Enqueue(fo.Script(fo.ToolCall("w1", "wait", `{"ms":0}`)), fo.Script(fo.Text("done")))
		s.Client.Turn(sid, "wait")
		evs, _ := st.Until[*protocol.TurnCompleted](s.Client)
		var lines []string
		for _, e := range evs {
			if p, ok := e.(*protocol.ToolProgress); ok {
				if p.CallID != "w1" || p.Name != "wait" {
					t.Fatalf("tool.progress = %+v", p)
				}
				lines = append(lines, p.Line)
			}
		}
		// 50 lines at once: the first goes out, the rest wait for the
		// interval, the latest replacing the older, and the call's end
		// forwards it before tool.completed.
		want := "line 0,line 49"
		if v == 2 {
			want = ""
		}
		if got := strings.Join(lines, ","); got != want {
			t.Fatalf("v%d progress lines %q, want %q", v, got, want)
		}
		if v == 3 && !strings.Contains(st.Kinds(evs), "tool.progress tool.progress tool.completed") {
			t.Fatalf("progress not before tool.completed: %s", st.Kinds(evs))
		}
		for _, m := range f.Requests()[1].Messages {
			if strings.Contains(m.Content, "line 0") {
				t.Fatal("a progress line reached the model's history")
			}
		}
	}
}

func TestQueueOperations(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 2)
	c := s.Client
	f.Enqueue(fo.Script(fo.Text("busy"), fo.Hang()))
	turn := c.Turn(sid, "one")
	st.Expect[*protocol.AssistantDelta](c)
	var ids []string
	for _, p := range []string{"a", "b", "c"} {
		c.Send(&protocol.TurnStart{RequestID: "q-" + p, SessionID: sid, Prompt: p})
		ids = append(ids, st.Expect[*protocol.QueueEnqueued](c).Entry.QueueID)
	}
	// update with the right revision
	c.Send(&protocol.QueueUpdate{RequestID: "u", SessionID: sid, QueueID: ids[0], Revision: 1, Prompt: "a2"})
	up := st.Expect[*protocol.QueueUpdated](c)
	if up.Entry.Prompt != "a2" || up.Entry.Revision != 2 || up.RequestID != "u" {
		t.Fatalf("queue.updated = %+v", up)
	}
	// a stale revision conflicts and carries the current entry
	c.Send(&protocol.QueueUpdate{RequestID: "u2", SessionID: sid, QueueID: ids[0], Revision: 1, Prompt: "a3"})
	e := c.ExpectError(protocol.ErrQueueConflict)
	if e.Entry == nil || e.Entry.Revision != 2 || e.Entry.Prompt != "a2" {
		t.Fatalf("queue_conflict = %+v", e)
	}
	// move c before a
	c.Send(&protocol.QueueMove{RequestID: "m", SessionID: sid, QueueID: ids[2], Revision: 1, BeforeQueueID: ids[0]})
	mv := st.Expect[*protocol.QueueMoved](c)
	if mv.Entry.Position != 0 || mv.Entry.Revision != 2 {
		t.Fatalf("queue.moved = %+v", mv)
	}
	// move b to the end
	c.Send(&protocol.QueueMove{RequestID: "m2", SessionID: sid, QueueID: ids[1], Revision: 1})
	if mv := st.Expect[*protocol.QueueMoved](c); mv.Entry.Position != 2 {
		t.Fatalf("queue.moved to end = %+v", mv)
	}
	// remove a; unknown ids
	c.Send(&protocol.QueueRemove{RequestID: "r", SessionID: sid, QueueID: ids[0], Revision: 2})
	st.Expect[*protocol.QueueRemoved](c)
	c.Send(&protocol.QueueRemove{RequestID: "r2", SessionID: sid, QueueID: ids[0], Revision: 2})
	c.ExpectError(protocol.ErrQueueNotFound)
	c.Send(&protocol.QueueMove{RequestID: "m3", SessionID: sid, QueueID: ids[1], Revision: 2, BeforeQueueID: "nope"})
	c.ExpectError(protocol.ErrQueueNotFound)
	// pause: the turn ends and nothing is dequeued
	c.Send(&protocol.SessionPause{RequestID: "p", SessionID: sid, Paused: true})
	if p := st.Expect[*protocol.SessionPaused](c); !p.Paused {
		t.Fatalf("session.paused = %+v", p)
	}
	c.Send(&protocol.TurnCancel{RequestID: "x", SessionID: sid, TurnID: turn.TurnID})
	st.Expect[*protocol.TurnCancelled](c)
	// resume: c runs first, then b
	f.Enqueue(fo.Script(fo.Text("c done")), fo.Script(fo.Text("b done")))
	c.Send(&protocol.SessionPause{RequestID: "p2", SessionID: sid, Paused: false})
	st.Expect[*protocol.SessionPaused](c)
	d1 := st.Expect[*protocol.QueueDequeued](c)
	if d1.Entry.Prompt != "c" || d1.RequestID != "q-c" {
		t.Fatalf("first dequeued = %+v", d1)
	}
	st.Until[*protocol.TurnCompleted](c)
	if d2 := st.Expect[*protocol.QueueDequeued](c); d2.Entry.Prompt != "b" {
		t.Fatalf("second dequeued = %+v", d2)
	}
	st.Until[*protocol.TurnCompleted](c)
}

func TestQueueMessagesNeedV2(t *testing.T) {
	t.Parallel()
	_, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 1)
	s.Client.Send(&protocol.SessionPause{RequestID: "p", SessionID: sid, Paused: true})
	if e := s.Client.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, "version 2") {
		t.Fatalf("error = %+v", e)
	}
}

func TestSessionOptionsV3(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	s.Client.Init(3)
	off := false
	s.Client.Send(&protocol.SessionStart{RequestID: "s", Cwd: t.TempDir(), Model: "other-model", Tools: &off})
	started := st.Expect[*protocol.SessionStarted](s.Client)
	st.Expect[*protocol.QueueSnapshot](s.Client)
	if started.Model != "other-model" {
		t.Fatalf("model = %q", started.Model)
	}
	f.Enqueue(fo.Script(fo.Text("hi")))
	s.Client.Turn(started.SessionID, "hello")
	st.Until[*protocol.TurnCompleted](s.Client)
	r := f.Requests()[0]
	if r.Model != "other-model" || len(r.Tools) != 0 {
		t.Fatalf("request model %q, tools %v", r.Model, r.ToolNames())
	}
	neg := -1
	s.Client.Send(&protocol.SessionStart{RequestID: "s2", Cwd: t.TempDir(), DelegationDepth: &neg})
	s.Client.ExpectError(protocol.ErrInvalidRequest)
}

func TestAutoApproveSession(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	s.Client.Init(3)
	s.Client.Send(&protocol.SessionStart{RequestID: "s", Cwd: t.TempDir(), AutoApprove: true})
	started := st.Expect[*protocol.SessionStarted](s.Client)
	st.Expect[*protocol.QueueSnapshot](s.Client)
	f.Enqueue(fo.Script(fo.ToolCall("c", "read", `{"path":"x.key"}`)), fo.Script(fo.Text("ok")))
	s.Client.Turn(started.SessionID, "go")
	evs, _ := st.Until[*protocol.TurnCompleted](s.Client)
	if k := st.Kinds(evs); strings.Contains(k, "approval.requested") || !strings.Contains(k, "tool.started") {
		t.Fatalf("auto_approve session: %s", k)
	}
}

func TestPausedSessionKeepsQueueOrder(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 2)
	c := s.Client
	f.Enqueue(fo.Script(fo.Text("busy"), fo.Hang()))
	turn := c.Turn(sid, "one")
	st.Expect[*protocol.AssistantDelta](c)
	c.Send(&protocol.TurnStart{RequestID: "q1", SessionID: sid, Prompt: "queued first"})
	st.Expect[*protocol.QueueEnqueued](c)
	c.Send(&protocol.SessionPause{RequestID: "p", SessionID: sid, Paused: true})
	st.Expect[*protocol.SessionPaused](c)
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: turn.TurnID})
	st.Expect[*protocol.TurnCancelled](c)
	// Idle and paused with a queued prompt: a new prompt queues behind it.
	c.Send(&protocol.TurnStart{RequestID: "q2", SessionID: sid, Prompt: "sent while paused"})
	if e := st.Expect[*protocol.QueueEnqueued](c); e.Entry.Position != 1 {
		t.Fatalf("queue.enqueued = %+v, want position 1", e)
	}
	f.Enqueue(fo.Script(fo.Text("1")), fo.Script(fo.Text("2")))
	c.Send(&protocol.SessionPause{RequestID: "p2", SessionID: sid, Paused: false})
	st.Expect[*protocol.SessionPaused](c)
	if d := st.Expect[*protocol.QueueDequeued](c); d.Entry.Prompt != "queued first" {
		t.Fatalf("first dequeued %+v", d)
	}
	st.Until[*protocol.TurnCompleted](c)
	if d := st.Expect[*protocol.QueueDequeued](c); d.Entry.Prompt != "sent while paused" {
		t.Fatalf("second dequeued %+v", d)
	}
	st.Until[*protocol.TurnCompleted](c)
}

func TestEOFLeavesQueuedPromptsQueued(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 2)
	c := s.Client
	f.Enqueue(fo.Script(fo.Text("busy"), fo.Hang()))
	c.Turn(sid, "one")
	st.Expect[*protocol.AssistantDelta](c)
	c.Send(&protocol.TurnStart{RequestID: "q1", SessionID: sid, Prompt: "queued"})
	st.Expect[*protocol.QueueEnqueued](c)
	s.CloseInput()
	st.Expect[*protocol.TurnCancelled](c)
	if err := s.Done(); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if !c.Closed() {
		t.Fatal("output still open")
	}
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("%d provider requests, want 1: the queued prompt must not start during shutdown", n)
	}
}

func TestServerStartedTurn(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	c := s.Client
	sess, err := s.Runtime.Manager.Get(sid)
	if err != nil {
		t.Fatal(err)
	}
	// While the user's turn runs and a prompt is queued, the server's turn
	// waits for both.
	f.Enqueue(fo.Script(fo.Text("user turn"), fo.Hang()))
	turn := c.Turn(sid, "mine")
	st.Expect[*protocol.AssistantDelta](c)
	c.Send(&protocol.TurnStart{RequestID: "q", SessionID: sid, Prompt: "queued"})
	st.Expect[*protocol.QueueEnqueued](c)
	origin := protocol.Origin{Kind: "background", Jobs: []string{"job-1"}}
	ctx, cancel := context.WithTimeout(context.Background(), st.Wait)
	defer cancel()
	if err := sess.StartServerTurn(ctx, origin, "[SCV background report] job-1 finished"); err != nil {
		t.Fatal(err)
	}
	f.Enqueue(fo.Script(fo.Text("queued done")), fo.Script(fo.Text("report done")))
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: turn.TurnID})
	if end := st.Expect[*protocol.TurnCancelled](c); end.Origin != nil {
		t.Fatalf("a user turn carries origin: %+v", end)
	}
	st.Expect[*protocol.QueueDequeued](c)
	st.Expect[*protocol.TurnStarted](c)
	st.Until[*protocol.TurnCompleted](c)
	started := st.Expect[*protocol.TurnStarted](c)
	if started.RequestID != "" || started.Origin == nil || started.Origin.Kind != "background" || started.Origin.Jobs[0] != "job-1" {
		t.Fatalf("server turn.started = %+v", started)
	}
	evs, end := st.Until[*protocol.TurnCompleted](c)
	if end.RequestID != "" || end.Origin == nil || end.Origin.Kind != "background" {
		t.Fatalf("server turn.completed = %+v", end)
	}
	for _, e := range evs {
		if h, ok := e.(protocol.TurnEvent); ok && h.Turn().RequestID != "" {
			t.Fatalf("%s of a server turn carries request_id %q", e.Kind(), h.Turn().RequestID)
		}
	}
	if m := f.Requests()[2].Messages; m[len(m)-1].Content != "[SCV background report] job-1 finished" {
		t.Fatalf("the model did not get the report prompt: %+v", m[len(m)-1])
	}
}

func TestServerStartedTurnNeedsV3(t *testing.T) {
	t.Parallel()
	for _, v := range []int{1, 2} {
		_, s := fake(t, "", st.Options{})
		sid, _ := session(t, s, v)
		sess, _ := s.Runtime.Manager.Get(sid)
		err := sess.StartServerTurn(context.Background(), protocol.Origin{Kind: "background"}, "report")
		if err == nil || !strings.Contains(err.Error(), "version 3") {
			t.Fatalf("v%d: StartServerTurn = %v, want a refusal", v, err)
		}
	}
}

func TestQueueRulesMore(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	c := s.Client
	c.Init(3)
	sidA := c.StartSession(t.TempDir(), 3).SessionID
	sidB := c.StartSession(t.TempDir(), 3).SessionID
	f.Enqueue(fo.Script(fo.Text("busy"), fo.Hang()))
	turn := c.Turn(sidA, "one")
	st.Expect[*protocol.AssistantDelta](c)
	c.Send(&protocol.TurnStart{RequestID: "q1", SessionID: sidA, Prompt: "first"})
	e1 := st.Expect[*protocol.QueueEnqueued](c).Entry
	c.Send(&protocol.TurnStart{RequestID: "q2", SessionID: sidA, Prompt: "second"})
	e2 := st.Expect[*protocol.QueueEnqueued](c).Entry

	// Two clients' interleaved updates from the same revision: the first
	// wins, the second conflicts and sees the first's result.
	c.Send(&protocol.QueueUpdate{RequestID: "u1", SessionID: sidA, QueueID: e1.QueueID, Revision: 1, Prompt: "first, edited by one"})
	c.Send(&protocol.QueueUpdate{RequestID: "u2", SessionID: sidA, QueueID: e1.QueueID, Revision: 1, Prompt: "first, edited by two"})
	if up := st.Expect[*protocol.QueueUpdated](c); up.RequestID != "u1" || up.Entry.Revision != 2 {
		t.Fatalf("first update: %+v", up)
	}
	conflict := c.ExpectError(protocol.ErrQueueConflict)
	if conflict.RequestID != "u2" || conflict.Entry.Prompt != "first, edited by one" || conflict.Entry.Revision != 2 {
		t.Fatalf("second update: %+v", conflict)
	}
	// Move to the front (before the first) and back to the end.
	c.Send(&protocol.QueueMove{RequestID: "m1", SessionID: sidA, QueueID: e2.QueueID, Revision: 1, BeforeQueueID: e1.QueueID})
	if mv := st.Expect[*protocol.QueueMoved](c); mv.Entry.Position != 0 {
		t.Fatalf("move to front: %+v", mv)
	}
	c.Send(&protocol.QueueMove{RequestID: "m2", SessionID: sidA, QueueID: e2.QueueID, Revision: 2})
	if mv := st.Expect[*protocol.QueueMoved](c); mv.Entry.Position != 1 {
		t.Fatalf("move to end: %+v", mv)
	}
	// Moving an entry before itself is refused and changes nothing.
	c.Send(&protocol.QueueMove{RequestID: "m3", SessionID: sidA, QueueID: e2.QueueID, Revision: 3, BeforeQueueID: e2.QueueID})
	c.ExpectError(protocol.ErrInvalidRequest)
	// Another session's entries are not found from this one.
	c.Send(&protocol.QueueRemove{RequestID: "r1", SessionID: sidB, QueueID: e1.QueueID, Revision: 2})
	c.ExpectError(protocol.ErrQueueNotFound)

	// Pause, end the turn, and clear with entries queued: the queue goes.
	c.Send(&protocol.SessionPause{RequestID: "p", SessionID: sidA, Paused: true})
	st.Expect[*protocol.SessionPaused](c)
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sidA, TurnID: turn.TurnID})
	st.Expect[*protocol.TurnCancelled](c)
	c.Send(&protocol.SessionClear{RequestID: "clr", SessionID: sidA})
	st.Expect[*protocol.SessionCleared](c)
	sess, _ := s.Runtime.Manager.Get(sidA)
	if q := sess.Queue(); len(q) != 0 {
		t.Fatalf("queue after clear: %+v", q)
	}
	c.Send(&protocol.QueueRemove{RequestID: "r2", SessionID: sidA, QueueID: e1.QueueID, Revision: 2})
	c.ExpectError(protocol.ErrQueueNotFound)
	// Resuming dequeue after the clear starts nothing.
	c.Send(&protocol.SessionPause{RequestID: "p2", SessionID: sidA, Paused: false})
	st.Expect[*protocol.SessionPaused](c)
	f.Enqueue(fo.Script(fo.Text("fresh")))
	c.Turn(sidA, "fresh")
	st.Until[*protocol.TurnCompleted](c)
}

func TestScheduledServerTurnBuildsWhenItStarts(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	c := s.Client
	sess, err := s.Runtime.Manager.Get(sid)
	if err != nil {
		t.Fatal(err)
	}
	f.Enqueue(fo.Script(fo.Text("user turn"), fo.Hang()))
	turn := c.Turn(sid, "mine")
	st.Expect[*protocol.AssistantDelta](c)
	// Scheduled while the turn runs: the first is skipped when its turn
	// would start, the second is built only then.
	built := make(chan struct{}, 2)
	if err := sess.ScheduleServerTurn(func() (protocol.Origin, string, bool) {
		built <- struct{}{}
		return protocol.Origin{}, "", false
	}); err != nil {
		t.Fatal(err)
	}
	var jobs []string
	if err := sess.ScheduleServerTurn(func() (protocol.Origin, string, bool) {
		built <- struct{}{}
		return protocol.Origin{Kind: "background", Jobs: jobs}, "[SCV background report] " + strings.Join(jobs, ", "), true
	}); err != nil {
		t.Fatal(err)
	}
	jobs = []string{"job-1", "job-2"} // decided after scheduling
	if len(built) != 0 {
		t.Fatal("a scheduled turn was built while the session was busy")
	}
	f.Enqueue(fo.Script(fo.Text("report done")))
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: turn.TurnID})
	st.Expect[*protocol.TurnCancelled](c)
	started := st.Expect[*protocol.TurnStarted](c)
	if started.Origin == nil || strings.Join(started.Origin.Jobs, ",") != "job-1,job-2" {
		t.Fatalf("turn.started = %+v", started)
	}
	st.Until[*protocol.TurnCompleted](c)
	if len(built) != 2 {
		t.Fatalf("%d builds, want 2", len(built))
	}
	if m := f.Requests()[1].Messages; m[len(m)-1].Content != "[SCV background report] job-1, job-2" {
		t.Fatalf("the model got %+v", m[len(m)-1])
	}
}
