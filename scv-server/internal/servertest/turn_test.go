package servertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/dialect/ndjson"
	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// fake starts a fake provider and a server configured for it.
func fake(t *testing.T, extra string, opts st.Options) (*fo.Server, *st.Server) {
	t.Helper()
	f := fo.Start(t)
	opts.Config = st.FakeProviderConfig(f.URL(), extra)
	return f, st.Start(t, opts)
}

// busySession starts a session of protocol version v in a server with a
// fake provider, and a turn in it that streams a little and then hangs, so
// that prompts sent meanwhile are queued.
func busySession(t *testing.T, v int) (*fo.Server, *st.Server, string, *protocol.TurnStarted) {
	t.Helper()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, v)
	f.Enqueue(fo.Script(fo.Text("busy"), fo.Hang()))
	turn := s.Client.Turn(sid, "one")
	st.Expect[*protocol.AssistantDelta](s.Client)
	return f, s, sid, turn
}

// storedSession runs one completed turn ("a title") in a server that then
// stops, and returns what a test needs to resume the stored session: the
// fake provider, the configuration, the server's SCV_HOME, the workspace
// and the session's id.
func storedSession(t *testing.T) (f *fo.Server, cfg, home, dir, sid string) {
	t.Helper()
	f = fo.Start(t)
	cfg = st.FakeProviderConfig(f.URL(), "")
	a := st.Start(t, st.Options{Config: cfg})
	a.Client.Init(3)
	dir = t.TempDir()
	sid = a.Client.StartSession(dir, 3).SessionID
	f.Enqueue(fo.Script(fo.Text("done")))
	a.Client.Turn(sid, "a title")
	st.Until[*protocol.TurnCompleted](a.Client)
	a.Stop()
	return f, cfg, a.Home, dir, sid
}

func session(t *testing.T, s *st.Server, version int) (string, string) {
	t.Helper()
	s.Client.Init(version)
	dir := t.TempDir()
	started := s.Client.StartSession(dir, version)
	return started.SessionID, started.Cwd
}

func TestStreamedTurn(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	f.Enqueue(fo.Script(fo.Text("I found ", "the issue."), fo.Usage(1200, 240)))
	sid, _ := session(t, s, 1)
	c := s.Client
	started := c.Turn(sid, "Fix the failing test.")
	if started.TurnID == "" || started.RequestID == "" || started.Seq != 1 {
		t.Fatalf("turn.started = %+v", started)
	}
	d1 := st.Expect[*protocol.AssistantDelta](c)
	d2 := st.Expect[*protocol.AssistantDelta](c)
	if d1.Content+d2.Content != "I found the issue." || d1.TurnID != started.TurnID || d1.RequestID != started.RequestID {
		t.Fatalf("deltas = %+v %+v", d1, d2)
	}
	done := st.Expect[*protocol.AssistantCompleted](c)
	if done.Content != "I found the issue." {
		t.Fatalf("assistant.completed = %+v", done)
	}
	end := st.Expect[*protocol.TurnCompleted](c)
	if end.Steps != 1 || end.Usage == nil || end.Usage.InputTokens != 1200 || end.Usage.OutputTokens != 240 || end.RequestID != started.RequestID {
		t.Fatalf("turn.completed = %+v", end)
	}
	reqs := f.Requests()
	if len(reqs) != 1 || reqs[0].Model != "fake-model" || !reqs[0].Stream {
		t.Fatalf("requests = %+v", reqs)
	}
	if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test-secret" {
		t.Fatalf("Authorization = %q", got)
	}
	msgs := reqs[0].Messages
	if len(msgs) != 2 || msgs[0].Role != "system" || msgs[1].Role != "user" || msgs[1].Content != "Fix the failing test." {
		t.Fatalf("messages = %+v", msgs)
	}
	if len(reqs[0].Tools) == 0 || reqs[0].Tools[0].Name != "read" {
		t.Fatalf("tools = %+v", reqs[0].Tools)
	}

	// The next turn carries the history.
	f.Enqueue(fo.Script(fo.Text("Again.")))
	c.Turn(sid, "And again?")
	_, end2 := st.Until[*protocol.TurnCompleted](c)
	if end2.Usage != nil {
		t.Fatalf("usage = %+v, want none when the provider reports none", end2.Usage)
	}
	reqs = f.Requests()
	if got := len(reqs[1].Messages); got != 4 {
		t.Fatalf("second request has %d messages, want system, user, assistant, user", got)
	}
}

func TestPromptLimits(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 1)
	c := s.Client
	c.Send(&protocol.TurnStart{RequestID: "e", SessionID: sid, Prompt: ""})
	if e := c.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, "empty") || e.RequestID != "e" {
		t.Fatalf("empty prompt: %+v", e)
	}
	c.Send(&protocol.TurnStart{RequestID: "big", SessionID: sid, Prompt: strings.Repeat("é", protocol.MaxPromptBytes/2) + "x"})
	if e := c.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, "262145 bytes") {
		t.Fatalf("big prompt: %+v", e)
	}
	f.Enqueue(fo.Script(fo.Text("ok")))
	c.Turn(sid, strings.Repeat("é", protocol.MaxPromptBytes/2))
	st.Until[*protocol.TurnCompleted](c)
}

func TestSecondTurnV1IsRefused(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	f.Enqueue(fo.Script(fo.Text("slow"), fo.Hang()))
	sid, _ := session(t, s, 1)
	c := s.Client
	started := c.Turn(sid, "one")
	st.Expect[*protocol.AssistantDelta](c)
	c.Send(&protocol.TurnStart{RequestID: "two", SessionID: sid, Prompt: "two"})
	if e := c.ExpectError(protocol.ErrTurnActive); e.RequestID != "two" {
		t.Fatalf("error = %+v", e)
	}
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: started.TurnID})
	end := st.Expect[*protocol.TurnCancelled](c)
	if end.RequestID != started.RequestID {
		t.Fatalf("turn.cancelled = %+v", end)
	}
}

func TestQueueV2DequeuesWithOriginalRequestID(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	f.Enqueue(fo.Script(fo.Text("first"), fo.Hang()), fo.Script(fo.Text("second")))
	sid, _ := session(t, s, 2)
	c := s.Client
	first := c.Turn(sid, "one")
	st.Expect[*protocol.AssistantDelta](c)
	c.Send(&protocol.TurnStart{RequestID: "queued-1", SessionID: sid, Prompt: "two"})
	enq := st.Expect[*protocol.QueueEnqueued](c)
	if enq.RequestID != "queued-1" || enq.Entry.Prompt != "two" || enq.Entry.Submitter != "servertest" || enq.Entry.Revision != 1 || enq.Entry.Position != 0 {
		t.Fatalf("queue.enqueued = %+v", enq)
	}
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: first.TurnID})
	st.Expect[*protocol.TurnCancelled](c)
	deq := st.Expect[*protocol.QueueDequeued](c)
	if deq.Entry.QueueID != enq.Entry.QueueID {
		t.Fatalf("queue.dequeued = %+v", deq)
	}
	second := st.Expect[*protocol.TurnStarted](c)
	if second.RequestID != "queued-1" {
		t.Fatalf("dequeued turn.started request_id = %q, want queued-1", second.RequestID)
	}
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	for _, e := range evs {
		if h, ok := e.(protocol.TurnEvent); ok && h.Turn().RequestID != "queued-1" {
			t.Fatalf("%s carries request_id %q", e.Kind(), h.Turn().RequestID)
		}
	}
}

func TestCancelUnknownTurn(t *testing.T) {
	t.Parallel()
	_, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	s.Client.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: "no-such-turn"})
	s.Client.ExpectError(protocol.ErrTurnNotFound)
}

func TestToolCallReadOnlyRunsWithoutApproval(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, cwd := session(t, s, 3)
	if err := os.WriteFile(filepath.Join(cwd, "main.go"), []byte("package main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.Enqueue(
		fo.Script(fo.Text("Let me look."), fo.ToolCall("call_1", "read", `{"pa`, `th":"main.go"}`), fo.Usage(10, 5)),
		fo.Script(fo.Text("It is a main package."), fo.Usage(20, 6)),
	)
	c := s.Client
	c.Turn(sid, "what is main.go?")
	evs, end := st.Until[*protocol.TurnCompleted](c)
	want := "assistant.delta assistant.completed tool.proposed tool.started tool.completed assistant.delta assistant.completed turn.completed"
	if got := st.Kinds(evs); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	prop := evs[2].(*protocol.ToolProposed)
	if prop.CallID != "call_1" || prop.Name != "read" || string(prop.Arguments) != `{"path":"main.go"}` {
		t.Fatalf("tool.proposed = %+v", prop)
	}
	done := evs[4].(*protocol.ToolCompleted)
	if !done.Success || !strings.Contains(done.Output, "package main") || done.Truncated {
		t.Fatalf("tool.completed = %+v", done)
	}
	if end.Steps != 2 || end.Usage.InputTokens != 30 || end.Usage.OutputTokens != 11 {
		t.Fatalf("turn.completed = %+v (usage is the turn's total)", end)
	}
	reqs := f.Requests()
	m := reqs[1].Messages
	last := m[len(m)-1]
	if last.Role != "tool" || last.ToolCallID != "call_1" || !strings.Contains(last.Content, "package main") {
		t.Fatalf("tool result message = %+v", last)
	}
}

func TestInvalidArgumentsBecomeAFailedResult(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(
		fo.Script(fo.ToolCall("c1", "read", `{"path":`), fo.ToolCall("c2", "read", `{"path":7}`), fo.ToolCall("c3", "nosuch", `{}`)),
		fo.Script(fo.Text("sorry")),
	)
	c := s.Client
	c.Turn(sid, "go")
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	var fails []string
	for _, e := range evs {
		if d, ok := e.(*protocol.ToolCompleted); ok {
			if d.Success {
				t.Fatalf("%s succeeded", d.CallID)
			}
			fails = append(fails, d.Output)
		}
		if _, ok := e.(*protocol.ToolStarted); ok {
			t.Fatal("a refused call was started")
		}
	}
	if len(fails) != 3 || !strings.Contains(fails[0], "not valid JSON") || !strings.Contains(fails[1], "argument path") || !strings.Contains(fails[2], `no tool named "nosuch"`) {
		t.Fatalf("failures = %q", fails)
	}
	// The raw text of invalid JSON arguments is sent as a string.
	prop := evs[1].(*protocol.ToolProposed)
	var s1 string
	if err := json.Unmarshal(prop.Arguments, &s1); err != nil || s1 != `{"path":` {
		t.Fatalf("arguments = %s", prop.Arguments)
	}
}

func TestApprovalFlow(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		f, s := fake(t, "", st.Options{})
		sid, cwd := session(t, s, 3)
		if err := os.WriteFile(filepath.Join(cwd, ".env"), []byte("TOKEN=x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		f.Enqueue(fo.Script(fo.ToolCall("c1", "read", `{"path":".env"}`)), fo.Script(fo.Text("done")))
		c := s.Client
		c.Turn(sid, "read the env")
		st.Expect[*protocol.AssistantCompleted](c)
		st.Expect[*protocol.ToolProposed](c)
		req := st.Expect[*protocol.ApprovalRequested](c)
		if req.Risk != protocol.RiskFilesystem || req.Cwd != cwd || !strings.Contains(req.Summary, ".env") || len(req.ApprovalID) != 36 {
			t.Fatalf("approval.requested = %+v", req)
		}
		c.Send(&protocol.ApprovalResolve{RequestID: "a", SessionID: sid, ApprovalID: req.ApprovalID, Approved: approve})
		evs, _ := st.Until[*protocol.TurnCompleted](c)
		done := evs[0]
		if approve {
			if _, ok := done.(*protocol.ToolStarted); !ok {
				t.Fatalf("after approval got %s", st.Kinds(evs))
			}
			tc := evs[1].(*protocol.ToolCompleted)
			if !tc.Success || !strings.Contains(tc.Output, "TOKEN=x") {
				t.Fatalf("tool.completed = %+v", tc)
			}
		} else {
			tc, ok := done.(*protocol.ToolCompleted)
			if !ok || tc.Success || !strings.Contains(tc.Output, "denied") {
				t.Fatalf("after denial got %s", st.Kinds(evs))
			}
			m := f.Requests()[1].Messages
			if !strings.Contains(m[len(m)-1].Content, "denied") {
				t.Fatalf("the model did not read the denial: %+v", m[len(m)-1])
			}
		}
		// A resolved id cannot be resolved again.
		c.Send(&protocol.ApprovalResolve{RequestID: "b2", SessionID: sid, ApprovalID: req.ApprovalID, Approved: true})
		c.ExpectError(protocol.ErrApprovalNotFound)
		c.Send(&protocol.ApprovalResolve{RequestID: "b3", SessionID: sid, ApprovalID: "00000000-0000-0000-0000-000000000000", Approved: true})
		c.ExpectError(protocol.ErrApprovalNotFound)
	}
}

func TestApprovalPolicies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy  string
		started bool
	}{{"never", false}, {"auto", true}} {
		t.Run(tc.policy, func(t *testing.T) {
			f, s := fake(t, "", st.Options{ApprovalPolicy: tc.policy})
			sid, cwd := session(t, s, 3)
			_ = os.WriteFile(filepath.Join(cwd, "id_ed25519"), []byte("key"), 0o600)
			f.Enqueue(fo.Script(fo.ToolCall("c1", "read", `{"path":"id_ed25519"}`)), fo.Script(fo.Text("done")))
			s.Client.Turn(sid, "go")
			evs, _ := st.Until[*protocol.TurnCompleted](s.Client)
			got := st.Kinds(evs)
			if strings.Contains(got, "approval.requested") {
				t.Fatalf("%s asked: %s", tc.policy, got)
			}
			if strings.Contains(got, "tool.started") != tc.started {
				t.Fatalf("%s: %s", tc.policy, got)
			}
		})
	}
}

func TestCancelDuringApproval(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.ToolCall("c1", "read", `{"path":"x.pem"}`)))
	c := s.Client
	turn := c.Turn(sid, "go")
	_, req := st.Until[*protocol.ApprovalRequested](c)
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: turn.TurnID})
	st.Expect[*protocol.TurnCancelled](c)
	c.Send(&protocol.ApprovalResolve{RequestID: "late", SessionID: sid, ApprovalID: req.ApprovalID, Approved: true})
	c.ExpectError(protocol.ErrApprovalNotFound)
	// The session is usable and its history valid: the cancelled call got
	// an answer.
	f.Enqueue(fo.Script(fo.Text("ok")))
	c.Turn(sid, "again")
	st.Until[*protocol.TurnCompleted](c)
	m := f.Requests()[1].Messages
	var sawCall, sawAnswer bool
	for _, x := range m {
		if len(x.ToolCalls) > 0 && x.ToolCalls[0].ID == "c1" {
			sawCall = true
		}
		if x.Role == "tool" && x.ToolCallID == "c1" {
			sawAnswer = true
		}
	}
	if !sawCall || !sawAnswer {
		t.Fatalf("history after cancel = %+v", m)
	}
}

func TestCancelDuringStream(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.Text("partial"), fo.Hang()))
	c := s.Client
	turn := c.Turn(sid, "go")
	st.Expect[*protocol.AssistantDelta](c)
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: turn.TurnID})
	st.Expect[*protocol.TurnCancelled](c)
	// The provider saw the request go away.
	ctx, cancel := context.WithTimeout(context.Background(), st.Wait)
	defer cancel()
	if _, err := f.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
}

func TestProviderErrorKeepsSessionUsable(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.APIError(400, "model fake-model does not exist")), fo.Script(fo.Text("fine")))
	c := s.Client
	c.Turn(sid, "go")
	fail := st.Expect[*protocol.TurnFailed](c)
	if fail.Code != protocol.FailProviderError || !strings.Contains(fail.Message, "does not exist") || strings.Contains(fail.Message, "sk-test-secret") {
		t.Fatalf("turn.failed = %+v", fail)
	}
	c.Turn(sid, "again")
	st.Until[*protocol.TurnCompleted](c)
}

func TestToolLimit(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	var steps []fo.Step
	for i := range 33 {
		steps = append(steps, fo.ToolCall("c"+string(rune('A'+i)), "read", `{"path":"."}`))
	}
	f.Enqueue(fo.Script(steps...))
	s.Client.Turn(sid, "go")
	evs, fail := st.Until[*protocol.TurnFailed](s.Client)
	if fail.Code != protocol.FailToolLimit || strings.Contains(st.Kinds(evs), "tool.") {
		t.Fatalf("events %s, turn.failed = %+v", st.Kinds(evs), fail)
	}
}

func TestResponseLimit(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.Repeat(1100, strings.Repeat("x", 1000))))
	s.Client.Turn(sid, "go")
	_, fail := st.Until[*protocol.TurnFailed](s.Client)
	if fail.Code != protocol.FailResponseLimit {
		t.Fatalf("turn.failed = %+v", fail)
	}
}

func TestStepLimit(t *testing.T) {
	t.Parallel()
	// max_steps lives in [agent]; configure 2 steps.
	fk := fo.Start(t)
	srv := st.Start(t, st.Options{Config: st.FakeProviderConfig(fk.URL(), "") + "\n[agent]\nmax_steps = 2\n"})
	sid, _ := session(t, srv, 3)
	for range 2 {
		fk.Enqueue(fo.Script(fo.ToolCall("c", "read", `{"path":"."}`)))
	}
	srv.Client.Turn(sid, "loop forever")
	evs, fail := st.Until[*protocol.TurnFailed](srv.Client)
	if fail.Code != protocol.FailStepLimit || fail.Message != "agent reached 2 steps" {
		t.Fatalf("turn.failed = %+v", fail)
	}
	if n := strings.Count(st.Kinds(evs), "tool.started"); n != 1 {
		t.Fatalf("%d calls ran, want 1 (the last step's calls are not run): %s", n, st.Kinds(evs))
	}
}

func TestIdleStreamFails(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "stream_idle_timeout_seconds = 1", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.Text("hello"), fo.Hang()))
	s.Client.Turn(sid, "go")
	_, fail := st.Until[*protocol.TurnFailed](s.Client)
	if fail.Code != protocol.FailProviderError {
		t.Fatalf("turn.failed = %+v", fail)
	}
}

func TestClear(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 1)
	c := s.Client
	f.Enqueue(fo.Script(fo.Text("a"), fo.Hang()))
	turn := c.Turn(sid, "one")
	st.Expect[*protocol.AssistantDelta](c)
	c.Send(&protocol.SessionClear{RequestID: "clr", SessionID: sid})
	c.ExpectError(protocol.ErrTurnActive)
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: turn.TurnID})
	end := st.Expect[*protocol.TurnCancelled](c)
	c.Send(&protocol.SessionClear{RequestID: "clr2", SessionID: sid})
	cl := st.Expect[*protocol.SessionCleared](c)
	if cl.RequestID != "clr2" || cl.Seq != end.Seq+1 {
		t.Fatalf("session.cleared = %+v after seq %d", cl, end.Seq)
	}
	f.Enqueue(fo.Script(fo.Text("b")))
	c.Turn(sid, "two")
	st.Until[*protocol.TurnCompleted](c)
	if m := f.Requests()[1].Messages; len(m) != 2 {
		t.Fatalf("after clear the request has %d messages, want system and user", len(m))
	}
}

func TestEOFCancelsActiveTurn(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.Text("working"), fo.Hang()))
	c := s.Client
	c.Turn(sid, "go")
	st.Expect[*protocol.AssistantDelta](c)
	s.CloseInput()
	st.Expect[*protocol.TurnCancelled](c)
	if err := s.Done(); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if !c.Closed() {
		t.Fatal("output not closed")
	}
}

func TestBrokenOutputCleansUp(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{Grace: 300 * time.Millisecond})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.Text("working"), fo.Hang()))
	c := s.Client
	c.Turn(sid, "go")
	st.Expect[*protocol.AssistantDelta](c)
	s.CloseOutput()
	// Anything the server writes now fails.
	_ = s.Client.TrySend(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: "none"})
	if err := s.Done(); err == nil {
		t.Fatal("Serve returned nil after the output broke")
	}
}

func TestBackpressureTimeoutEndsConnection(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{StallLimit: 200 * time.Millisecond, Grace: 200 * time.Millisecond})
	sid, _ := session(t, s, 1)
	// Far more output than the queue's 256 frames, to a client that stops
	// reading.
	f.Enqueue(fo.Script(fo.Repeat(5000, "x"), fo.Hang()))
	s.Client.Pause()
	s.Client.Send(&protocol.TurnStart{RequestID: "t", SessionID: sid, Prompt: "go"})
	if err := waitRequests(f, 1); err != nil {
		t.Fatal(err)
	}
	// The writer's send blocks on the unread pipe, and after the send
	// timeout the connection gives up on the client.
	err := s.Done()
	if !errors.Is(err, ndjson.ErrBackpressure) {
		t.Fatalf("Serve = %v, want ErrBackpressure", err)
	}
	s.Client.Resume()
}

func waitRequests(f *fo.Server, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), st.Wait)
	defer cancel()
	_, err := f.WaitRequests(ctx, n)
	return err
}
