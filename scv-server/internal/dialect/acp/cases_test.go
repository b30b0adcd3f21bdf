package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/scv-cli/scv/scv-server/internal/dialect/acp"
	"github.com/scv-cli/scv/scv-server/internal/server"
	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/version"
)

func TestInitialize(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	r := h.init()
	if r.ProtocolVersion != 1 || r.AgentInfo == nil || r.AgentInfo.Name != "scv" || r.AgentInfo.Version != version.Version {
		t.Fatalf("initialize = %+v", r)
	}
	caps := r.AgentCapabilities
	if !caps.LoadSession || !caps.PromptCapabilities.EmbeddedContext || caps.PromptCapabilities.Image || caps.PromptCapabilities.Audio {
		t.Fatalf("capabilities = %+v", caps)
	}
	sc := caps.SessionCapabilities
	if sc.List == nil || sc.Resume == nil || sc.Close == nil || sc.Fork != nil {
		t.Fatalf("session capabilities = %+v", sc)
	}
	if len(r.AuthMethods) != 0 {
		t.Fatalf("auth methods with a provider configured: %+v", r.AuthMethods)
	}
}

func TestPromptStreamsOneMessage(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, ns := h.newSession()
	if ns.Modes == nil || ns.Modes.CurrentModeId != "on-risk" || len(ns.Modes.AvailableModes) != 3 || len(ns.ConfigOptions) != 1 {
		t.Fatalf("session/new = %+v", ns)
	}
	h.f.Enqueue(fo.Script(fo.Text("Hel", "lo ", "world"), fo.Usage(10, 3)))
	r, err := h.prompt(sid, "say hello")
	if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	if got := h.c.text(); got != "Hello world" {
		t.Fatalf("streamed text %q", got)
	}
	ids := map[string]bool{}
	h.c.mu.Lock()
	for _, n := range h.c.updates {
		if n.SessionId != sid {
			t.Errorf("update for session %q", n.SessionId)
		}
		if m := n.Update.AgentMessageChunk; m != nil {
			ids[*m.MessageId] = true
		}
	}
	last := h.c.updates[len(h.c.updates)-1].Update
	h.c.mu.Unlock()
	if len(ids) != 1 {
		t.Fatalf("message ids %v: want one for the one message", ids)
	}
	if last.UsageUpdate == nil || last.UsageUpdate.Size != 1000000 || last.UsageUpdate.Used <= 0 {
		t.Fatalf("the last update is not the usage: %+v", last)
	}
	if req := h.f.Requests()[0]; !strings.Contains(req.Messages[len(req.Messages)-1].Content, "say hello") {
		t.Fatalf("the model got %+v", req.Messages)
	}
}

func TestPromptContentBlocks(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(fo.Script(fo.Text("ok")))
	res := acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{TextResourceContents: &acpsdk.TextResourceContents{Uri: "file:///w/notes.md", Text: "line with ``` fence"}})
	r, err := h.conn.Prompt(ctx(t), acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{
		acpsdk.TextBlock("look at"), acpsdk.ResourceLinkBlock("main.go", "file:///w/main.go"), res}})
	if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	got := h.f.Requests()[0].Messages
	want := "look at\n\n[main.go](file:///w/main.go)\n\nfile:///w/notes.md\n````\nline with ``` fence\n````"
	if got[len(got)-1].Content != want {
		t.Fatalf("the model got %q, want %q", got[len(got)-1].Content, want)
	}
	_, err = h.conn.Prompt(ctx(t), acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.ImageBlock("AAAA", "image/png")}})
	if re := reqErr(t, err); re.Code != -32602 || !strings.Contains(re.Message, "image") {
		t.Fatalf("image prompt: %v", err)
	}
}

// writeCall is a model reply asking to write path.
func writeCall(id, path, content string) fo.Reply {
	args, _ := json.Marshal(map[string]string{"path": path, "content": content, "mode": "create"})
	return fo.Script(fo.ToolCall(id, "write", string(args)))
}

func TestToolCallPermissionAllowOnce(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(writeCall("call_1", "a.txt", "hello\n"), fo.Script(fo.Text("written")))
	r, err := h.prompt(sid, "write a.txt")
	if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	if b, err := os.ReadFile(filepath.Join(h.ws, "a.txt")); err != nil || string(b) != "hello\n" {
		t.Fatalf("a.txt = %q, %v", b, err)
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if len(h.c.asked) != 1 {
		t.Fatalf("asked %d times", len(h.c.asked))
	}
	ask := h.c.asked[0]
	var kinds []string
	for _, o := range ask.Options {
		kinds = append(kinds, string(o.Kind))
	}
	if ask.ToolCall.ToolCallId != "call_1" || !slices.Equal(kinds, []string{"allow_once", "allow_always", "reject_once"}) ||
		!strings.HasPrefix(ask.Options[1].Name, "Always allow in this session: ") || len(ask.Options[1].Name) <= len("Always allow in this session: ") {
		t.Fatalf("permission request = %+v", ask)
	}
	var call *acpsdk.SessionUpdateToolCall
	var statuses []string
	for _, n := range h.c.updates {
		if n.Update.ToolCall != nil {
			call = n.Update.ToolCall
		}
		if u := n.Update.ToolCallUpdate; u != nil && u.Status != nil {
			statuses = append(statuses, string(*u.Status))
		}
	}
	if call == nil || call.Kind != acpsdk.ToolKindEdit || call.Status != acpsdk.ToolCallStatusPending || call.Title != "Write a.txt" {
		t.Fatalf("tool_call = %+v", call)
	}
	if len(call.Locations) != 1 || call.Locations[0].Path != filepath.Join(h.ws, "a.txt") {
		t.Fatalf("locations = %+v", call.Locations)
	}
	if len(call.Content) != 1 || call.Content[0].Diff == nil || call.Content[0].Diff.NewText != "hello\n" || call.Content[0].Diff.Path != filepath.Join(h.ws, "a.txt") {
		t.Fatalf("content = %+v", call.Content)
	}
	if !slices.Equal(statuses, []string{"in_progress", "completed"}) {
		t.Fatalf("statuses %v", statuses)
	}
}

func TestToolCallPermissionRejectAndAlways(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	h.c.answer = func(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		return selectKind(p, acpsdk.PermissionOptionKindRejectOnce), nil
	}
	h.f.Enqueue(writeCall("call_1", "a.txt", "no"), fo.Script(fo.Text("refused")))
	if r, err := h.prompt(sid, "write"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "a.txt")); !os.IsNotExist(err) {
		t.Fatalf("a rejected write happened: %v", err)
	}
	if k := h.c.kinds(); !slices.Contains(k, "tool_call_update") {
		t.Fatalf("updates %v", k)
	}
	h.c.mu.Lock()
	last := h.c.updates[len(h.c.updates)-3].Update.ToolCallUpdate // before the reply and the usage
	h.c.mu.Unlock()
	if last == nil || last.Status == nil || *last.Status != acpsdk.ToolCallStatusFailed {
		t.Fatalf("a rejected call did not fail: %+v", last)
	}

	// allow_always grants the session rule: the next write in the
	// directory runs without asking.
	h.c.reset()
	h.c.answer = func(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		return selectKind(p, acpsdk.PermissionOptionKindAllowAlways), nil
	}
	h.f.Enqueue(writeCall("call_2", "b.txt", "1"), fo.Script(fo.Text("one")), writeCall("call_3", "c.txt", "2"), fo.Script(fo.Text("two")))
	for _, p := range []string{"first", "second"} {
		if r, err := h.prompt(sid, p); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
			t.Fatalf("prompt = %+v, %v", r, err)
		}
	}
	h.c.mu.Lock()
	asked := len(h.c.asked)
	h.c.mu.Unlock()
	if asked != 1 {
		t.Fatalf("asked %d times; allow_always should have covered the second write", asked)
	}
	for _, f := range []string{"b.txt", "c.txt"} {
		if _, err := os.Stat(filepath.Join(h.ws, f)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestBashOutputAndKinds(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{policy: "auto"})
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(fo.Script(fo.ToolCall("call_1", "bash", `{"command":"echo from-bash"}`)), fo.Script(fo.Text("ran")))
	if r, err := h.prompt(sid, "run"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if len(h.c.asked) != 0 {
		t.Fatalf("auto asked: %+v", h.c.asked)
	}
	var call *acpsdk.SessionUpdateToolCall
	var final *acpsdk.SessionToolCallUpdate
	for _, n := range h.c.updates {
		if n.Update.ToolCall != nil {
			call = n.Update.ToolCall
		}
		if u := n.Update.ToolCallUpdate; u != nil && u.Status != nil && *u.Status == acpsdk.ToolCallStatusCompleted {
			final = u
		}
	}
	if call == nil || call.Kind != acpsdk.ToolKindExecute || call.Title != "echo from-bash" {
		t.Fatalf("tool_call = %+v", call)
	}
	if final == nil || len(final.Content) == 0 || final.Content[len(final.Content)-1].Content == nil ||
		!strings.Contains(final.Content[len(final.Content)-1].Content.Content.Text.Text, "from-bash") {
		t.Fatalf("completed update = %+v", final)
	}
}

func TestCancelRunningTurn(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(fo.Script(fo.Text("partial "), fo.Hang()))
	got := make(chan acpsdk.PromptResponse, 1)
	go func() {
		r, err := h.prompt(sid, "long")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		got <- r
	}()
	h.c.until(t, "the first chunk", func(c *client) bool { return len(c.updates) > 0 })
	if err := h.conn.Cancel(ctx(t), acpsdk.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.StopReason != acpsdk.StopReasonCancelled {
			t.Fatalf("stop reason %q", r.StopReason)
		}
	case <-time.After(wait):
		t.Fatal("the cancelled prompt did not answer")
	}
	// The session goes on.
	h.f.Enqueue(fo.Script(fo.Text("again")))
	if r, err := h.prompt(sid, "next"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after cancel = %+v, %v", r, err)
	}
}

func TestCancelWithdrawsPermission(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	withdrawn := make(chan struct{})
	h.c.answer = func(ctx context.Context, _ acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		<-ctx.Done() // the agent's $/cancel_request
		close(withdrawn)
		return acpsdk.RequestPermissionResponse{}, ctx.Err()
	}
	h.f.Enqueue(fo.Script(fo.ToolCall("call_1", "bash", `{"command":"touch should-not-exist"}`)))
	got := make(chan acpsdk.PromptResponse, 1)
	go func() {
		r, _ := h.prompt(sid, "run it")
		got <- r
	}()
	h.c.until(t, "the permission request", func(c *client) bool { return len(c.asked) == 1 })
	if err := h.conn.Cancel(ctx(t), acpsdk.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan struct{}{withdrawn} {
		select {
		case <-ch:
		case <-time.After(wait):
			t.Fatal("the permission request was not withdrawn")
		}
	}
	if r := <-got; r.StopReason != acpsdk.StopReasonCancelled {
		t.Fatalf("stop reason %q", r.StopReason)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "should-not-exist")); !os.IsNotExist(err) {
		t.Fatalf("the denied command ran: %v", err)
	}
}

func TestSecondPromptIsQueued(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(fo.Script(fo.Delay(300*time.Millisecond), fo.Text("one")), fo.Script(fo.Text("two")))
	type answer struct {
		r   acpsdk.PromptResponse
		err error
	}
	first := make(chan answer, 1)
	go func() { r, err := h.prompt(sid, "first"); first <- answer{r, err} }()
	h.f.WaitRequests(ctx(t), 1)
	r, err := h.prompt(sid, "second")
	if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("second = %+v, %v", r, err)
	}
	a := <-first
	if a.err != nil || a.r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("first = %+v, %v (a second prompt must not cancel the first)", a.r, a.err)
	}
	if got := h.c.text(); got != "onetwo" {
		t.Fatalf("text %q", got)
	}
	reqs := h.f.Requests()
	if len(reqs) != 2 || !strings.Contains(fmt.Sprint(reqs[1].Messages), "one") {
		t.Fatalf("the second turn did not follow the first: %+v", reqs)
	}
}

func TestCancelDropsQueuedPrompts(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(fo.Script(fo.Hang()))
	answers := make(chan acpsdk.StopReason, 2)
	for _, p := range []string{"running", "queued"} {
		go func() {
			r, err := h.prompt(sid, p)
			if err != nil {
				t.Errorf("prompt %s: %v", p, err)
			}
			answers <- r.StopReason
		}()
		if p == "running" {
			h.f.WaitRequests(ctx(t), 1)
		}
	}
	// The second prompt is queued once the runtime says so; give it time.
	time.Sleep(100 * time.Millisecond)
	if err := h.conn.Cancel(ctx(t), acpsdk.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case r := <-answers:
			if r != acpsdk.StopReasonCancelled {
				t.Fatalf("stop reason %q", r)
			}
		case <-time.After(wait):
			t.Fatal("a prompt did not answer after cancel")
		}
	}
	if n := len(h.f.Requests()); n != 1 {
		t.Fatalf("%d model requests: the queued prompt ran", n)
	}
}

func TestStopReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reply fo.Reply
		want  acpsdk.StopReason
	}{
		{fo.Script(fo.Text("cut"), fo.Finish("length")), acpsdk.StopReasonMaxTokens},
		{fo.Script(fo.Text("no"), fo.Finish("content_filter")), acpsdk.StopReasonRefusal},
		{fo.Script(fo.Text("fine"), fo.Finish("stop")), acpsdk.StopReasonEndTurn},
	} {
		h := start(t, harnessOptions{})
		h.init()
		sid, _ := h.newSession()
		h.f.Enqueue(tc.reply)
		r, err := h.prompt(sid, "go")
		if err != nil || r.StopReason != tc.want {
			t.Errorf("stop reason %q, %v; want %q", r.StopReason, err, tc.want)
		}
	}
}

func TestStepLimitAndProviderFailure(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	h := start(t, harnessOptions{config: st.FakeProviderConfig(f.URL(), "") + "\n[agent]\nmax_steps = 1\n", policy: "auto"})
	h.f = f
	h.init()
	sid, _ := h.newSession()
	f.Enqueue(fo.Script(fo.ToolCall("c1", "read", `{"path":"x"}`)))
	if r, err := h.prompt(sid, "loop"); err != nil || r.StopReason != acpsdk.StopReasonMaxTurnRequests {
		t.Fatalf("step limit: %+v, %v", r, err)
	}
	f.Enqueue(fo.Script(fo.APIError(400, "the model is overloaded today")))
	_, err := h.prompt(sid, "fail")
	re := reqErr(t, err)
	if re.Code != -32603 || !strings.Contains(re.Message, "the model is overloaded today") {
		t.Fatalf("provider failure = %+v", re)
	}
}

func TestModes(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	if _, err := h.conn.SetSessionMode(ctx(t), acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "never"}); err != nil {
		t.Fatal(err)
	}
	h.f.Enqueue(writeCall("c1", "a.txt", "x"), fo.Script(fo.Text("denied")))
	if r, err := h.prompt(sid, "write"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	h.c.mu.Lock()
	asked := len(h.c.asked)
	h.c.mu.Unlock()
	if _, err := os.Stat(filepath.Join(h.ws, "a.txt")); asked != 0 || !os.IsNotExist(err) {
		t.Fatalf("read-only mode: asked %d, file %v", asked, err)
	}
	r, err := h.conn.SetSessionConfigOption(ctx(t), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "mode", Value: "auto"}})
	if err != nil || len(r.ConfigOptions) != 1 || r.ConfigOptions[0].Select.CurrentValue != "auto" {
		t.Fatalf("set_config_option = %+v, %v", r, err)
	}
	h.f.Enqueue(writeCall("c2", "b.txt", "y"), fo.Script(fo.Text("done")))
	if _, err := h.prompt(sid, "write"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(h.ws, "b.txt")); err != nil {
		t.Fatalf("full access did not write: %v", err)
	}
	_, err = h.conn.SetSessionMode(ctx(t), acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "yolo"})
	if re := reqErr(t, err); re.Code != -32602 || !strings.Contains(re.Message, "on-risk, never or auto") {
		t.Fatalf("unknown mode: %v", err)
	}
}

func TestListCloseLoadResume(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{policy: "auto"})
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(writeCall("c1", "a.txt", "x"), fo.Script(fo.Text("wrote it")))
	if _, err := h.prompt(sid, "write a file"); err != nil {
		t.Fatal(err)
	}
	l, err := h.conn.ListSessions(ctx(t), acpsdk.ListSessionsRequest{Cwd: &h.ws})
	if err != nil || len(l.Sessions) != 1 || l.Sessions[0].SessionId != sid || l.Sessions[0].Title == nil || *l.Sessions[0].Title != "write a file" {
		t.Fatalf("session/list = %+v, %v", l, err)
	}
	if _, err := h.conn.CloseSession(ctx(t), acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.prompt(sid, "closed?"); reqErr(t, err).Code != -32002 {
		t.Fatalf("prompt to a closed session: %v", err)
	}
	_, err = h.conn.LoadSession(ctx(t), acpsdk.LoadSessionRequest{SessionId: "4b4c1f34-0000-4000-8000-000000000000", Cwd: h.ws, McpServers: []acpsdk.McpServer{}})
	if re := reqErr(t, err); re.Code != -32002 || !strings.Contains(re.Message, "no stored session") {
		t.Fatalf("load of an unknown session: %v", err)
	}

	h.c.reset()
	if _, err := h.conn.LoadSession(ctx(t), acpsdk.LoadSessionRequest{SessionId: sid, Cwd: h.ws, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	// The SDK handles every notification sent before a response first.
	if k := strings.Join(h.c.kinds(), " "); k != "user_message_chunk tool_call agent_message_chunk" {
		t.Fatalf("replay %q", k)
	}
	h.c.mu.Lock()
	call := h.c.updates[1].Update.ToolCall
	h.c.mu.Unlock()
	if call.Status != acpsdk.ToolCallStatusCompleted || call.Kind != acpsdk.ToolKindEdit {
		t.Fatalf("replayed call %+v", call)
	}
	_, err = h.conn.LoadSession(ctx(t), acpsdk.LoadSessionRequest{SessionId: sid, Cwd: h.ws, McpServers: []acpsdk.McpServer{}})
	if re := reqErr(t, err); re.Code != -32602 || !strings.Contains(re.Message, "open on this connection") {
		t.Fatalf("a second load: %v", err)
	}
	h.f.Enqueue(fo.Script(fo.Text("still here")))
	if r, err := h.prompt(sid, "again"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after load = %+v, %v", r, err)
	}
	if req := h.f.Requests()[2]; len(req.Messages) < 5 {
		t.Fatalf("the loaded session lost its history: %+v", req.Messages)
	}

	// resume: no replay.
	if _, err := h.conn.CloseSession(ctx(t), acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	h.c.reset()
	if _, err := h.conn.ResumeSession(ctx(t), acpsdk.ResumeSessionRequest{SessionId: sid, Cwd: h.ws}); err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	if k := h.c.kinds(); len(k) != 0 {
		t.Fatalf("resume replayed %v", k)
	}
}

func TestCloseCancelsRunningPrompt(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(fo.Script(fo.Hang()))
	got := make(chan acpsdk.StopReason, 1)
	go func() { r, _ := h.prompt(sid, "hang"); got <- r.StopReason }()
	h.f.WaitRequests(ctx(t), 1)
	if _, err := h.conn.CloseSession(ctx(t), acpsdk.CloseSessionRequest{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r != acpsdk.StopReasonCancelled {
		t.Fatalf("stop reason %q", r)
	}
}

func TestNoProvider(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{config: "-"})
	r := h.init()
	if len(r.AuthMethods) != 1 || r.AuthMethods[0].Agent == nil {
		t.Fatalf("auth methods %+v", r.AuthMethods)
	}
	_, err := h.conn.NewSession(ctx(t), acpsdk.NewSessionRequest{Cwd: h.ws, McpServers: []acpsdk.McpServer{}})
	if re := reqErr(t, err); re.Code != -32000 || !strings.Contains(re.Message, "config.toml") {
		t.Fatalf("session/new without a provider: %v", err)
	}
}

// rawAgent serves ACP over pipes for tests that write their own lines.
type rawAgent struct {
	f    *fo.Server
	w    io.WriteCloser
	r    *bufio.Scanner
	done chan error
}

func startRaw(t *testing.T) *rawAgent {
	t.Helper()
	f := fo.Start(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(st.FakeProviderConfig(f.URL(), "")), 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := server.New(server.Options{Env: paths.MapEnv(map[string]string{"SCV_HOME": home})})
	if err != nil {
		t.Fatal(err)
	}
	cr, aw := io.Pipe()
	ar, cw := io.Pipe()
	a := &rawAgent{f: f, w: cw, r: bufio.NewScanner(cr), done: make(chan error, 1)}
	a.r.Buffer(nil, 1<<20)
	go func() {
		err := rt.ServeACP(context.Background(), struct {
			io.Reader
			io.Writer
		}{ar, aw})
		_ = aw.Close()
		a.done <- err
	}()
	t.Cleanup(func() {
		_ = cw.Close()
		go func() { _, _ = io.Copy(io.Discard, cr) }()
		if err := <-a.done; err != nil {
			t.Errorf("ServeACP: %v", err)
		}
	})
	return a
}

// call writes line and returns the next answer line, decoded.
func (a *rawAgent) call(t *testing.T, line string) map[string]any {
	t.Helper()
	if _, err := io.WriteString(a.w, line+"\n"); err != nil {
		t.Fatal(err)
	}
	if !a.r.Scan() {
		t.Fatalf("no answer to %s: %v", line, a.r.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(a.r.Bytes(), &m); err != nil {
		t.Fatalf("answer %s: %v", a.r.Bytes(), err)
	}
	return m
}

func TestRawErrors(t *testing.T) {
	t.Parallel()
	a := startRaw(t)
	ws := t.TempDir()
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	for _, tc := range []struct {
		line string
		code float64
		id   any
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`, 0, 1.0},
		{`{oops`, -32700, nil},
		{`[{"jsonrpc":"2.0","id":2,"method":"initialize"}]`, -32600, nil},
		{`{"jsonrpc":"1.0","id":3,"method":"initialize"}`, -32600, 3.0},
		{`{"jsonrpc":"2.0","id":4}`, -32600, 4.0},
		{`{"jsonrpc":"2.0","id":5,"method":"session/fly","params":{}}`, -32601, 5.0},
		{`{"jsonrpc":"2.0","id":6,"method":"session/new","params":{"cwd":42}}`, -32602, 6.0},
		{`{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}`, -32602, 7.0},
		{`{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`, -32002, 8.0},
		{`{"jsonrpc":"2.0","id":9,"method":"session/list","params":{"cwd":"` + ws + `"}}`, 0, 9.0},
	} {
		m := a.call(t, tc.line)
		if code(m) != tc.code || m["id"] != tc.id {
			t.Errorf("%s → %v", tc.line, m)
		}
		if tc.code == 0 && m["result"] == nil {
			t.Errorf("%s → no result: %v", tc.line, m)
		}
	}
	// Lists are [] and never null.
	m := a.call(t, `{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":1}}`)
	if am, ok := m["result"].(map[string]any)["authMethods"].([]any); !ok || len(am) != 0 {
		t.Fatalf("authMethods %v", m)
	}
	m = a.call(t, `{"jsonrpc":"2.0","id":11,"method":"session/list","params":{"cwd":"`+ws+`"}}`)
	if s, ok := m["result"].(map[string]any)["sessions"].([]any); !ok || len(s) != 0 {
		t.Fatalf("sessions %v", m)
	}
	// A line over the limit is answered and skipped; the next one works.
	big := `{"jsonrpc":"2.0","id":12,"method":"initialize","params":{"x":"` + strings.Repeat("a", 10<<20) + `"}}`
	if m := a.call(t, big); code(m) != -32600 || !strings.Contains(fmt.Sprint(m), "longer than") {
		t.Fatalf("over-long line → %v", m)
	}
	if m := a.call(t, `{"jsonrpc":"2.0","id":13,"method":"initialize","params":{"protocolVersion":1}}`); m["result"] == nil {
		t.Fatalf("after an over-long line: %v", m)
	}
}

// BenchmarkStreamUpdates measures the agent_message_chunk updates a turn
// streams to an SDK client over pipes: the fake model sends 2000 chunks
// per prompt as fast as it can; updates/s counts what the client received
// (the session coalesces chunks while the writer queue is full, so it may
// be fewer than the chunks sent).
func BenchmarkStreamUpdates(b *testing.B) {
	h := start(b, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	const chunks = 2000
	var received int
	start := time.Now()
	for b.Loop() {
		h.c.reset()
		h.f.Enqueue(fo.Script(fo.Repeat(chunks, "word ")))
		r, err := h.conn.Prompt(context.Background(), acpsdk.PromptRequest{SessionId: sid, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("stream")}})
		if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
			b.Fatalf("prompt = %+v, %v", r, err)
		}
		h.c.mu.Lock()
		received += len(h.c.updates)
		h.c.mu.Unlock()
	}
	b.ReportMetric(float64(received)/time.Since(start).Seconds(), "updates/s")
}

// TestEndOfInputWhileTheClientStoppedReading: a client that closes its
// input while the agent is blocked writing to it (it stopped reading) does
// not keep the agent from ending: the writer gets the grace period.
func TestEndOfInputWhileTheClientStoppedReading(t *testing.T) {
	t.Parallel()
	a := startRaw(t)
	ws := t.TempDir()
	a.call(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	m := a.call(t, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"`+ws+`","mcpServers":[]}}`)
	sid, _ := m["result"].(map[string]any)["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new: %v", m)
	}
	a.f.Enqueue(fo.Script(fo.Repeat(100000, "chunk ")))
	if _, err := io.WriteString(a.w, `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"flood"}]}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.f.WaitRequests(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the pipe fills; nobody reads
	start := time.Now()
	_ = a.w.Close()
	select {
	case err := <-a.done:
		a.done <- err
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("the agent took %v to end", d)
		}
	case <-time.After(wait):
		t.Fatal("the agent did not end after the end of its input while its client was not reading")
	}
}

// TestReasoningBecomesThoughtChunks: on the Responses wire the reasoning
// summary streams as agent_thought_chunk, before the reply's text.
func TestReasoningBecomesThoughtChunks(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	h := start(t, harnessOptions{config: st.FakeProviderConfig(f.URL(), `wire_api = "responses"`)})
	h.f = f
	h.init()
	sid, _ := h.newSession()
	f.Enqueue(fo.Script(fo.Reasoning("Weighing the options.", "enc-1"), fo.Text("The answer.")))
	if r, err := h.prompt(sid, "think"); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	if k := strings.Join(h.c.kinds(), " "); k != "agent_thought_chunk agent_message_chunk usage_update" {
		t.Fatalf("updates %q", k)
	}
	h.c.mu.Lock()
	th := h.c.updates[0].Update.AgentThoughtChunk
	msg := h.c.updates[1].Update.AgentMessageChunk
	h.c.mu.Unlock()
	if th.Content.Text == nil || th.Content.Text.Text != "Weighing the options." || th.MessageId == nil || *th.MessageId == *msg.MessageId {
		t.Fatalf("thought %+v", th)
	}
}

// TestCancelBeforeThePromptStarts: a session/cancel handled while its
// prompt is still on its way to the runtime (the SDK runs requests and
// notifications on different goroutines) still cancels that prompt. Not
// parallel: it sets the package's test hooks.
func TestCancelBeforeThePromptStarts(t *testing.T) {
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(fo.Script(fo.Hang()))
	entered, gate, cancelled := make(chan struct{}, 1), make(chan struct{}), make(chan struct{}, 1)
	acp.SetHooks(func() { entered <- struct{}{}; <-gate }, func() { cancelled <- struct{}{} })
	defer acp.SetHooks(nil, nil)
	got := make(chan acpsdk.PromptResponse, 1)
	go func() {
		r, err := h.prompt(sid, "cancelled before it starts")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		got <- r
	}()
	<-entered
	if err := h.conn.Cancel(ctx(t), acpsdk.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	<-cancelled
	close(gate)
	select {
	case r := <-got:
		if r.StopReason != acpsdk.StopReasonCancelled {
			t.Fatalf("stop reason %q", r.StopReason)
		}
	case <-time.After(wait):
		t.Fatal("a prompt cancelled before it started ran on")
	}
}

// TestModeSwitchWithinATurn: a mode switch applies to the next model
// reply's calls of the running turn.
func TestModeSwitchWithinATurn(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(fo.Script(fo.Delay(500*time.Millisecond), fo.ToolCall("c1", "bash", `{"command":"touch ran"}`)), fo.Script(fo.Text("done")))
	got := make(chan error, 1)
	go func() { _, err := h.prompt(sid, "run"); got <- err }()
	if _, err := h.f.WaitRequests(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.SetSessionMode(ctx(t), acpsdk.SetSessionModeRequest{SessionId: sid, ModeId: "auto"}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	h.c.mu.Lock()
	asked := len(h.c.asked)
	h.c.mu.Unlock()
	if _, err := os.Stat(filepath.Join(h.ws, "ran")); asked != 0 || err != nil {
		t.Fatalf("after switching to full access mid-turn: asked %d, %v", asked, err)
	}
}

// modelOption returns the model option of opts, or nil.
func modelOption(opts []acpsdk.SessionConfigOption) *acpsdk.SessionConfigOptionSelect {
	for _, o := range opts {
		if o.Select != nil && o.Select.Id == "model" {
			return o.Select
		}
	}
	return nil
}

func optionValues(o *acpsdk.SessionConfigOptionSelect) []string {
	var out []string
	for _, c := range *o.Options.Ungrouped {
		out = append(out, string(c.Value))
	}
	return out
}

func TestModelOption(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{})
	h.f.SetModels("gpt-b", "gpt-a")
	h.init()
	sid, r := h.newSession()
	mo := modelOption(r.ConfigOptions)
	if mo == nil || mo.CurrentValue != "fake-model" || mo.Category == nil || *mo.Category != acpsdk.SessionConfigOptionCategoryModel {
		t.Fatalf("session/new model option = %+v in %+v", mo, r.ConfigOptions)
	}
	// The configured model is listed first when the provider does not list it.
	if got := optionValues(mo); !slices.Equal(got, []string{"fake-model", "gpt-a", "gpt-b"}) {
		t.Fatalf("model choices %q", got)
	}

	h.f.Enqueue(fo.Script(fo.Text("one")), fo.Script(fo.Text("two")))
	if _, err := h.prompt(sid, "first"); err != nil {
		t.Fatal(err)
	}
	set, err := h.conn.SetSessionConfigOption(ctx(t), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "gpt-b"}})
	if err != nil {
		t.Fatal(err)
	}
	if mo := modelOption(set.ConfigOptions); mo == nil || mo.CurrentValue != "gpt-b" || len(set.ConfigOptions) != 2 || set.ConfigOptions[0].Select.CurrentValue != "on-risk" {
		t.Fatalf("set_config_option answered %+v", set.ConfigOptions)
	}
	if _, err := h.prompt(sid, "second"); err != nil {
		t.Fatal(err)
	}
	reqs := h.f.Requests()
	if len(reqs) != 2 || reqs[0].Model != "fake-model" || reqs[1].Model != "gpt-b" {
		t.Fatalf("request models %q, want fake-model then gpt-b", []string{reqs[0].Model, reqs[len(reqs)-1].Model})
	}

	_, err = h.conn.SetSessionConfigOption(ctx(t), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "gpt-z"}})
	if re := reqErr(t, err); re.Code != -32602 || !strings.Contains(re.Message, `unknown model "gpt-z": the provider lists gpt-a, gpt-b`) {
		t.Fatalf("unknown model: %v", err)
	}

	// Resuming the open session shows the switched model; the provider
	// was asked for its models once.
	rr, err := h.conn.ResumeSession(ctx(t), acpsdk.ResumeSessionRequest{SessionId: sid, Cwd: h.ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if mo := modelOption(rr.ConfigOptions); mo == nil || mo.CurrentValue != "gpt-b" {
		t.Fatalf("session/resume options %+v", rr.ConfigOptions)
	}
	if n := len(h.f.ModelRequests()); n != 1 {
		t.Fatalf("%d listing requests, want 1", n)
	}
}

func TestModelSwitchWithinATurn(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{policy: "auto"})
	h.f.SetModels("gpt-a", "gpt-b")
	h.init()
	sid, _ := h.newSession()
	h.f.Enqueue(fo.Script(fo.Delay(500*time.Millisecond), fo.ToolCall("c1", "bash", `{"command":"true"}`)), fo.Script(fo.Text("done")))
	got := make(chan error, 1)
	go func() { _, err := h.prompt(sid, "run"); got <- err }()
	if _, err := h.f.WaitRequests(ctx(t), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.conn.SetSessionConfigOption(ctx(t), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "gpt-a"}}); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	reqs := h.f.Requests()
	if len(reqs) != 2 || reqs[0].Model != "fake-model" || reqs[1].Model != "gpt-a" {
		t.Fatalf("%d requests; the turn's request after the switch must carry gpt-a", len(reqs))
	}
}

func TestNoModelOption(t *testing.T) {
	t.Parallel()
	h := start(t, harnessOptions{}) // the fake answers GET /models with 404
	h.init()
	sid, r := h.newSession()
	if len(r.ConfigOptions) != 1 || modelOption(r.ConfigOptions) != nil {
		t.Fatalf("config options %+v, want the mode only", r.ConfigOptions)
	}
	_, err := h.conn.SetSessionConfigOption(ctx(t), acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{SessionId: sid, ConfigId: "model", Value: "gpt-a"}})
	if re := reqErr(t, err); re.Code != -32602 || !strings.Contains(re.Message, "the provider lists no models") {
		t.Fatalf("model without a listing: %v", err)
	}
	if _, r2 := h.newSession(); len(r2.ConfigOptions) != 1 {
		t.Fatalf("second session options %+v", r2.ConfigOptions)
	}
	if n := len(h.f.ModelRequests()); n != 1 {
		t.Fatalf("%d listing requests, want 1: the failure is cached", n)
	}
	h.f.Enqueue(fo.Script(fo.Text("hi")))
	if _, err := h.prompt(sid, "hi"); err != nil {
		t.Fatal(err)
	}
	if reqs := h.f.Requests(); len(reqs) != 1 || reqs[0].Model != "fake-model" {
		t.Fatalf("requests %d", len(reqs))
	}
}
