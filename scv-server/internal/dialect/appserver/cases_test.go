package appserver_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/dialect/appserver"
	"github.com/scv-cli/scv/scv-server/internal/server"
	"github.com/scv-cli/scv/scv-server/internal/session"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/paths"
)

func rpcCode(t *testing.T, err error) int {
	t.Helper()
	re, ok := err.(*appserver.RPCError)
	if !ok {
		t.Fatalf("error %v (%T) is no JSON-RPC error", err, err)
	}
	return re.Code
}

// TestProtocolErrors: malformed JSON is -32700 with id null and the
// server keeps reading; a request before initialize, an unknown method
// and bad params are refused with their codes.
func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	err := h.c.Call(ctx(t), "thread/list", map[string]any{}, nil)
	if rpcCode(t, err) != appserver.CodeNotInitialized || !strings.Contains(err.Error(), "initialize") {
		t.Fatalf("before initialize: %v", err)
	}
	h.init()
	if err := h.c.Send([]byte(`{"id":7,"method":`)); err != nil {
		t.Fatal(err)
	}
	m, err := h.c.Next(ctx(t))
	if err != nil || m.Error == nil || m.Error.Code != appserver.CodeParseError || string(m.ID) != "null" {
		t.Fatalf("malformed JSON answered with %+v (%v)", m, err)
	}
	err = h.c.Call(ctx(t), "thread/explode", map[string]any{}, nil)
	if rpcCode(t, err) != appserver.CodeMethodNotFound {
		t.Fatalf("unknown method: %v", err)
	}
	err = h.c.Call(ctx(t), "turn/start", map[string]any{"threadId": 5}, nil)
	if rpcCode(t, err) != appserver.CodeInvalidParams {
		t.Fatalf("bad params: %v", err)
	}
	err = h.c.Call(ctx(t), "initialize", map[string]any{}, nil)
	if rpcCode(t, err) != appserver.CodeInvalidRequest {
		t.Fatalf("second initialize: %v", err)
	}
	// Still reading: a good request is answered.
	var models appserver.ModelListResult
	h.call("model/list", map[string]any{}, &models)
	if len(models.Models) != 1 || models.Models[0].Provider != "fake" {
		t.Fatalf("model/list = %+v", models)
	}
}

// TestDeniedBeforeStart: a call the policy denies yields only a failed
// item/completed with executionStarted false, durationMs null and
// tool_not_allowed.
func TestDeniedBeforeStart(t *testing.T) {
	t.Parallel()
	h := start(t, options{policy: "never"})
	h.f.Enqueue(fo.Script(fo.ToolCall("c1", "bash", `{"command":"touch x"}`)), fo.Script(fo.Text("ok")))
	h.init()
	tid := h.thread()
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("go")}, nil)
	msgs := h.until("turn/completed")
	var tool []appserver.Item
	for _, m := range msgs {
		if m.Method == "item/started" || m.Method == "item/completed" {
			var it appserver.Item
			_ = json.Unmarshal(m.Params, &it)
			if it.Type == appserver.ItemToolCall {
				if m.Method == "item/started" {
					t.Fatalf("a denied call has item/started: %s", m.Params)
				}
				tool = append(tool, it)
			}
		}
	}
	if len(tool) != 1 || tool[0].Status != appserver.ItemFailed {
		t.Fatalf("tool items %+v", tool)
	}
	p := string(tool[0].Payload)
	for _, want := range []string{`"executionStarted":false`, `"durationMs":null`, `"errorCode":"tool_not_allowed"`} {
		if !strings.Contains(p, want) {
			t.Errorf("payload %s lacks %s", p, want)
		}
	}
	if strings.Contains(p, "toolMetadata") || strings.Contains(p, "directive") {
		t.Errorf("payload %s invents fields", p)
	}
}

// TestTurnGuards: steer, followUp and interrupt check expectedTurnId;
// steer reaches the running turn, followUp runs after it, interrupt ends
// a turn as interrupted.
func TestTurnGuards(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.init()
	tid := h.thread()
	steer := appserver.TurnSteerParams{ThreadID: tid, ExpectedTurnID: "x", Input: text("more")}
	if err := h.c.Call(ctx(t), "turn/steer", steer, nil); rpcCode(t, err) != appserver.CodeNoActiveTurn {
		t.Fatalf("steer with no turn: %v", err)
	}
	// A turn whose model reply waits, so it is running for the checks.
	h.f.Enqueue(
		fo.Script(fo.Delay(300*time.Millisecond), fo.Text("first")),
		fo.Script(fo.Text("after steer")),
		fo.Script(fo.Text("follow-up done")),
	)
	var ts appserver.TurnStartResult
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("start")}, &ts)
	if err := h.c.Call(ctx(t), "turn/steer", steer, nil); rpcCode(t, err) != appserver.CodeStaleTurn {
		t.Fatalf("steer with a stale id: %v", err)
	}
	if err := h.c.Call(ctx(t), "turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("again")}, nil); rpcCode(t, err) != appserver.CodeInvalidParams {
		t.Fatalf("turn/start while running: %v", err)
	}
	steer.ExpectedTurnID = ts.TurnID
	var q appserver.TurnQueuedResult
	h.call("turn/steer", steer, &q)
	if !q.Queued || q.TurnID != ts.TurnID {
		t.Fatalf("turn/steer = %+v", q)
	}
	h.call("turn/followUp", appserver.TurnSteerParams{ThreadID: tid, ExpectedTurnID: ts.TurnID, Input: text("then this")}, &q)
	msgs := h.until("turn/completed")
	var done appserver.TurnCompletedParams
	_ = json.Unmarshal(msgs[len(msgs)-1].Params, &done)
	if done.TurnID != ts.TurnID || done.FinalOutput != "after steer" {
		t.Fatalf("the steered turn ended with %+v", done)
	}
	// The model read the steered input in the same turn.
	reqs := h.f.Requests()
	if len(reqs) < 2 || !strings.Contains(string(reqs[1].Body), "more") {
		t.Fatalf("the second request did not carry the steered input")
	}
	msgs = h.until("turn/completed")
	_ = json.Unmarshal(msgs[len(msgs)-1].Params, &done)
	if done.TurnID == ts.TurnID || done.FinalOutput != "follow-up done" || !strings.Contains(methods(msgs), "turn/started") {
		t.Fatalf("the follow-up ended with %+v (%s)", done, methods(msgs))
	}

	// Interrupt.
	h.f.Enqueue(fo.Script(fo.Hang()))
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("hang")}, &ts)
	var ir appserver.TurnInterruptResult
	h.call("turn/interrupt", appserver.TurnInterruptParams{ThreadID: tid, ExpectedTurnID: ts.TurnID}, &ir)
	msgs = h.until("turn/completed")
	_ = json.Unmarshal(msgs[len(msgs)-1].Params, &done)
	if done.Status != appserver.TurnInterrupted {
		t.Fatalf("interrupted turn ended with %+v", done)
	}
}

// TestResolutionError: a turn whose configuration does not resolve gets
// -32603 and no turn is created; fixing the configuration applies to the
// next turn without a restart.
func TestResolutionError(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.init()
	var th appserver.Thread
	h.call("thread/start", appserver.ThreadStartParams{AgentKey: "no-such-agent", Cwd: h.ws}, &th)
	err := h.c.Call(ctx(t), "turn/start", appserver.TurnStartParams{ThreadID: th.ThreadID, Input: text("hi")}, nil)
	if rpcCode(t, err) != appserver.CodeInternal || !strings.Contains(err.Error(), "agentKey") {
		t.Fatalf("unknown agentKey: %v", err)
	}
	h.noTurns(th.ThreadID)
	// A broken project file refuses the next turn; repairing it lets the
	// turn after run, with no restart.
	tid := h.thread()
	cfgDir := filepath.Join(h.ws, ".scv")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[tools\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = h.c.Call(ctx(t), "turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("hi")}, nil)
	if rpcCode(t, err) != appserver.CodeInternal {
		t.Fatalf("broken configuration: %v", err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[tools]\napproval_policy = \"never\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.turn(tid, "fine")
}

// TestUnsubscribeCloses: the last subscriber's thread/unsubscribe closes
// the thread with thread/closed and thread/status/changed.
func TestUnsubscribeCloses(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.init()
	tid := h.thread()
	h.f.Enqueue(fo.Script(fo.Text("stored")))
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("hi")}, nil)
	h.until("turn/completed")
	var r appserver.ThreadUnsubscribeResult
	h.call("thread/unsubscribe", map[string]any{"threadId": tid}, &r)
	if r.Subscribed || !r.Closed {
		t.Fatalf("thread/unsubscribe = %+v", r)
	}
	h.until("thread/status/changed") // the turn's idle
	msgs := h.until("thread/status/changed")
	if got := methods(msgs); !strings.HasSuffix(got, "thread/closed thread/status/changed") {
		t.Fatalf("after unsubscribe: %s", got)
	}
	// Resume reopens the stored session.
	var read appserver.ThreadReadResult
	h.call("thread/resume", appserver.ResumeParams{ThreadID: tid}, &read)
	if read.Thread.ThreadID != tid || read.Thread.Status != appserver.ThreadIdle || len(read.Turns) != 1 || len(read.Items) != 2 {
		t.Fatalf("thread/resume = %+v", read)
	}
}

// TestEndOfInputCancels: the end of input cancels the running turn, its
// turn/completed goes out, and the server returns nil.
func TestEndOfInputCancels(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.init()
	tid := h.thread()
	h.f.Enqueue(fo.Script(fo.Hang()))
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("hang")}, nil)
	h.until("turn/started")
	h.stop() // fails the test when Serve returns an error or hangs
	msgs, _ := h.c.Until(ctx(t), func(m appserver.Message) bool { return m.Method == "turn/completed" })
	last := msgs[len(msgs)-1]
	var done appserver.TurnCompletedParams
	_ = json.Unmarshal(last.Params, &done)
	if last.Method != "turn/completed" || done.Status != appserver.TurnInterrupted {
		t.Fatalf("after the end of input: %s %+v", methods(msgs), done)
	}
}

// TestApprovalTimeoutAndResolve: an unanswered request times out as
// "timeout" (a denial); approval/resolve answers by request id.
func TestApprovalTimeoutAndResolve(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.rt.Threads().SetApprovalTimeout(200 * time.Millisecond)
	h.init()
	tid := h.thread()
	h.f.Enqueue(fo.Script(fo.ToolCall("c1", "bash", `{"command":"touch nope"}`)), fo.Script(fo.Text("ok")))
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("go")}, nil)
	msgs := h.until("turn/completed")
	joined := ""
	for _, m := range msgs {
		joined += string(m.Params)
	}
	if !strings.Contains(joined, `"decision":"timeout"`) || !strings.Contains(joined, `"errorCode":"approval_denied"`) {
		t.Fatalf("timeout: %s", joined)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "nope")); err == nil {
		t.Fatal("a timed-out call ran")
	}
	h.f.Enqueue(fo.Script(fo.ToolCall("c2", "bash", `{"command":"touch yes"}`)), fo.Script(fo.Text("ok")))
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("go")}, nil)
	msgs = h.until("approval/requested")
	var ask appserver.ApprovalRequestParams
	_ = json.Unmarshal(msgs[len(msgs)-1].Params, &ask)
	h.rt.Threads().SetApprovalTimeout(0)
	var res appserver.ApprovalResolveResult
	h.call("approval/resolve", appserver.ApprovalResolveParams{ThreadID: tid, RequestID: ask.RequestID, Decision: "allow"}, &res)
	h.until("turn/completed")
	if _, err := os.Stat(filepath.Join(h.ws, "yes")); err != nil {
		t.Fatal("the approved call did not run")
	}
}

// TestOptOut: optOutNotificationMethods is honoured.
func TestOptOut(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.call("initialize", map[string]any{"capabilities": map[string]any{"optOutNotificationMethods": []string{"item/agentMessage/delta", "thread/status/changed"}}}, nil)
	tid := h.thread()
	h.f.Enqueue(fo.Script(fo.Text("a", "b", "c")))
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("go")}, nil)
	msgs := h.until("turn/completed")
	if got := methods(msgs); strings.Contains(got, "delta") || strings.Contains(got, "status/changed") {
		t.Fatalf("opted-out notifications were sent: %s", got)
	}
}

// TestSchemaExport: schema/export returns both bundles.
func TestSchemaExport(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.init()
	var r appserver.SchemaExportResult
	h.call("schema/export", map[string]any{}, &r)
	if _, ok := r.JSONSchema[appserver.BundleFile]; !ok || !strings.Contains(r.TypeScript, "export interface TurnStartParams") {
		t.Fatalf("schema/export: %d JSON files, TypeScript %d bytes", len(r.JSONSchema), len(r.TypeScript))
	}
}

// TestSessionsBothWays: a thread is an SCV session, so a TUI's session
// (started on the runtime as session.start does) is resumed as a thread,
// and a thread is resumed by the runtime as the TUI's session.resume does.
func TestSessionsBothWays(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.init()
	// The TUI's way: a session and a turn on the runtime itself.
	s, err := h.rt.Manager.Start(session.StartOptions{Cwd: h.ws, ProtocolVersion: 4})
	if err != nil {
		t.Fatal(err)
	}
	h.f.Enqueue(fo.Script(fo.Text("from the TUI")))
	if err := s.StartTurn(ctx(t), "r1", "typed in the TUI", "tui"); err != nil {
		t.Fatal(err)
	}
	for s.Active() || len(s.History()) < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.rt.Manager.CloseSession(ctx(t), s.ID()); err != nil {
		t.Fatal(err)
	}
	var read appserver.ThreadReadResult
	h.call("thread/resume", appserver.ResumeParams{ThreadID: s.ID(), Cwd: h.ws}, &read)
	if len(read.Items) != 2 || !strings.Contains(string(read.Items[0].Payload), "typed in the TUI") || !strings.Contains(string(read.Items[1].Payload), "from the TUI") {
		t.Fatalf("the TUI's session as a thread: %+v", read.Items)
	}
	// The other way: a thread's session resumed by a second runtime.
	tid := h.thread()
	h.f.Enqueue(fo.Script(fo.Text("from the app")))
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("typed in the app")}, nil)
	h.until("turn/completed")
	h.stop()
	h2 := start(t, options{home: h.home, f: h.f})
	s2, err := h2.rt.Manager.Start(session.StartOptions{Cwd: h.ws, ProtocolVersion: 4, Resume: tid})
	if err != nil {
		t.Fatalf("the TUI cannot resume the thread: %v", err)
	}
	hist := s2.History()
	if len(hist) != 2 || hist[0].Content != "typed in the app" || hist[1].Content != "from the app" {
		t.Fatalf("the thread's history in the TUI: %+v", hist)
	}
}

// TestOverloaded: a client that does not read gets -32001 on new requests
// while the server holds a full queue for it, and the server does not
// grow its queue past the bound.
func TestOverloaded(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(fo.Config(f.URL(), "")), 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := server.New(server.Options{Env: paths.MapEnv(map[string]string{"SCV_HOME": home}), Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	opts := appserver.Options{Host: nil, Threads: rt.Threads(), CloseManager: true, QueueLimit: 4, Grace: 2 * time.Second}
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- appserver.Serve(context.Background(), rt.Manager, struct {
			io.Reader
			io.Writer
		}{ar, aw}, opts)
		_ = aw.Close()
	}()
	write := func(s string) {
		if _, err := cw.Write([]byte(s + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"id":0,"method":"initialize"}`)
	// Nothing is read: 4 answers fill the queue (the writer holds one more
	// in a blocked write), then requests are refused as overloaded.
	for i := 1; i <= 12; i++ {
		write(`{"id":` + strconv.Itoa(i) + `,"method":"model/list"}`)
	}
	c := appserver.NewClient(cr, io.Discard)
	overloaded := 0
	for i := 0; i <= 12; i++ {
		m, err := c.Next(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if m.Error != nil && m.Error.Code == appserver.CodeOverloaded && strings.Contains(m.Error.Message, "server overloaded") {
			overloaded++
		}
	}
	if overloaded == 0 {
		t.Fatal("no request was refused as overloaded")
	}
	_ = cw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestReasoningAndReadTools: the model's reasoning summary becomes a
// reasoning item, completed when the call it led to starts; a read-only
// call runs without asking and its item carries toolMetadata for reads.
func TestReasoningAndReadTools(t *testing.T) {
	t.Parallel()
	h := start(t, options{extra: "wire_api = \"responses\"\n"})
	if err := os.WriteFile(filepath.Join(h.ws, "notes.txt"), []byte("blue\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.f.Enqueue(
		fo.Script(fo.Reasoning("Read the notes first.", "ENC-1"), fo.ToolCall("call_1", "read", `{"path":"notes.txt"}`)),
		fo.Script(fo.Text("They say blue.")),
	)
	h.init()
	tid := h.thread()
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("notes?")}, nil)
	h.until("turn/completed")
	var read appserver.ThreadReadResult
	h.call("thread/read", appserver.ResumeParams{ThreadID: tid}, &read)
	var types []string
	for _, it := range read.Items {
		types = append(types, it.Type)
		switch it.Type {
		case appserver.ItemReasoning:
			if !strings.Contains(string(it.Payload), "Read the notes first.") || it.Status != appserver.ItemCompleted {
				t.Errorf("reasoning item %s %s", it.Status, it.Payload)
			}
		case appserver.ItemToolCall:
			if !strings.Contains(string(it.Payload), `"sideEffect":"read","idempotency":"supported"`) {
				t.Errorf("read call's metadata: %s", it.Payload)
			}
		}
	}
	if got := strings.Join(types, " "); got != "userMessage reasoning toolCall agentMessage" {
		t.Fatalf("items %s", got)
	}
}

// TestContextCompactionItem: a compaction of the thread's history is a
// contextCompaction item of the turn that compacted.
func TestContextCompactionItem(t *testing.T) {
	t.Parallel()
	h := start(t, options{extra: "context_max_tokens = 12000\n"})
	h.init()
	tid := h.thread()
	// Varied words, so the estimate counts thousands of tokens a reply;
	// whichever reply the compaction takes as its summary is one of them.
	long := ""
	for i := 0; len(long) < 12000; i++ {
		long += "word" + strconv.Itoa(i) + " "
	}
	for i := 0; i < 10; i++ {
		h.f.Enqueue(fo.Script(fo.Text(long)))
	}
	for i := 0; i < 5; i++ {
		h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("count " + strconv.Itoa(i))}, nil)
		msgs := h.until("turn/completed")
		for _, m := range msgs {
			if m.Method == "item/completed" && strings.Contains(string(m.Params), `"type":"contextCompaction"`) {
				if !strings.Contains(string(m.Params), `"beforeTokens":`) {
					t.Fatalf("compaction item %s", m.Params)
				}
				return
			}
		}
	}
	t.Fatal("no contextCompaction item in five turns")
}

// TestParseErrorMidTurn: a malformed line while a turn streams is answered
// with -32700 (id null) and the turn's notifications keep coming with no
// further input.
func TestParseErrorMidTurn(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.init()
	tid := h.thread()
	h.f.Enqueue(fo.Script(fo.Pace(20*time.Millisecond), fo.Text("a", "b", "c", "d", "e")))
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("go")}, nil)
	h.until("item/agentMessage/delta")
	if err := h.c.Send([]byte("not json")); err != nil {
		t.Fatal(err)
	}
	msgs := h.until("turn/completed")
	parseErrors := 0
	for _, m := range msgs {
		if m.Error != nil && m.Error.Code == appserver.CodeParseError && string(m.ID) == "null" {
			parseErrors++
		}
	}
	if parseErrors != 1 {
		t.Fatalf("parse errors %d in %s", parseErrors, methods(msgs))
	}
}
