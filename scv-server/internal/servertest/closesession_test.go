package servertest_test

import (
	"context"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestManagerCloseSession: closing one session (ACP's session/close) while
// its turn runs cancels the turn, which still emits its end, drops the
// queue, forgets the session and releases its log, so it can be resumed.
func TestManagerCloseSession(t *testing.T) {
	f, s, sid, _ := busySession(t, 3)
	c := s.Client
	c.Send(&protocol.TurnStart{RequestID: c.ID(), SessionID: sid, Prompt: "queued"})
	st.Until[*protocol.QueueEnqueued](c)
	mgr := s.Runtime.Manager
	sess, err := mgr.Get(sid)
	if err != nil {
		t.Fatal(err)
	}
	cwd := sess.Cwd()
	if err := mgr.CloseSession(context.Background(), sid); err != nil {
		t.Fatal(err)
	}
	st.Until[*protocol.TurnCancelled](c)
	if _, err := mgr.Get(sid); err == nil {
		t.Fatal("a closed session is still open")
	}
	if err := mgr.CloseSession(context.Background(), sid); err == nil {
		t.Fatal("closing a closed session succeeded")
	}
	if n := len(f.Requests()); n != 1 {
		t.Fatalf("%d model requests: the queued prompt ran", n)
	}
	// The log was released: the session resumes.
	c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: cwd, Resume: sid})
	if _, started := st.Until[*protocol.SessionStarted](c); !started.Resumed {
		t.Fatalf("resume after close: %+v", started)
	}
}

// TestSessionSetPolicy: a policy change applies from the next turn.
func TestSessionSetPolicy(t *testing.T) {
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	c := s.Client
	sess, err := s.Runtime.Manager.Get(sid)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Policy() != "on-risk" {
		t.Fatalf("policy %q", sess.Policy())
	}
	sess.SetPolicy("never")
	f.Enqueue(fo.Script(fo.ToolCall("c1", "bash", `{"command":"true"}`)), fo.Script(fo.Text("ok")))
	c.Turn(sid, "run")
	_, done := st.Until[*protocol.ToolCompleted](c)
	if done.Success {
		t.Fatalf("never ran a command: %+v", done)
	}
	st.Until[*protocol.TurnCompleted](c)
}
