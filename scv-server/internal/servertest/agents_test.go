package servertest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// fakeClaudeScript answers like `claude -p --output-format stream-json`:
// one result event whose reply echoes the prompt (the last argument).
const fakeClaudeScript = `#!/bin/bash
for last; do :; done
printf '{"type":"system","subtype":"init","session_id":"s-1"}\n'
printf '{"type":"result","subtype":"success","is_error":false,"result":"delegated: %s","session_id":"s-1","usage":{"input_tokens":7,"output_tokens":3}}\n' "$last"
`

// fakeClaude returns the claude adapter run as a script through /bin/bash
// (tests never execute a freshly written file).
func fakeClaude(t *testing.T) []adapters.Adapter {
	t.Helper()
	a, ok := adapters.Get("claude")
	if !ok {
		t.Fatal("no claude adapter")
	}
	script := filepath.Join(t.TempDir(), "claude.sh")
	if err := os.WriteFile(script, []byte(fakeClaudeScript), 0o600); err != nil {
		t.Fatal(err)
	}
	a.Path, a.PreArgs, a.Env = "/bin/bash", []string{script}, []string{"FAKE_*"}
	return []adapters.Adapter{a}
}

func agentOptions(t *testing.T, policy string) st.Options {
	return st.Options{Adapters: fakeClaude(t), AgentEnv: []string{"PATH=/usr/bin:/bin", "OPENAI_API_KEY=sk-must-not-leak"}, ApprovalPolicy: policy}
}

// TestAgentToolForeground: the agent tool is offered, asks with delegate
// risk and a summary naming the agent, runs the CLI and returns its
// structured result.
func TestAgentToolForeground(t *testing.T) {
	f, s := fake(t, "", agentOptions(t, ""))
	sid, _ := session(t, s, 3)
	c := s.Client
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "agent", `{"agent":"claude","prompt":"fix the flaky test"}`)), fo.Script(fo.Text("done")))
	c.Turn(sid, "delegate it")
	_, ar := st.Until[*protocol.ApprovalRequested](c)
	if ar.Risk != protocol.RiskDelegate || !strings.HasPrefix(ar.Summary, "agent claude: Launch /bin/bash") {
		t.Fatalf("approval.requested = %+v", ar)
	}
	c.Send(&protocol.ApprovalResolve{RequestID: c.ID(), SessionID: sid, ApprovalID: ar.ApprovalID, Approved: true})
	_, done := st.Until[*protocol.ToolCompleted](c)
	var res map[string]any
	if err := json.Unmarshal([]byte(done.Output), &res); err != nil {
		t.Fatalf("output %q: %v", done.Output, err)
	}
	if !done.Success || res["status"] != "completed" || res["reply"] != "delegated: fix the flaky test" || res["agent"] != "claude" {
		t.Fatalf("tool.completed = %+v", done)
	}
	st.Until[*protocol.TurnCompleted](c)
	req := f.Requests()[0]
	if !strings.Contains(req.Messages[0].Content, "Delegating work") {
		t.Fatalf("the system prompt has no delegation section:\n%s", req.Messages[0].Content)
	}
	offered := false
	for _, tl := range req.Tools {
		offered = offered || tl.Name == "agent"
	}
	if !offered {
		t.Fatalf("the agent tool is not offered: %+v", req.Tools)
	}
}

// TestAgentToolBackgroundReport: a background call returns a job at once,
// the turn ends, and the server starts a report turn naming the job.
func TestAgentToolBackgroundReport(t *testing.T) {
	f, s := fake(t, "", agentOptions(t, "auto"))
	sid, _ := session(t, s, 3)
	c := s.Client
	f.Enqueue(
		fo.Script(fo.ToolCall("call_1", "agent", `{"agent":"claude","prompt":"land the fix","background":true}`)),
		fo.Script(fo.Text("Started job-1.")),
		fo.Script(fo.Text("The job finished: the fix landed.")),
	)
	c.Turn(sid, "delegate it in the background")
	_, done := st.Until[*protocol.ToolCompleted](c)
	if len(done.Jobs) != 1 || done.Jobs[0] != "job-1" || !strings.Contains(done.Output, `"background":true`) {
		t.Fatalf("tool.completed = %+v", done)
	}
	st.Until[*protocol.TurnCompleted](c)
	started := st.Expect[*protocol.TurnStarted](c)
	if started.Origin == nil || started.Origin.Kind != protocol.OriginBackground || strings.Join(started.Origin.Jobs, ",") != "job-1" {
		t.Fatalf("report turn.started = %+v", started)
	}
	_, end := st.Until[*protocol.TurnCompleted](c)
	if end.Origin == nil || end.Origin.Kind != protocol.OriginBackground {
		t.Fatalf("report turn.completed = %+v", end)
	}
	msgs := f.Requests()[2].Messages
	report := msgs[len(msgs)-1].Content
	if !strings.HasPrefix(report, "[SCV background report]") || !strings.Contains(report, "job-1") || !strings.Contains(report, "delegated: land the fix") {
		t.Fatalf("report prompt = %q", report)
	}
}

// TestSessionEndCancelsBackgroundJobs: closing the connection ends the
// session, which stops its running jobs' processes and removes their
// delegation records.
func TestSessionEndCancelsBackgroundJobs(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	script := filepath.Join(dir, "slow.sh")
	if err := os.WriteFile(script, []byte("echo $$ > "+pidFile+".tmp && mv "+pidFile+".tmp "+pidFile+"\nexec sleep 600\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, _ := adapters.Get("claude")
	a.Path, a.PreArgs, a.Env = "/bin/bash", []string{script}, []string{"FAKE_*"}
	f, s := fake(t, "", st.Options{Adapters: []adapters.Adapter{a}, AgentEnv: []string{"PATH=/usr/bin:/bin"}, ApprovalPolicy: "auto"})
	sid, _ := session(t, s, 3)
	c := s.Client
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "agent", `{"agent":"claude","prompt":"work forever","background":true}`)), fo.Script(fo.Text("Started.")))
	c.Turn(sid, "go")
	st.Until[*protocol.TurnCompleted](c)
	var pid int
	deadline := time.Now().Add(st.Wait)
	for {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	records := filepath.Join(s.Home, "state", "delegations")
	if ents, _ := os.ReadDir(records); len(ents) != 1 {
		t.Fatalf("%d delegation records while the job runs, want 1", len(ents))
	}
	s.CloseInput()
	if err := s.Done(); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("the job's process %d survived the session", pid)
	}
	if ents, _ := os.ReadDir(records); len(ents) != 0 {
		t.Fatalf("%d delegation records left after the session ended", len(ents))
	}
}

// TestDelegationDepthFromTheEnvironment: a server that itself runs
// delegated (SCV_DELEGATION_DEPTH set) counts its sessions at least that
// deep: at the limit it offers no agent tool, below it the child gets one
// more.
func TestDelegationDepthFromTheEnvironment(t *testing.T) {
	script := filepath.Join(t.TempDir(), "claude.sh")
	body := "#!/bin/bash\nprintf '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"depth %s\",\"session_id\":\"s-1\"}\\n' \"$SCV_DELEGATION_DEPTH\"\n"
	if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	a, _ := adapters.Get("claude")
	a.Path, a.PreArgs, a.Env = "/bin/bash", []string{script}, []string{"FAKE_*"}
	opts := func(depth string) st.Options {
		return st.Options{Adapters: []adapters.Adapter{a}, AgentEnv: []string{"PATH=/usr/bin:/bin"}, ApprovalPolicy: "auto",
			Env: map[string]string{"SCV_DELEGATION_DEPTH": depth}}
	}

	f, s := fake(t, "", opts("2"))
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.Text("no agents here")))
	s.Client.Turn(sid, "hi")
	st.Until[*protocol.TurnCompleted](s.Client)
	for _, tl := range f.Requests()[0].Tools {
		if tl.Name == "agent" {
			t.Fatal("a session at the depth limit offers the agent tool")
		}
	}

	f, s = fake(t, "", opts("1"))
	sid, _ = session(t, s, 3)
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "agent", `{"agent":"claude","prompt":"how deep?"}`)), fo.Script(fo.Text("done")))
	s.Client.Turn(sid, "delegate")
	_, done := st.Until[*protocol.ToolCompleted](s.Client)
	if !strings.Contains(done.Output, `"reply":"depth 2"`) {
		t.Fatalf("tool.completed = %+v, want the child at depth 2", done)
	}
	st.Until[*protocol.TurnCompleted](s.Client)
}
