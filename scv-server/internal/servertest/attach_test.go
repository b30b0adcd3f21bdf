package servertest_test

import (
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestV4OnOneConnection checks the v4 messages' refusals and a detach and
// re-attach on one (stdio) connection: daemon.status is only a daemon's,
// attaching twice or an unknown session is refused, a detached session
// refuses turns until it is attached again, and after_seq at the last seq
// replays nothing and loses nothing.
func TestV4OnOneConnection(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	c := s.Client
	c.Init(protocol.Version4)
	c.Send(&protocol.DaemonStatus{RequestID: c.ID()})
	c.ExpectError(protocol.ErrInvalidRequest)
	c.Send(&protocol.SessionAttach{RequestID: c.ID(), SessionID: "nope"})
	c.ExpectError(protocol.ErrSessionNotFound)
	started := c.StartSession(t.TempDir(), protocol.Version4)
	sid := started.SessionID
	c.Send(&protocol.SessionAttach{RequestID: c.ID(), SessionID: sid})
	c.ExpectError(protocol.ErrInvalidRequest)

	c.Send(&protocol.SessionDetach{RequestID: c.ID(), SessionID: sid})
	if d := st.Expect[*protocol.SessionDetached](c); d.SessionID != sid {
		t.Fatalf("session.detached = %+v", d)
	}
	c.Send(&protocol.TurnStart{RequestID: c.ID(), SessionID: sid, Prompt: "hi"})
	c.ExpectError(protocol.ErrSessionNotFound)
	c.Send(&protocol.SessionDetach{RequestID: c.ID(), SessionID: sid})
	c.ExpectError(protocol.ErrSessionNotFound)

	last := uint64(1) // the queue.snapshot
	c.Send(&protocol.SessionAttach{RequestID: c.ID(), SessionID: sid, AfterSeq: &last})
	att := st.Expect[*protocol.SessionAttached](c)
	if att.LastSeq != 1 || att.Replayed != 0 || att.ReplayTruncated || att.Clients != 1 || att.Queue == nil {
		t.Fatalf("session.attached = %+v", att)
	}
	c.Send(&protocol.SessionList{RequestID: c.ID()})
	l := st.Expect[*protocol.SessionListed](c)
	if len(l.Live) != 1 || l.Live[0].SessionID != sid || l.Live[0].Clients != 1 {
		t.Fatalf("session.listed = %+v", l)
	}
	c.Turn(sid, "hi") // seq 2: the client checks there is no gap
	// The demo asks for an approval; a v4 session tells its clients who
	// answered.
	_, req := st.Until[*protocol.ApprovalRequested](c)
	c.Send(&protocol.ApprovalResolve{RequestID: c.ID(), SessionID: sid, ApprovalID: req.ApprovalID, Approved: false})
	res := st.Expect[*protocol.ApprovalResolved](c)
	if res.ApprovalID != req.ApprovalID || res.Approved || res.Scope != protocol.ScopeOnce || res.By != "servertest" || res.TurnID != req.TurnID {
		t.Fatalf("approval.resolved = %+v", res)
	}
	st.Until[*protocol.TurnCompleted](c)
}

// TestV4MessagesRefusedBeforeV4: a v3 connection gets invalid_request for
// the v4 messages, and its session.listed has no live member.
func TestV4MessagesRefusedBeforeV4(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	c := s.Client
	c.Init(protocol.Version3)
	for _, m := range []protocol.ClientMessage{
		&protocol.SessionAttach{RequestID: c.ID(), SessionID: "x"},
		&protocol.SessionDetach{RequestID: c.ID(), SessionID: "x"},
		&protocol.DaemonStatus{RequestID: c.ID()},
	} {
		c.Send(m)
		c.ExpectError(protocol.ErrInvalidRequest)
	}
	ws := t.TempDir()
	c.StartSession(ws, protocol.Version3)
	c.Send(&protocol.SessionList{RequestID: c.ID(), Cwd: ws})
	if l := st.Expect[*protocol.SessionListed](c); l.Live != nil {
		t.Fatalf("a v3 session.listed has live: %+v", l)
	}
}

// TestV4SessionApprovalPolicy: a v4 session.start may choose the
// session's approval policy (a daemon's clients each have their own):
// "never" denies the demo's bash call without asking where the server's
// on-risk would ask; an unknown policy is refused; v3 ignores the field.
func TestV4SessionApprovalPolicy(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	c := s.Client
	c.Init(protocol.Version4)
	ws := t.TempDir()
	c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: ws, ApprovalPolicy: "sometimes"})
	if e := c.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, `unknown approval policy "sometimes"`) {
		t.Fatalf("error = %+v", e)
	}
	c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: ws, ApprovalPolicy: "never"})
	sid := st.Expect[*protocol.SessionStarted](c).SessionID
	st.Expect[*protocol.QueueSnapshot](c)
	c.Turn(sid, "hi")
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	for _, ev := range evs {
		if _, ok := ev.(*protocol.ApprovalRequested); ok {
			t.Fatalf("policy never asked: %+v", ev)
		}
	}

	v3 := st.Start(t, st.Options{}).Client
	v3.Init(protocol.Version3)
	v3.Send(&protocol.SessionStart{RequestID: v3.ID(), Cwd: ws, ApprovalPolicy: "sometimes"})
	st.Expect[*protocol.SessionStarted](v3)
}
