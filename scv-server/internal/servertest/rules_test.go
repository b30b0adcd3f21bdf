package servertest_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// Session approval rules (protocol v3): approval.resolve with scope
// "session" grants the rule approval.requested proposed, later calls it
// covers run unasked with tool.started naming it, session.rules lists the
// rules and session.clear drops them. The bash commands run for real; only
// the approval flow is checked, not their output.

var goTestRule = protocol.Rule{Tool: "bash", Key: "bash:go test", Description: "bash commands that start with `go test`"}

func resolve(c *st.Client, sid, approvalID string, approved bool, scope string) {
	c.Send(&protocol.ApprovalResolve{RequestID: c.ID(), SessionID: sid, ApprovalID: approvalID, Approved: approved, Scope: scope})
}

func listRules(t *testing.T, c *st.Client, sid string) []protocol.Rule {
	t.Helper()
	id := c.ID()
	c.Send(&protocol.SessionRules{RequestID: id, SessionID: sid})
	l := st.Expect[*protocol.RulesListed](c)
	if l.RequestID != id || l.SessionID != sid {
		t.Fatalf("session.rules_listed = %+v", l)
	}
	return l.Rules
}

// started returns the tool.started of call id among evs, or nil.
func started(evs []protocol.Event, id string) *protocol.ToolStarted {
	for _, e := range evs {
		if s, ok := e.(*protocol.ToolStarted); ok && s.CallID == id {
			return s
		}
	}
	return nil
}

func asked(evs []protocol.Event, id string) bool {
	for _, e := range evs {
		if r, ok := e.(*protocol.ApprovalRequested); ok && r.CallID == id {
			return true
		}
	}
	return false
}

func sameRule(a *protocol.Rule, b protocol.Rule) bool { return a != nil && *a == b }

func TestSessionRuleForBash(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(
		fo.Script(fo.ToolCall("c1", "bash", `{"command":"go test ./..."}`)),
		fo.Script(fo.ToolCall("c2", "bash", `{"command":"go test -run X ./..."}`)),
		fo.Script(fo.ToolCall("c3", "bash", `{"command":"go build ./..."}`)),
		fo.Script(fo.Text("done")),
	)
	c := s.Client
	c.Turn(sid, "test it")
	_, req := st.Until[*protocol.ApprovalRequested](c)
	if req.CallID != "c1" || !sameRule(req.Rule, goTestRule) {
		t.Fatalf("approval.requested = %+v, rule %+v; want the rule %+v", req, req.Rule, goTestRule)
	}
	resolve(c, sid, req.ApprovalID, true, protocol.ScopeSession)
	evs, req3 := st.Until[*protocol.ApprovalRequested](c)
	if s1 := started(evs, "c1"); s1 == nil || s1.Rule != nil {
		t.Fatalf("c1 (approved by the user) tool.started = %+v, want one without a rule", s1)
	}
	if asked(evs, "c2") {
		t.Fatal("go test -run X asked for approval after go test was approved for the session")
	}
	if s2 := started(evs, "c2"); s2 == nil || !sameRule(s2.Rule, goTestRule) {
		t.Fatalf("c2 tool.started = %+v, want it to name %+v", s2, goTestRule)
	}
	want3 := protocol.Rule{Tool: "bash", Key: "bash:go build", Description: "bash commands that start with `go build`"}
	if req3.CallID != "c3" || !sameRule(req3.Rule, want3) {
		t.Fatalf("go build: approval.requested = %+v, rule %+v; want it to ask, proposing %+v", req3, req3.Rule, want3)
	}
	resolve(c, sid, req3.ApprovalID, false, "")
	evs, _ = st.Until[*protocol.TurnCompleted](c)
	if started(evs, "c3") != nil {
		t.Fatal("the denied go build started")
	}
	if got := listRules(t, c, sid); !slices.Equal(got, []protocol.Rule{goTestRule}) {
		t.Fatalf("session.rules = %+v, want only %+v", got, goTestRule)
	}

	// session.clear drops the rules: the list is empty ([] on the wire)
	// and go test asks again.
	c.Send(&protocol.SessionClear{RequestID: c.ID(), SessionID: sid})
	st.Expect[*protocol.SessionCleared](c)
	if got := listRules(t, c, sid); len(got) != 0 {
		t.Fatalf("session.rules after session.clear = %+v", got)
	}
	if lines := c.Lines(); !strings.Contains(string(lines[len(lines)-1]), `"rules":[]`) {
		t.Fatalf("an empty list is not sent as []: %s", lines[len(lines)-1])
	}
	f.Enqueue(fo.Script(fo.ToolCall("c4", "bash", `{"command":"go test -run X ./..."}`)), fo.Script(fo.Text("ok")))
	c.Turn(sid, "again")
	_, req4 := st.Until[*protocol.ApprovalRequested](c)
	if req4.CallID != "c4" || !sameRule(req4.Rule, goTestRule) {
		t.Fatalf("after session.clear: approval.requested = %+v", req4)
	}
	resolve(c, sid, req4.ApprovalID, false, protocol.ScopeOnce)
	st.Until[*protocol.TurnCompleted](c)
}

func TestSessionRuleForWritesAndEdits(t *testing.T) {
	f, s := fake(t, "", st.Options{})
	sid, cwd := session(t, s, 3)
	for name, content := range map[string]string{"src/main.go": "package main\n", "src/a/b.go": "package a\n"} {
		p := filepath.Join(cwd, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.Enqueue(
		fo.Script(fo.ToolCall("w1", "write", `{"path":"src/main.go","content":"package main\n\n// x\n","mode":"replace"}`)),
		fo.Script(fo.ToolCall("e2", "edit", `{"path":"src/a/b.go","old_string":"package a","new_string":"package b"}`)),
		fo.Script(fo.ToolCall("w3", "write", `{"path":"docs/x.md","content":"# x\n","mode":"create"}`)),
		fo.Script(fo.ToolCall("w4", "write", `{"path":"docs/y.md","content":"# y\n","mode":"create"}`)),
		fo.Script(fo.Text("done")),
	)
	c := s.Client
	c.Turn(sid, "change things")
	srcRule := protocol.Rule{Tool: "write", Key: "fs:src/", Description: "writes and edits under src/ (write, edit)"}
	_, req := st.Until[*protocol.ApprovalRequested](c)
	if req.CallID != "w1" || !sameRule(req.Rule, srcRule) {
		t.Fatalf("approval.requested = %+v, rule %+v; want %+v", req, req.Rule, srcRule)
	}
	resolve(c, sid, req.ApprovalID, true, protocol.ScopeSession)
	evs, req3 := st.Until[*protocol.ApprovalRequested](c)
	if asked(evs, "e2") {
		t.Fatal("the edit of src/a/b.go asked after writes under src/ were approved for the session")
	}
	if s2 := started(evs, "e2"); s2 == nil || !sameRule(s2.Rule, srcRule) {
		t.Fatalf("e2 tool.started = %+v, want it to name %+v", s2, srcRule)
	}
	docsRule := protocol.Rule{Tool: "write", Key: "fs:docs/", Description: "writes and edits under docs/ (write, edit)"}
	if req3.CallID != "w3" || !sameRule(req3.Rule, docsRule) {
		t.Fatalf("docs/x.md: approval.requested = %+v, rule %+v; want it to ask, proposing %+v", req3, req3.Rule, docsRule)
	}
	// Approved once: no rule is granted, the next write under docs/ asks.
	resolve(c, sid, req3.ApprovalID, true, protocol.ScopeOnce)
	_, req4 := st.Until[*protocol.ApprovalRequested](c)
	if req4.CallID != "w4" {
		t.Fatalf("approval.requested = %+v, want w4's", req4)
	}
	resolve(c, sid, req4.ApprovalID, true, "")
	st.Until[*protocol.TurnCompleted](c)
	if b, _ := os.ReadFile(filepath.Join(cwd, "src", "a", "b.go")); string(b) != "package b\n" {
		t.Fatalf("src/a/b.go = %q", b)
	}
	if got := listRules(t, c, sid); !slices.Equal(got, []protocol.Rule{srcRule}) {
		t.Fatalf("session.rules = %+v, want only %+v", got, srcRule)
	}
}

// TestSessionRulesV2: v1 and v2 clients see the old events (no rule
// members) and their scope is ignored, even an unknown one.
func TestSessionRulesV2(t *testing.T) {
	t.Parallel()
	for _, version := range []int{1, 2} {
		f, s := fake(t, "", st.Options{})
		sid, _ := session(t, s, version)
		f.Enqueue(
			fo.Script(fo.ToolCall("c1", "bash", `{"command":"go test ./..."}`)),
			fo.Script(fo.ToolCall("c2", "bash", `{"command":"go test -run X ./..."}`)),
			fo.Script(fo.Text("done")),
		)
		c := s.Client
		c.Turn(sid, "test it")
		_, req := st.Until[*protocol.ApprovalRequested](c)
		resolve(c, sid, req.ApprovalID, true, protocol.ScopeSession)
		_, req2 := st.Until[*protocol.ApprovalRequested](c)
		if req2.CallID != "c2" {
			t.Fatalf("v%d: approval.requested = %+v, want c2 to ask too", version, req2)
		}
		resolve(c, sid, req2.ApprovalID, true, "forever")
		evs, _ := st.Until[*protocol.TurnCompleted](c)
		if started(evs, "c2") == nil {
			t.Fatalf("v%d: c2 did not run: %s", version, st.Kinds(evs))
		}
		for _, l := range c.Lines() {
			if strings.Contains(string(l), `"rule":`) {
				t.Fatalf("v%d: a frame has a rule: %s", version, l)
			}
		}
		c.Send(&protocol.SessionRules{RequestID: "r", SessionID: sid})
		if e := c.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, "version 3") {
			t.Fatalf("v%d: session.rules: %+v", version, e)
		}
	}
}

// TestNeverDeniesWhateverTheRules: under policy never nothing asks, so no
// rule can be proposed or granted, and the call is denied.
func TestNeverDeniesWhateverTheRules(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{ApprovalPolicy: "never"})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.ToolCall("c1", "bash", `{"command":"go test ./..."}`)), fo.Script(fo.Text("done")))
	c := s.Client
	c.Turn(sid, "test it")
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	if asked(evs, "c1") || started(evs, "c1") != nil {
		t.Fatalf("policy never: %s", st.Kinds(evs))
	}
	for _, e := range evs {
		if d, ok := e.(*protocol.ToolCompleted); ok && (d.Success || !strings.Contains(d.Output, `approval policy "never"`)) {
			t.Fatalf("tool.completed = %+v, want the policy's denial", d)
		}
	}
	if got := listRules(t, c, sid); len(got) != 0 {
		t.Fatalf("session.rules = %+v", got)
	}
}

// TestApprovalScopeErrors: an unknown scope, scope session for a request
// that proposed no rule (a command with a control operator) and scope
// session on a denial are invalid_request, and the request stays open.
func TestApprovalScopeErrors(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(
		fo.Script(fo.ToolCall("c1", "bash", `{"command":"go test ./... && echo ok"}`)),
		fo.Script(fo.ToolCall("c2", "bash", `{"command":"go vet ./..."}`)),
		fo.Script(fo.Text("done")),
	)
	c := s.Client
	c.Turn(sid, "test it")
	_, req := st.Until[*protocol.ApprovalRequested](c)
	if req.Rule != nil {
		t.Fatalf("a command with a control operator proposes %+v, want no rule", req.Rule)
	}
	if lines := c.Lines(); strings.Contains(string(lines[len(lines)-1]), `"rule"`) {
		t.Fatalf("the rule member is not omitted: %s", lines[len(lines)-1])
	}
	for _, tc := range []struct {
		id       string
		approved bool
		scope    string
		code     protocol.ErrorCode
		has      string
	}{
		{req.ApprovalID, true, "forever", protocol.ErrInvalidRequest, `unknown scope "forever"`},
		{req.ApprovalID, true, "Session", protocol.ErrInvalidRequest, "unknown scope"},
		{req.ApprovalID, true, protocol.ScopeSession, protocol.ErrInvalidRequest, "proposed no rule"},
		{req.ApprovalID, false, protocol.ScopeSession, protocol.ErrInvalidRequest, `needs "approved":true`},
		{"0b6f4c2e-9d1a-4e8b-a7c3-5f2d1e0c9b84", true, protocol.ScopeSession, protocol.ErrApprovalNotFound, "unknown or already resolved"},
	} {
		resolve(c, sid, tc.id, tc.approved, tc.scope)
		if e := c.ExpectError(tc.code); !strings.Contains(e.Message, tc.has) {
			t.Fatalf("scope %q approved %v: %q, want it to say %q", tc.scope, tc.approved, e.Message, tc.has)
		}
	}
	// Still open: approve it once.
	resolve(c, sid, req.ApprovalID, true, protocol.ScopeOnce)
	evs, req2 := st.Until[*protocol.ApprovalRequested](c)
	if s1 := started(evs, "c1"); s1 == nil || s1.Rule != nil {
		t.Fatalf("c1 tool.started = %+v", s1)
	}
	if req2.Rule == nil || req2.Rule.Key != "bash:go vet" {
		t.Fatalf("go vet proposes %+v", req2.Rule)
	}
	resolve(c, sid, req2.ApprovalID, false, protocol.ScopeSession)
	c.ExpectError(protocol.ErrInvalidRequest)
	resolve(c, sid, req2.ApprovalID, false, "")
	st.Until[*protocol.TurnCompleted](c)
	if got := listRules(t, c, sid); len(got) != 0 {
		t.Fatalf("session.rules = %+v, want none", got)
	}
}

// TestSessionRulesSurviveResume: granted rules are in the session's log,
// so a resumed session keeps them; a clear drops them for good.
func TestSessionRulesSurviveResume(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "")
	a := st.Start(t, st.Options{Config: cfg})
	a.Client.Init(3)
	dir := t.TempDir()
	sid := a.Client.StartSession(dir, 3).SessionID
	f.Enqueue(fo.Script(fo.ToolCall("c1", "bash", `{"command":"go test ./..."}`)), fo.Script(fo.Text("done")))
	a.Client.Turn(sid, "test it")
	_, req := st.Until[*protocol.ApprovalRequested](a.Client)
	resolve(a.Client, sid, req.ApprovalID, true, protocol.ScopeSession)
	st.Until[*protocol.TurnCompleted](a.Client)
	a.Stop()

	b := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	b.Client.Init(3)
	resumeSession(t, b.Client, dir, sid)
	if got := listRules(t, b.Client, sid); !slices.Equal(got, []protocol.Rule{goTestRule}) {
		t.Fatalf("session.rules after resume = %+v, want %+v", got, goTestRule)
	}
	f.Enqueue(fo.Script(fo.ToolCall("c2", "bash", `{"command":"go test -run X ./..."}`)), fo.Script(fo.Text("ok")))
	b.Client.Turn(sid, "again")
	evs, _ := st.Until[*protocol.TurnCompleted](b.Client)
	if asked(evs, "c2") {
		t.Fatal("a call the resumed rule covers asked for approval")
	}
	b.Client.Send(&protocol.SessionClear{RequestID: b.Client.ID(), SessionID: sid})
	st.Expect[*protocol.SessionCleared](b.Client)
	b.Stop()

	c := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	c.Client.Init(3)
	resumeSession(t, c.Client, dir, sid)
	if got := listRules(t, c.Client, sid); len(got) != 0 {
		t.Fatalf("session.rules after a clear and a resume = %+v", got)
	}
}
