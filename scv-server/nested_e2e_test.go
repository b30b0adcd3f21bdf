package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit/bins"
)

// nestedWorld is an SCV home whose nested SCV (agents/scv) is signed in
// with the same fake model, and the environment that puts the real `scv`
// on the server's PATH.
type nestedWorld struct {
	f         *fo.Server
	home, dir string
	env       []string
}

func newNestedWorld(t *testing.T, nestedExtra string) *nestedWorld {
	t.Helper()
	binDir, err := bins.Build("scv", "scv-server")
	if err != nil {
		t.Fatal(err)
	}
	w := &nestedWorld{f: fo.Start(t), home: t.TempDir(), dir: t.TempDir()}
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(w.home, "config.toml"), w.f.Config(""))
	write(filepath.Join(w.home, "agents", "scv", "config.toml"), w.f.Config("")+nestedExtra)
	w.env = []string{"HOME=" + t.TempDir(), "PATH=" + binDir + ":/usr/bin:/bin"}
	return w
}

// start starts the parent scv-server with args and opens a session in
// w.dir.
func (w *nestedWorld) start(t *testing.T, args ...string) (*proc, string) {
	t.Helper()
	p := startEnv(t, w.home, w.env, args...)
	initV3(p)
	p.send(&protocol.SessionStart{RequestID: "s", Cwd: w.dir})
	return p, nextOf[*protocol.SessionStarted](p).SessionID
}

// agentCall is a scripted parent reply calling the agent tool.
func agentCall(id, args string) fo.Reply { return fo.Script(fo.ToolCall(id, "agent", args)) }

// approveNext answers the next approval.requested of p (which must be one)
// and returns it.
func approveNext(p *proc, sid string, ok bool) *protocol.ApprovalRequested {
	ar := nextOf[*protocol.ApprovalRequested](p)
	p.send(&protocol.ApprovalResolve{RequestID: "a-" + ar.ApprovalID, SessionID: sid, ApprovalID: ar.ApprovalID, Approved: ok})
	return ar
}

// agentResult reads the agent tool's result of the current turn.
func agentResult(t *testing.T, p *proc) map[string]any {
	t.Helper()
	tc := nextOf[*protocol.ToolCompleted](p)
	var out map[string]any
	if err := json.Unmarshal([]byte(tc.Output), &out); err != nil {
		t.Fatalf("agent output %q: %v", tc.Output, err)
	}
	return out
}

// TestNestedSCVConversation: the first call starts a nested SCV and
// returns scv-1; the nested bash call's approval reaches the caller's
// client prefixed [scv-1 depth 1], and the answer goes back; a second
// call on scv-1 reaches the same nested session, which keeps its history;
// `scv agents ps` sees the record while it lives, and ending the parent
// ends the nested SCV and its record.
func TestNestedSCVConversation(t *testing.T) {
	t.Parallel()
	w := newNestedWorld(t, "")
	w.f.Enqueue(
		agentCall("c1", `{"agent":"scv","prompt":"remember the number 42"}`),
		fo.Script(fo.ToolCall("n1", "bash", `{"command":"echo nested-ran"}`)), // nested
		fo.Script(fo.Text("Remembered 42.\n")),                                // nested
		fo.Script(fo.Text("Delegated.")),
		agentCall("c2", `{"session":"scv-1","prompt":"which number?"}`),
		fo.Script(fo.Text("The number is 42.")), // nested
		fo.Script(fo.Text("Done.")),
	)
	p, sid := w.start(t)

	p.send(&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "delegate"})
	if ar := approveNext(p, sid, true); ar.Name != "agent" || !strings.Contains(ar.Summary, "agent scv: Launch") {
		t.Fatalf("first approval = %+v", ar)
	}
	nestedAR := approveNext(p, sid, true)
	if !strings.HasPrefix(nestedAR.Summary, "[scv-1 depth 1] bash: ") || nestedAR.Risk == "" {
		t.Fatalf("nested approval = %+v", nestedAR)
	}
	recs := waitRecords(t, w.home, 1)
	if recs[0]["agent"] != "scv" || recs[0]["conversation"] != "scv-1" {
		t.Fatalf("record = %v", recs[0])
	}
	first := agentResult(t, p)
	if first["agent"] != "scv" || first["status"] != "completed" || first["session"] != "scv-1" || first["turn"] != 1.0 ||
		!strings.Contains(first["reply"].(string), "Remembered 42.") {
		t.Fatalf("first result = %v", first)
	}
	nextOf[*protocol.TurnCompleted](p)
	// The nested bash really ran: its output reached the nested model.
	reqs := w.f.Requests()
	if len(reqs) < 3 || !strings.Contains(lastContent(reqs[2]), "nested-ran") {
		t.Fatalf("the nested model never saw the bash output: %+v", reqs)
	}
	if rec := waitRecords(t, w.home, 1)[0]; rec["idle_since_unix"] == nil {
		t.Fatalf("record between calls = %v, want idle", rec)
	}

	p.send(&protocol.TurnStart{RequestID: "t2", SessionID: sid, Prompt: "ask again"})
	if ar := approveNext(p, sid, true); !strings.Contains(ar.Summary, "continuing conversation scv-1") {
		t.Fatalf("second approval = %+v", ar)
	}
	second := agentResult(t, p)
	if second["status"] != "completed" || second["session"] != "scv-1" || second["turn"] != 2.0 || second["reply"] != "The number is 42." {
		t.Fatalf("second result = %v", second)
	}
	nextOf[*protocol.TurnCompleted](p)
	reqs = w.f.Requests()
	var history string
	for _, m := range reqs[5].Messages {
		history += m.Content + "\n"
	}
	if !strings.Contains(history, "remember the number 42") || !strings.Contains(history, "Remembered 42.") {
		t.Fatalf("the nested session lost its history; its second request held:\n%s", history)
	}
	if code := p.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	waitRecords(t, w.home, 0)
}

// lastContent is the content of a request's last message.
func lastContent(r fo.Request) string {
	if len(r.Messages) == 0 {
		return ""
	}
	return r.Messages[len(r.Messages)-1].Content
}

// waitRecords waits until the delegation records number n and returns
// them.
func waitRecords(t *testing.T, home string, n int) []map[string]any {
	t.Helper()
	dir := filepath.Join(home, "state", "delegations")
	deadline := time.Now().Add(30 * time.Second)
	for {
		ents, _ := os.ReadDir(dir)
		var recs []map[string]any
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			var m map[string]any
			if err == nil && json.Unmarshal(data, &m) == nil {
				recs = append(recs, m)
			}
		}
		if len(recs) == n {
			return recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d delegation records after 30 s, want %d: %v", len(recs), n, recs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNestedSCVEvicted: a conversation forgotten to make room
// (agent.max_conversations = 1) ends its nested SCV and its record.
func TestNestedSCVEvicted(t *testing.T) {
	t.Parallel()
	w := newNestedWorld(t, "")
	cfg := filepath.Join(w.home, "config.toml")
	if err := os.WriteFile(cfg, []byte(w.f.Config("")+"\n[agent]\nmax_conversations = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.f.Enqueue(
		agentCall("c1", `{"agent":"scv","prompt":"first"}`),
		fo.Script(fo.Text("One.")), // nested
		fo.Script(fo.Text("Delegated.")),
		agentCall("c2", `{"agent":"scv","prompt":"second"}`),
		fo.Script(fo.Text("Two.")), // nested
		fo.Script(fo.Text("Delegated again.")),
	)
	p, sid := w.start(t, "--approval-policy", "auto")
	p.send(&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "delegate"})
	nextOf[*protocol.TurnCompleted](p)
	first := int(waitIdle(t, w.home)["agent_process"].(map[string]any)["pid"].(float64))
	p.send(&protocol.TurnStart{RequestID: "t2", SessionID: sid, Prompt: "delegate again"})
	res := agentResult(t, p)
	nextOf[*protocol.TurnCompleted](p)
	if res["session"] != "scv-2" || res["status"] != "completed" {
		t.Fatalf("second result = %v", res)
	}
	waitGone(t, first)
	if recs := waitRecords(t, w.home, 1); recs[0]["conversation"] != "scv-2" {
		t.Fatalf("records = %v", recs)
	}
	if code := p.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	waitRecords(t, w.home, 0)
}

// TestNestedSCVCancel: cancelling the caller's turn cancels the nested
// turn, which settles at once, so the conversation stays usable.
func TestNestedSCVCancel(t *testing.T) {
	t.Parallel()
	w := newNestedWorld(t, "")
	w.f.Enqueue(
		agentCall("c1", `{"agent":"scv","prompt":"work forever"}`),
		fo.Script(fo.Text("working"), fo.Hang()), // nested
	)
	p, sid := w.start(t, "--approval-policy", "auto")
	p.send(&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "delegate"})
	started := nextOf[*protocol.ToolStarted](p)
	if _, err := w.f.WaitRequests(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	pid := int(waitRecords(t, w.home, 1)[0]["agent_process"].(map[string]any)["pid"].(float64))
	p.send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: started.TurnID})
	nextOf[*protocol.TurnCancelled](p)
	// The nested turn settled: its SCV still runs, idle, for the next call.
	rec := waitIdle(t, w.home)
	if syscall.Kill(pid, 0) != nil || rec["conversation"] != "scv-1" {
		t.Fatalf("after the cancel: nested alive %v, record %v", syscall.Kill(pid, 0) == nil, rec)
	}
	if code := p.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	waitRecords(t, w.home, 0)
	waitGone(t, pid)
}

func waitIdle(t *testing.T, home string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if recs := waitRecords(t, home, 1); recs[0]["idle_since_unix"] != nil {
			return recs[0]
		}
		if time.Now().After(deadline) {
			t.Fatal("the nested SCV never went idle")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNestedSCVParentKilled: kill -9 of the parent leaves nothing behind
// after one reconcile: the nested SCV (whose input ends) and its record.
func TestNestedSCVParentKilled(t *testing.T) {
	t.Parallel()
	w := newNestedWorld(t, "")
	w.f.Enqueue(
		agentCall("c1", `{"agent":"scv","prompt":"hello"}`),
		fo.Script(fo.Text("Hello from below.")), // nested
		fo.Script(fo.Text("Delegated.")),
	)
	p, sid := w.start(t, "--approval-policy", "auto")
	p.send(&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "delegate"})
	nextOf[*protocol.TurnCompleted](p)
	pid := int(waitIdle(t, w.home)["agent_process"].(map[string]any)["pid"].(float64))
	kill(t, p)

	q := startEnv(t, w.home, w.env)
	initV3(q)
	waitRecords(t, w.home, 0)
	waitGone(t, pid)
}

// TestNestedSCVDepth: the nested session declares depth 1, so
// agent.max_delegation_depth applies on its side too: with the default of
// 2 it offers its own agent tool (its own nested SCV is signed in), and
// with 1 it offers none.
func TestNestedSCVDepth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		extra     string
		wantAgent bool
	}{{"", true}, {"[agent]\nmax_delegation_depth = 1\n", false}} {
		// The key goes after the provider table, so as its own table.
		w := newNestedWorld(t, "\n"+tc.extra)
		inner := filepath.Join(w.home, "agents", "scv", "agents", "scv", "config.toml")
		if err := os.MkdirAll(filepath.Dir(inner), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(inner, []byte(w.f.Config("")), 0o600); err != nil {
			t.Fatal(err)
		}
		w.f.Enqueue(
			agentCall("c1", `{"agent":"scv","prompt":"hello"}`),
			fo.Script(fo.Text("Hi.")), // nested
			fo.Script(fo.Text("Delegated.")),
		)
		p, sid := w.start(t, "--approval-policy", "auto")
		p.send(&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "delegate"})
		nextOf[*protocol.TurnCompleted](p)
		reqs := w.f.Requests()
		if !contains(reqs[0].ToolNames(), "agent") {
			t.Fatalf("the parent at depth 0 offers no agent tool: %v", reqs[0].ToolNames())
		}
		if got := contains(reqs[1].ToolNames(), "agent"); got != tc.wantAgent {
			t.Fatalf("nested config %q: agent tool offered %v, want %v (tools %v)", tc.extra, got, tc.wantAgent, reqs[1].ToolNames())
		}
		if code := p.exit(); code != 0 {
			t.Fatalf("exit %d", code)
		}
	}
}

// TestNestedSCVDepthParentSide: a server that is itself a delegated run at
// the limit (SCV_DELEGATION_DEPTH = agent.max_delegation_depth) offers no
// agent tool, so it starts no nested SCV even with one signed in.
func TestNestedSCVDepthParentSide(t *testing.T) {
	t.Parallel()
	w := newNestedWorld(t, "")
	w.env = append(w.env, "SCV_DELEGATION_DEPTH=2")
	w.f.Enqueue(fo.Script(fo.Text("No delegation here.")))
	p, sid := w.start(t)
	p.send(&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "delegate"})
	nextOf[*protocol.TurnCompleted](p)
	if names := w.f.Requests()[0].ToolNames(); contains(names, "agent") {
		t.Fatalf("a session at depth 2 of 2 offers the agent tool: %v", names)
	}
	if code := p.exit(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
