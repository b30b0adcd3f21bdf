package nested

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/delegate/records"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit"
	"github.com/scv-cli/scv/shared/testkit/bins"
)

// handles numbers the calls of every test.
var handles atomic.Int64

// serverBin is the real scv-server the nested SCV runs as (with
// "--stdio", as `scv server --stdio` execs it).
var serverBin string

func TestMain(m *testing.M) {
	restore := testkit.IsolateHome()
	var err error
	if serverBin, err = bins.Path("scv-server"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { bins.Cleanup(); restore(); os.Exit(code) }))
}

// world is an SCV home whose nested SCV is signed in with the fake model,
// and a Runner of one session over it.
type world struct {
	f    *fo.Server
	home string
	dir  string
	r    *Runner
	n    int
}

func newWorld(t testing.TB, nestedExtra string) *world {
	t.Helper()
	w := &world{f: fo.Start(t), home: t.TempDir(), dir: t.TempDir()}
	cfg := filepath.Join(w.home, "agents", "scv", "config.toml")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(w.f.Config("")+nestedExtra), 0o600); err != nil {
		t.Fatal(err)
	}
	w.r = New(Options{Home: w.home, Path: serverBin, Args: []string{"--stdio"}, BaseEnv: []string{"PATH=/usr/bin:/bin"}})
	t.Cleanup(w.r.Close)
	return w
}

// call is the next call of conversation scv-1 (a new one when resume is
// empty). Its handle, the process tag, is unique across the parallel
// tests, whose sweeps would otherwise stop each other's processes.
func (w *world) call(prompt, resume string) delegate.Call {
	w.n++
	return delegate.Call{Agent: delegate.SCV, Prompt: prompt, Dir: w.dir, Workspace: w.dir, Timeout: time.Minute,
		Handle: fmt.Sprintf("scv-%d", handles.Add(1)), SessionID: "parent", Conversation: "scv-1", Turn: w.n, ResumeCLISession: resume}
}

func TestPlanAndOffered(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	if !w.r.Offered() {
		t.Fatal("a signed-in nested SCV with its executable is not offered")
	}
	l, err := w.r.Plan(w.call("x", ""))
	if err != nil || l.Executable != serverBin || strings.Join(l.Args, " ") != "--stdio" || l.Dir != w.dir {
		t.Fatalf("Plan = %+v, %v", l, err)
	}
	c := w.call("x", "")
	c.Effort = "high"
	if _, err := w.r.Plan(c); err == nil || !strings.Contains(err.Error(), "does not take effort") {
		t.Fatalf("Plan with effort: %v", err)
	}
	signedOut := New(Options{Home: t.TempDir(), Path: serverBin})
	if signedOut.Offered() {
		t.Fatal("a nested SCV without a provider in its private home is offered")
	}
	missing := New(Options{Home: w.home, Env: paths.MapEnv(map[string]string{"PATH": t.TempDir(), "HOME": t.TempDir()})})
	if _, err := missing.Plan(w.call("x", "")); err == nil || !strings.Contains(err.Error(), "agent unavailable") {
		t.Fatalf("Plan without scv: %v", err)
	}
}

// TestTwoCallsKeepHistory: the second call of a conversation reaches the
// same nested session (same process, same history); progress lines carry
// the nested assistant's completed lines; the record is idle between
// calls and gone once the conversation is forgotten.
func TestTwoCallsKeepHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	w.f.Enqueue(fo.Script(fo.Text("line one\nline ", "two\n"), fo.Usage(10, 5)), fo.Script(fo.Text("second")))
	var mu sync.Mutex
	var lines []string
	progress := func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }
	res := w.r.Run(t.Context(), w.call("first prompt", ""), progress)
	if res.Status != delegate.StatusCompleted || res.Reply != "line one\nline two" || res.CLISession == "" || res.Usage == nil {
		t.Fatalf("first result = %+v", res)
	}
	mu.Lock()
	got := strings.Join(lines, "|")
	mu.Unlock()
	if got != "line one|line two" {
		t.Fatalf("progress = %q", got)
	}
	recs, _ := records.List(w.home)
	if len(recs) != 1 || recs[0].State() != records.StateIdle || recs[0].Depth != 1 || recs[0].Agent != "scv" {
		t.Fatalf("records between calls = %+v", recs)
	}
	pid := recs[0].AgentProcess.PID
	res2 := w.r.Run(t.Context(), w.call("second prompt", res.CLISession), nil)
	if res2.Status != delegate.StatusCompleted || res2.Reply != "second" || res2.CLISession != res.CLISession {
		t.Fatalf("second result = %+v", res2)
	}
	reqs := w.f.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "first prompt") || !strings.Contains(string(reqs[1].Body), "line two") {
		t.Fatalf("the second request lost the history: %s", reqs[len(reqs)-1].Body)
	}
	if recs, _ := records.List(w.home); len(recs) != 1 || recs[0].AgentProcess.PID != pid {
		t.Fatalf("the second call did not reuse the nested SCV: %+v", recs)
	}
	w.r.Forget(res.CLISession)
	if recs, _ := records.List(w.home); len(recs) != 0 {
		t.Fatalf("records after Forget = %+v", recs)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Fatalf("nested SCV %d still runs after Forget", pid)
	}
	res3 := w.r.Run(t.Context(), w.call("third", res.CLISession), nil)
	if res3.Status != delegate.StatusFailed || !strings.Contains(res3.Error, "its server exited") || res3.Kind != delegate.ErrorUnavailable {
		t.Fatalf("a call on a forgotten conversation = %+v", res3)
	}
}

// TestApprovalRelayed: a nested approval request goes through Approve
// with the summary prefixed [scv-1 depth 1] and the nested tool's name;
// a denial reaches the nested SCV; no Approve denies too.
func TestApprovalRelayed(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		w := newWorld(t, "")
		marker := filepath.Join(w.dir, "ran")
		w.f.Enqueue(fo.Script(fo.ToolCall("b1", "bash", `{"command":"touch `+marker+`"}`)), fo.Script(fo.Text("ok")))
		c := w.call("run it", "")
		var asked []string
		var risks []protocol.Risk
		c.Approve = func(_ context.Context, risk protocol.Risk, summary string) bool {
			asked, risks = append(asked, summary), append(risks, risk)
			return approve
		}
		res := w.r.Run(t.Context(), c, nil)
		if res.Status != delegate.StatusCompleted {
			t.Fatalf("result = %+v", res)
		}
		if len(asked) != 1 || !strings.HasPrefix(asked[0], "[scv-1 depth 1] bash: ") || risks[0] == "" {
			t.Fatalf("relayed %q (risks %v)", asked, risks)
		}
		_, err := os.Stat(marker)
		if ran := err == nil; ran != approve {
			t.Fatalf("approve %v: the nested bash ran %v", approve, ran)
		}
	}
}

// TestApprovalWithdrawn: a relayed question still open when the call
// times out is withdrawn (its context ends), so nothing is left asking the
// user, and the call returns.
func TestApprovalWithdrawn(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	w.f.Enqueue(fo.Script(fo.ToolCall("b1", "bash", `{"command":"true"}`)))
	c := w.call("run it", "")
	c.Timeout = time.Second
	withdrawn := make(chan struct{})
	c.Approve = func(ctx context.Context, _ protocol.Risk, _ string) bool {
		<-ctx.Done()
		close(withdrawn)
		return false
	}
	res := w.r.Run(t.Context(), c, nil)
	if res.Status != delegate.StatusTimeout {
		t.Fatalf("result = %+v", res)
	}
	select {
	case <-withdrawn:
	default:
		t.Fatal("the call returned with its relayed question still open")
	}
}

// TestExitMidTurn: a nested SCV that exits mid-turn fails the call with
// its stderr tail, and the conversation ends (its record too).
func TestExitMidTurn(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	w.f.Enqueue(fo.Script(fo.Text("thinking"), fo.Hang()))
	c := w.call("hang", "")
	done := make(chan delegate.Result, 1)
	go func() { done <- w.r.Run(context.Background(), c, nil) }()
	if _, err := w.f.WaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	recs, _ := records.List(w.home)
	if len(recs) != 1 || recs[0].State() != records.StateRunning {
		t.Fatalf("records during the turn = %+v", recs)
	}
	if err := syscall.Kill(recs[0].AgentProcess.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Status != delegate.StatusFailed || !strings.Contains(res.Error, "was killed by signal SIGKILL during the turn") ||
		res.Kind != delegate.ErrorUnavailable || res.CLISession != "" {
		t.Fatalf("result = %+v", res)
	}
	if recs, _ := records.List(w.home); len(recs) != 0 {
		t.Fatalf("records after the exit = %+v", recs)
	}
}

// agentsKill does what `scv agents kill HANDLE` does to a run whose owner
// lives: mark the record, then stop the run's processes.
func agentsKill(t *testing.T, home string) {
	t.Helper()
	recs, err := records.List(home)
	if err != nil || len(recs) != 1 {
		t.Fatalf("records = %+v, %v", recs, err)
	}
	rec := recs[0]
	rec.KillRequestedUnix = time.Now().Unix()
	if err := records.Write(home, rec); err != nil {
		t.Fatal(err)
	}
	records.StopRun(rec, StopGrace)
}

// waitNoRecords waits for the watcher to remove the records of home.
func waitNoRecords(t *testing.T, home string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for recs, _ := records.List(home); len(recs) != 0; recs, _ = records.List(home) {
		if time.Now().After(deadline) {
			t.Fatalf("the killed nested SCV's record stayed: %+v", recs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestAgentsKill: `scv agents kill` of a nested SCV mid-turn makes the
// call cancelled; between turns it is collected at once (its record
// goes), and the next call of its conversation says its server exited.
func TestAgentsKill(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	w.f.Enqueue(fo.Script(fo.Text("ok")), fo.Script(fo.Text("busy"), fo.Hang()))
	first := w.r.Run(t.Context(), w.call("one", ""), nil)
	if first.Status != delegate.StatusCompleted {
		t.Fatalf("first = %+v", first)
	}
	done := make(chan delegate.Result, 1)
	go func() { done <- w.r.Run(context.Background(), w.call("two", first.CLISession), nil) }()
	if _, err := w.f.WaitRequests(t.Context(), 2); err != nil {
		t.Fatal(err)
	}
	agentsKill(t, w.home)
	if res := <-done; res.Status != delegate.StatusCancelled || !strings.Contains(res.Error, "scv agents kill") {
		t.Fatalf("killed mid-turn = %+v", res)
	}
	waitNoRecords(t, w.home)

	w2 := newWorld(t, "")
	w2.f.Enqueue(fo.Script(fo.Text("ok")))
	idle := w2.r.Run(t.Context(), w2.call("one", ""), nil)
	agentsKill(t, w2.home)
	waitNoRecords(t, w2.home)
	if res := w2.r.Run(t.Context(), w2.call("two", idle.CLISession), nil); !strings.Contains(res.Error, "its server exited") {
		t.Fatalf("a call after the kill = %+v", res)
	}
}

// TestCancelAndTimeout: a cancelled call and a timed-out one send
// turn.cancel; the nested turn settles within 2 s, so the conversation
// stays usable.
func TestCancelAndTimeout(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "")
	w.f.Enqueue(fo.Script(fo.Text("slow"), fo.Hang()), fo.Script(fo.Text("slow"), fo.Hang()), fo.Script(fo.Text("back")))
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		_, _ = w.f.WaitRequests(t.Context(), 1)
		cancel()
	}()
	res := w.r.Run(ctx, w.call("one", ""), nil)
	if res.Status != delegate.StatusCancelled || res.CLISession == "" {
		t.Fatalf("cancelled result = %+v", res)
	}
	c := w.call("two", res.CLISession)
	c.Timeout = time.Second
	res2 := w.r.Run(t.Context(), c, nil)
	if res2.Status != delegate.StatusTimeout || res2.CLISession == "" || !strings.Contains(res2.Error, "call it again with session scv-1") {
		t.Fatalf("timed-out result = %+v", res2)
	}
	res3 := w.r.Run(t.Context(), w.call("three", res.CLISession), nil)
	if res3.Status != delegate.StatusCompleted || res3.Reply != "back" {
		t.Fatalf("the conversation did not survive the cancel and the timeout: %+v", res3)
	}
}

// TestBackgroundJobsCounted: between calls a job of the nested SCV counts
// from the call that started it until its report turn ends (state
// background, then idle), whatever its tool's name, and the report turn's
// approval request is denied since no call carries it to a person.
func TestBackgroundJobsCounted(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	sent, peer := net.Pipe()
	defer peer.Close()
	r := New(Options{Home: home})
	l := &live{r: r, handle: "scv-abc123", session: "nested", conn: client.NewConn(sent, 0),
		jobs: map[string]bool{}, reporting: map[string][]string{}}
	self, _ := records.Self()
	l.rec = records.Record{Handle: l.handle, Agent: "scv", Owner: self, AgentProcess: self, IdleSinceUnix: time.Now().Unix()}
	state := func() string {
		rec, err := records.Read(home, l.handle)
		if err != nil {
			t.Fatal(err)
		}
		return rec.State()
	}
	turn := func(id string) protocol.TurnHeader { return protocol.TurnHeader{SessionID: "nested", TurnID: id} }
	l.dispatch(&protocol.ToolCompleted{TurnHeader: turn("t1"), Name: "agent_codex", Success: true, Jobs: []string{"job-1"}})
	if got := state(); got != records.StateBackground || l.jobCount() != 1 {
		t.Fatalf("after the job started: state %s, %d jobs", got, l.jobCount())
	}
	l.dispatch(&protocol.TurnStarted{TurnHeader: turn("t2"), Origin: &protocol.Origin{Kind: protocol.OriginBackground, Jobs: []string{"job-1"}}})
	answer := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		n, _ := peer.Read(buf)
		answer <- string(buf[:n])
	}()
	l.dispatch(&protocol.ApprovalRequested{TurnHeader: turn("t2"), ApprovalID: "ap-1", Name: "bash", Risk: protocol.RiskProcess, Summary: "rm -rf"})
	if got := <-answer; !strings.Contains(got, `"type":"approval.resolve"`) || !strings.Contains(got, `"approval_id":"ap-1"`) || !strings.Contains(got, `"approved":false`) {
		t.Fatalf("the report turn's approval was answered with %s", got)
	}
	if l.jobCount() != 1 {
		t.Fatal("the job stopped counting before its report turn ended")
	}
	l.dispatch(&protocol.TurnCompleted{TurnHeader: turn("t2"), Origin: &protocol.Origin{Kind: protocol.OriginBackground, Jobs: []string{"job-1"}}})
	if got := state(); got != records.StateIdle || l.jobCount() != 0 {
		t.Fatalf("after the report turn: state %s, %d jobs", got, l.jobCount())
	}
	// A job a later call settled (agent_wait) stops counting there.
	l.dispatch(&protocol.ToolCompleted{TurnHeader: turn("t3"), Name: "agent", Jobs: []string{"job-2"}})
	l.dispatch(&protocol.ToolCompleted{TurnHeader: turn("t4"), Name: "agent_wait", SettledJobs: []string{"job-2"}})
	if l.jobCount() != 0 || state() != records.StateIdle {
		t.Fatalf("a settled job still counts: %d", l.jobCount())
	}
	l.mu.Lock()
	if l.idle != nil {
		l.idle.Stop()
	}
	l.mu.Unlock()
}

// BenchmarkFirstCall is a nested SCV's first call: start, handshake and
// one turn against the fake model.
func BenchmarkFirstCall(b *testing.B) {
	w := newWorld(b, "")
	for b.Loop() {
		w.f.Enqueue(fo.Script(fo.Text("ok")))
		res := w.r.Run(b.Context(), w.call("hi", ""), nil)
		if res.Status != delegate.StatusCompleted {
			b.Fatalf("result = %+v", res)
		}
		w.r.Forget(res.CLISession)
	}
}

// BenchmarkNextCall is a further call of a live conversation.
func BenchmarkNextCall(b *testing.B) {
	w := newWorld(b, "")
	w.f.Enqueue(fo.Script(fo.Text("ok")))
	first := w.r.Run(b.Context(), w.call("hi", ""), nil)
	if first.Status != delegate.StatusCompleted {
		b.Fatalf("result = %+v", first)
	}
	for b.Loop() {
		w.f.Enqueue(fo.Script(fo.Text("ok")))
		if res := w.r.Run(b.Context(), w.call("again", first.CLISession), nil); res.Status != delegate.StatusCompleted {
			b.Fatalf("result = %+v", res)
		}
	}
}
