package servertest_test

import (
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestAllowRulesAndRevoke: tools.allow rules run covered calls without
// asking and say so in tool.started; session.rules lists them; rule.revoke
// removes one, the next call asks, and a resumed session stays without it.
func TestAllowRulesAndRevoke(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "[tools]\nallow = [\"bash:echo\"]\n")
	a := st.Start(t, st.Options{Config: cfg})
	c := a.Client
	c.Init(protocol.Version4)
	dir := t.TempDir()
	sid := c.StartSession(dir, protocol.Version4).SessionID
	f.Enqueue(
		fo.Script(fo.ToolCall("b1", "bash", `{"command":"echo allowed"}`)),
		fo.Script(fo.Text("ran it")),
		fo.Script(fo.ToolCall("b2", "bash", `{"command":"echo again"}`)),
		fo.Script(fo.Text("asked")),
	)
	c.Turn(sid, "echo")
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	var started *protocol.ToolStarted
	for _, e := range evs {
		if _, ok := e.(*protocol.ApprovalRequested); ok {
			t.Fatal("a call tools.allow covers asked for approval")
		}
		if ts, ok := e.(*protocol.ToolStarted); ok {
			started = ts
		}
	}
	if started == nil || started.Rule == nil || started.Rule.Key != "bash:echo" || !strings.Contains(started.Rule.Description, "tools.allow") {
		t.Fatalf("tool.started = %+v, want the tools.allow rule", started)
	}
	c.Send(&protocol.RuleRevoke{RequestID: c.ID(), SessionID: sid, Key: "bash:nope"})
	if e := st.Expect[*protocol.Error](c); e.Code != protocol.ErrInvalidRequest || !strings.Contains(e.Message, "no rule") {
		t.Fatalf("revoking an unknown rule: %+v", e)
	}
	c.Send(&protocol.RuleRevoke{RequestID: c.ID(), SessionID: sid, Key: "bash:echo"})
	if l := st.Expect[*protocol.RulesListed](c); len(l.Rules) != 0 {
		t.Fatalf("rules after the revoke: %+v", l.Rules)
	}
	c.Turn(sid, "echo again")
	_, req := st.Until[*protocol.ApprovalRequested](c)
	c.Send(&protocol.ApprovalResolve{RequestID: c.ID(), SessionID: sid, ApprovalID: req.ApprovalID})
	st.Until[*protocol.TurnCompleted](c)
	a.Stop()

	b := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	b.Client.Init(protocol.Version4)
	b.Client.Send(&protocol.SessionStart{RequestID: b.Client.ID(), Cwd: dir, Resume: sid})
	st.Until[*protocol.QueueSnapshot](b.Client)
	b.Client.Send(&protocol.SessionRules{RequestID: b.Client.ID(), SessionID: sid})
	if l := st.Expect[*protocol.RulesListed](b.Client); len(l.Rules) != 0 {
		t.Fatalf("the resumed session has rules %+v; the revoked tools.allow rule came back", l.Rules)
	}
	// A new session has the configuration's rule again.
	other := b.Client.StartSession(t.TempDir(), protocol.Version4)
	b.Client.Send(&protocol.SessionRules{RequestID: b.Client.ID(), SessionID: other.SessionID})
	if l := st.Expect[*protocol.RulesListed](b.Client); len(l.Rules) != 1 || l.Rules[0].Key != "bash:echo" {
		t.Fatalf("a new session's rules = %+v, want tools.allow's", l.Rules)
	}
}
