package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"go.uber.org/goleak"

	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/version"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// chroma's regexp2 (code highlighting in glamour) keeps a clock
		// goroutine while regexps with timeouts run; it stops by itself
		// after a quiet period, so whether it is still there at exit is
		// timing, not a leak of ours.
		goleak.IgnoreAnyFunction("github.com/dlclark/regexp2.runClock"))
}

const (
	sid  = "0b6f4c2e-9d1a-4e8b-a7c3-5f2d1e0c9b84"
	tid  = "7c3e9a1f-4b2d-4f6e-8a5c-2d1b0e9f8a73"
	tid2 = "2e5f8a1b-3c4d-4e6f-9a7b-8c9d0e1f2a3b"
	ws   = "/home/ana/project"
)

// fakeHistory is an in-memory History.
type fakeHistory struct {
	entries  []string
	maxBytes int64
	maxItems int
	addErr   error
}

func (h *fakeHistory) Entries() []string { return h.entries }
func (h *fakeHistory) Add(p string) error {
	if h.addErr != nil {
		return h.addErr
	}
	h.entries = append(h.entries, p)
	return nil
}
func (h *fakeHistory) SetBounds(b int64, n int) { h.maxBytes, h.maxItems = b, n }

// harness drives a Model with a fake Send that collects messages.
type harness struct {
	t        testing.TB
	m        *Model
	sent     []protocol.ClientMessage
	sendErr  error
	restarts int
	hist     *fakeHistory
	seq      uint64
	clock    time.Time
}

func newHarness(t testing.TB) *harness {
	h := &harness{t: t, hist: &fakeHistory{entries: []string{"an older prompt"}}, clock: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	h.m = New(Options{
		Send: func(m protocol.ClientMessage) error {
			if h.sendErr != nil {
				return h.sendErr
			}
			h.sent = append(h.sent, m)
			return nil
		},
		Restart:   func() error { h.restarts++; return nil },
		Workspace: ws,
		LogPath:   "/home/ana/.scv/logs/scv-tui-server.log",
		History:   h.hist,
	})
	h.m.now = func() time.Time { return h.clock }
	h.msg(tea.WindowSizeMsg{Width: 80, Height: 24})
	return h
}

// msg feeds one message and runs the command it returns, the way the
// program would, except ticks (which would sleep) and Quit.
func (h *harness) msg(msg tea.Msg) tea.Cmd {
	h.t.Helper()
	_, cmd := h.m.Update(msg)
	_ = h.m.View()
	return cmd
}

// run executes a command and feeds its message back (for Restart).
func (h *harness) run(cmd tea.Cmd) {
	h.t.Helper()
	if cmd == nil {
		return
	}
	if out := cmd(); out != nil {
		h.msg(out)
	}
}

// event decodes one JSON frame with the shared decoder and feeds it. A
// "seq":0 placeholder is replaced by the next sequence number.
func (h *harness) event(frame string) tea.Cmd {
	h.t.Helper()
	if strings.Contains(frame, `"seq":0`) {
		h.seq++
		frame = strings.Replace(frame, `"seq":0`, fmt.Sprintf(`"seq":%d`, h.seq), 1)
	}
	e, err := protocol.DecodeEvent([]byte(frame))
	if err != nil {
		h.t.Fatalf("decoding %s: %v", frame, err)
	}
	return h.msg(ServerEvent{Event: e})
}

func (h *harness) key(keys ...string) {
	h.t.Helper()
	for _, k := range keys {
		h.msg(keyMsg(k))
	}
}

func (h *harness) typeText(s string) {
	for _, r := range s {
		h.msg(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func keyMsg(k string) tea.KeyPressMsg {
	special := map[string]tea.KeyPressMsg{
		"enter":      {Code: tea.KeyEnter},
		"alt+enter":  {Code: tea.KeyEnter, Mod: tea.ModAlt},
		"esc":        {Code: tea.KeyEscape},
		"tab":        {Code: tea.KeyTab},
		"up":         {Code: tea.KeyUp},
		"down":       {Code: tea.KeyDown},
		"pgup":       {Code: tea.KeyPgUp},
		"pgdown":     {Code: tea.KeyPgDown},
		"home":       {Code: tea.KeyHome},
		"end":        {Code: tea.KeyEnd},
		"ctrl+c":     {Code: 'c', Mod: tea.ModCtrl},
		"ctrl+r":     {Code: 'r', Mod: tea.ModCtrl},
		"ctrl+o":     {Code: 'o', Mod: tea.ModCtrl},
		"shift+up":   {Code: tea.KeyUp, Mod: tea.ModShift},
		"shift+down": {Code: tea.KeyDown, Mod: tea.ModShift},
		"backspace":  {Code: tea.KeyBackspace},
	}
	if k, ok := special[k]; ok {
		return k
	}
	r := []rune(k)
	return tea.KeyPressMsg{Code: r[0], Text: k}
}

// last returns the last sent message, failing unless it has type T.
func last[T protocol.ClientMessage](h *harness) T {
	h.t.Helper()
	if len(h.sent) == 0 {
		var zero T
		h.t.Fatalf("nothing sent, want %T", zero)
	}
	m, ok := h.sent[len(h.sent)-1].(T)
	if !ok {
		h.t.Fatalf("last sent %T (%s), want another type", h.sent[len(h.sent)-1], encode(h.sent[len(h.sent)-1]))
	}
	return m
}

func encode(m protocol.ClientMessage) string {
	b, _ := json.Marshal(m)
	return string(b)
}

func (h *harness) screen() string { return golden.Plain(h.m.render()) }

// connect runs the handshake up to a ready session with model.
func (h *harness) connect(model string) {
	h.t.Helper()
	h.connectWith(model, "")
}

// connectWith is connect with extra fields (",\"name\":value...") in
// session.started.
func (h *harness) connectWith(model, extra string) {
	h.t.Helper()
	h.msg(ServerStarted{})
	ini := last[*protocol.Initialize](h)
	if ini.ProtocolVersion != 4 || ini.Client.Name != ClientName {
		h.t.Fatalf("initialize = %s", encode(ini))
	}
	h.event(`{"type":"initialized","request_id":"` + ini.RequestID + `","protocol_version":4,"server":{"name":"scv-server","version":"0.1.0"}}`)
	ss := last[*protocol.SessionStart](h)
	if ss.Cwd != ws {
		h.t.Fatalf("session.start cwd = %q", ss.Cwd)
	}
	h.seq = 0
	h.event(`{"type":"session.started","request_id":"` + ss.RequestID + `","session_id":"` + sid + `","cwd":"` + ws + `","model":"` + model + `","context_max_tokens":128000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,"max_transcript_items":10000,"max_prompt_history_bytes":1048576,"max_prompt_history_items":200` + extra + `}`)
	h.event(`{"type":"queue.snapshot","request_id":"` + ss.RequestID + `","session_id":"` + sid + `","seq":0,"entries":[]}`)
	if h.m.phase != ready {
		h.t.Fatalf("phase %d after the handshake", h.m.phase)
	}
}

// prompt types a prompt, sends it, and returns its turn.start.
func (h *harness) prompt(text string) *protocol.TurnStart {
	h.t.Helper()
	h.typeText(text)
	h.key("enter")
	ts := last[*protocol.TurnStart](h)
	if ts.Prompt != text || ts.SessionID != sid {
		h.t.Fatalf("turn.start = %s", encode(ts))
	}
	return ts
}

// turnEvent builds a turn event frame of turn tid for request rid.
func turnEvent(typ, rid, turn, rest string) string {
	if rest != "" {
		rest = "," + rest
	}
	return `{"type":"` + typ + `","request_id":"` + rid + `","session_id":"` + sid + `","turn_id":"` + turn + `","seq":0` + rest + `}`
}

func sessionEvent(typ, rid, rest string) string {
	if rest != "" {
		rest = "," + rest
	}
	return `{"type":"` + typ + `","request_id":"` + rid + `","session_id":"` + sid + `","seq":0` + rest + `}`
}

func TestHandshakeAndTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	if h.hist.maxItems != 200 || h.hist.maxBytes != 1048576 {
		t.Errorf("history bounds not set from session.started: %d %d", h.hist.maxBytes, h.hist.maxItems)
	}
	ts := h.prompt("What API base URL does .env set?")
	if got := h.hist.entries[len(h.hist.entries)-1]; got != ts.Prompt {
		t.Errorf("history did not get the prompt: %q", got)
	}
	if h.m.editor.Value() != "" {
		t.Error("editor not cleared after sending")
	}
	rid := ts.RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("assistant.delta", rid, tid, `"content":"I'll read "`))
	h.event(turnEvent("assistant.delta", rid, tid, `"content":"the .env file."`))
	if !strings.Contains(h.screen(), "I'll read the .env file.") {
		t.Errorf("streamed text not shown:\n%s", h.screen())
	}
	h.event(turnEvent("assistant.completed", rid, tid, `"content":"I'll read the .env file."`))
	h.event(turnEvent("tool.proposed", rid, tid, `"call_id":"call_1","name":"read","arguments":{"path":".env"}`))
	h.event(turnEvent("approval.requested", rid, tid, `"approval_id":"ap1","call_id":"call_1","name":"read","risk":"filesystem","cwd":"`+ws+`","summary":"Read .env (the name looks like a secret)"`))
	if h.m.dialog == nil {
		t.Fatal("approval dialog not open")
	}
	// While the dialog is open nothing else can be typed.
	h.typeText("zz")
	if h.m.editor.Value() != "" {
		t.Errorf("typing reached the editor under the dialog: %q", h.m.editor.Value())
	}
	n := len(h.sent)
	h.key("a") // no rule: session approval is refused locally
	if len(h.sent) != n || h.m.dialog == nil {
		t.Fatal("approve-for-session without a rule was sent")
	}
	h.key("enter")
	ar := last[*protocol.ApprovalResolve](h)
	if !ar.Approved || ar.ApprovalID != "ap1" || ar.Scope != "" || ar.SessionID != sid {
		t.Errorf("approval.resolve = %s", encode(ar))
	}
	if h.m.dialog != nil {
		t.Error("dialog still open after answering")
	}
	h.event(turnEvent("tool.started", rid, tid, `"call_id":"call_1","name":"read"`))
	h.event(turnEvent("tool.completed", rid, tid, `"call_id":"call_1","name":"read","success":true,"output":"[.env: 37 bytes; bytes 0-37]\nAPI_BASE_URL=https://api.example.com\n","truncated":false`))
	h.event(turnEvent("assistant.delta", rid, tid, `"content":"The API base URL is https://api.example.com."`))
	h.event(turnEvent("assistant.completed", rid, tid, `"content":"The API base URL is **https://api.example.com**."`))
	h.clock = h.clock.Add(3 * time.Second)
	h.event(turnEvent("turn.completed", rid, tid, `"steps":2,"usage":{"input_tokens":1717,"output_tokens":36}`))
	if h.m.turnID != "" || h.m.turnState != "" {
		t.Error("turn still running after turn.completed")
	}
	if h.m.ctxUsed != 1717/2+36 {
		t.Errorf("context use = %d", h.m.ctxUsed)
	}
	golden.RequirePlain(t, h.m.render())
}

func TestApproveForSession(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	rid := h.prompt("run the tests").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("tool.proposed", rid, tid, `"call_id":"call_2","name":"bash","arguments":{"command":"go test ./..."}`))
	h.event(turnEvent("approval.requested", rid, tid, `"approval_id":"ap2","call_id":"call_2","name":"bash","risk":"process","cwd":"`+ws+`","summary":"Run shell command: go test ./...","rule":{"tool":"bash","key":"bash:go test","description":"bash commands that start with `+"`go test`"+`"}`))
	h.key("v")
	golden.RequirePlain(t, h.m.render())
	h.key("a")
	ar := last[*protocol.ApprovalResolve](h)
	if !ar.Approved || ar.Scope != protocol.ScopeSession {
		t.Errorf("approval.resolve = %s", encode(ar))
	}
	// The server refuses the scope: the call still waits, so the dialog returns.
	h.event(`{"type":"error","request_id":"` + ar.RequestID + `","code":"invalid_request","message":"approval proposed no rule","fatal":false}`)
	if h.m.dialog == nil {
		t.Fatal("dialog not reopened after a refused answer")
	}
	h.key("n")
	if ar := last[*protocol.ApprovalResolve](h); ar.Approved {
		t.Error("n approved")
	}
	// A cancelled turn closes an open dialog.
	h.event(turnEvent("approval.requested", rid, tid, `"approval_id":"ap3","call_id":"call_2","name":"bash","risk":"process","cwd":"`+ws+`","summary":"again"`))
	h.event(turnEvent("turn.cancelled", rid, tid, ""))
	if h.m.dialog != nil {
		t.Error("dialog open after turn.cancelled")
	}
}

func TestQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	rid := h.prompt("first").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	q1 := h.prompt("second")
	q2 := h.prompt("third")
	if h.m.queue.Len() != 0 {
		t.Fatal("the queue was changed before the server said so")
	}
	h.event(sessionEvent("queue.enqueued", q1.RequestID, `"entry":{"queue_id":"qa","revision":1,"prompt":"second","submitter":"scv-tui","position":0}`))
	h.event(sessionEvent("queue.enqueued", q2.RequestID, `"entry":{"queue_id":"qb","revision":1,"prompt":"third","submitter":"scv-tui","position":1}`))
	h.key("tab", "down")
	golden.RequirePlain(t, h.m.render())
	// Shift+k as a kitty-protocol terminal reports it.
	h.msg(tea.KeyPressMsg{Code: 'k', ShiftedCode: 'K', Text: "K", Mod: tea.ModShift})
	mv := last[*protocol.QueueMove](h)
	if mv.QueueID != "qb" || mv.BeforeQueueID != "qa" || mv.Revision != 1 {
		t.Errorf("queue.move = %s", encode(mv))
	}
	h.event(sessionEvent("queue.moved", mv.RequestID, `"entry":{"queue_id":"qb","revision":2,"prompt":"third","submitter":"scv-tui","position":0}`))
	if e, _ := h.m.queue.Selected(); e.QueueID != "qb" {
		t.Errorf("selection did not follow the move: %s", e.QueueID)
	}
	h.key("J")
	mv = last[*protocol.QueueMove](h)
	if mv.QueueID != "qb" || mv.BeforeQueueID != "" || mv.Revision != 2 {
		t.Errorf("move down = %s", encode(mv))
	}
	h.key("p")
	if p := last[*protocol.SessionPause](h); !p.Paused {
		t.Error("p did not pause")
	}
	h.event(sessionEvent("session.paused", "x", `"paused":true`))
	if !h.m.queue.Paused() {
		t.Error("paused state not shown")
	}
	// Edit: the server's current revision wins on conflict.
	h.key("e")
	if h.m.editor.Value() != "third" {
		t.Fatalf("editing loaded %q", h.m.editor.Value())
	}
	h.key("backspace", "backspace", "backspace", "backspace", "backspace")
	h.typeText("fourth")
	h.key("enter")
	up := last[*protocol.QueueUpdate](h)
	if up.QueueID != "qb" || up.Prompt != "fourth" || up.Revision != 2 {
		t.Errorf("queue.update = %s", encode(up))
	}
	h.event(`{"type":"error","request_id":"` + up.RequestID + `","code":"queue_conflict","message":"the queue entry has changed since revision 2; its current revision is 3, shown in entry","fatal":false,"entry":{"queue_id":"qb","revision":3,"prompt":"third, edited elsewhere","submitter":"scv-bridge","position":0}}`)
	if e := h.m.queue.Entries()[0]; e.Revision != 3 || e.Prompt != "third, edited elsewhere" {
		t.Errorf("conflict did not show the server's entry: %+v", e)
	}
	if !strings.Contains(h.screen(), "changed on the server") {
		t.Errorf("no conflict notice:\n%s", h.screen())
	}
	if h.m.editor.Value() != "fourth" {
		t.Errorf("the refused edit was lost: %q", h.m.editor.Value())
	}
	h.m.editor.Reset()
	h.key("tab", "d")
	rm := last[*protocol.QueueRemove](h)
	if rm.QueueID != "qb" || rm.Revision != 3 {
		t.Errorf("queue.remove = %s", encode(rm))
	}
	h.event(sessionEvent("queue.removed", rm.RequestID, `"entry":{"queue_id":"qb","revision":3,"prompt":"third, edited elsewhere","submitter":"scv-bridge","position":0}`))
	// The turn ends and the server dequeues "second": its prompt is shown.
	h.event(turnEvent("turn.completed", rid, tid, `"steps":1`))
	h.event(sessionEvent("queue.dequeued", q1.RequestID, `"entry":{"queue_id":"qa","revision":1,"prompt":"second","submitter":"scv-tui","position":0}`))
	h.event(turnEvent("turn.started", q1.RequestID, tid2, ""))
	if h.m.queue.Len() != 0 || h.m.turnID != tid2 {
		t.Errorf("after dequeue: %d queued, turn %q", h.m.queue.Len(), h.m.turnID)
	}
	if !strings.Contains(h.screen(), "┃ second") {
		t.Errorf("the dequeued prompt is not shown:\n%s", h.screen())
	}
}

func TestCancelClearCompact(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	rid := h.prompt("long task").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("assistant.delta", rid, tid, `"content":"working on"`))
	h.key("esc")
	tc := last[*protocol.TurnCancel](h)
	if tc.TurnID != tid || tc.SessionID != sid {
		t.Errorf("turn.cancel = %s", encode(tc))
	}
	if h.m.turnState != stateCancelling {
		t.Error("state not cancelling")
	}
	n := len(h.sent)
	h.key("esc")
	if len(h.sent) != n {
		t.Error("a second Esc sent another cancel")
	}
	h.typeText("/clear")
	h.key("enter")
	if len(h.sent) != n {
		t.Error("/clear was sent while a turn runs")
	}
	h.m.editor.Reset()
	h.event(turnEvent("turn.cancelled", rid, tid, ""))
	if !strings.Contains(h.screen(), "working on [incomplete]") {
		t.Errorf("the interrupted preview is not kept:\n%s", h.screen())
	}
	h.typeText("/clear")
	h.key("enter")
	cl := last[*protocol.SessionClear](h)
	if h.m.transcript.Len() == 0 {
		t.Fatal("transcript cleared before session.cleared")
	}
	h.event(sessionEvent("session.cleared", cl.RequestID, ""))
	if !strings.Contains(h.screen(), "The conversation was cleared") || strings.Contains(h.screen(), "long task") {
		t.Errorf("after session.cleared:\n%s", h.screen())
	}
	h.typeText("/compact")
	h.key("enter")
	cp := last[*protocol.SessionCompact](h)
	h.event(turnEvent("turn.started", cp.RequestID, tid2, ""))
	if h.m.turnState != stateCompacting {
		t.Errorf("state %q during compaction", h.m.turnState)
	}
	h.event(turnEvent("context.compacted", cp.RequestID, tid2, `"before_tokens":52000,"after_tokens":9100,"removed_messages":118`))
	h.event(turnEvent("turn.completed", cp.RequestID, tid2, `"steps":0,"usage":{"input_tokens":48000,"output_tokens":410}`))
	if !strings.Contains(h.screen(), "about 52000 tokens became 9100") {
		t.Errorf("no compaction notice:\n%s", h.screen())
	}
	// A doubled slash sends the prompt with one slash.
	h.typeText("//etc/hosts is empty")
	h.key("enter")
	if ts := last[*protocol.TurnStart](h); ts.Prompt != "/etc/hosts is empty" {
		t.Errorf("escaped slash prompt = %q", ts.Prompt)
	}
	// An unknown command is refused and kept.
	h.typeText("/frobnicate")
	h.key("enter")
	if h.m.editor.Value() != "/frobnicate" || !strings.Contains(h.screen(), "Unknown command /frobnicate") {
		t.Errorf("unknown command: editor %q\n%s", h.m.editor.Value(), h.screen())
	}
}

func TestFailureNotices(t *testing.T) {
	t.Parallel()
	for _, code := range protocol.FailureCodes {
		t.Run(string(code), func(t *testing.T) {
			h := newHarness(t)
			h.connect("gpt-4.1-mini")
			rid := h.prompt("go").RequestID
			h.event(turnEvent("turn.started", rid, tid, ""))
			h.event(turnEvent("assistant.delta", rid, tid, `"content":"partial"`))
			h.event(turnEvent("turn.failed", rid, tid, `"code":"`+string(code)+`","message":"details from the server"`))
			golden.RequirePlain(t, h.m.transcript.View())
		})
	}
	if txt := failureText(protocol.FailResponseLimit, ""); !strings.Contains(txt, "4 MiB") {
		t.Errorf("response_limit text: %s", txt)
	}
}

// TestRetryingShown: turn.retrying shows the provider's status and message
// and the wait until the model answers; a failure leads with the
// provider's message.
func TestRetryingShown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	rid := h.prompt("go").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("turn.retrying", rid, tid, `"attempt":2,"max_attempts":5,"delay_ms":3500,"status":429,"message":"openai: Rate limit reached"`))
	if s := h.screen(); !strings.Contains(s, "Retrying (2/5) in 4 s: HTTP 429, openai: Rate limit reached") {
		t.Errorf("the retry is not shown:\n%s", s)
	}
	h.event(turnEvent("assistant.delta", rid, tid, `"content":"Here"`))
	if strings.Contains(h.screen(), "Retrying") {
		t.Errorf("the retry notice stayed after the model answered:\n%s", h.screen())
	}
	want := "The turn failed: openai: HTTP 401: invalid key. Likely cause: the model provider failed"
	if got := failureText(protocol.FailProviderError, "openai: HTTP 401: invalid key"); !strings.HasPrefix(got, want) {
		t.Errorf("failure text = %q, want it to start %q", got, want)
	}
}

// TestConfigWarningsShown: the configuration warnings in session.started
// (a key file others can read) are shown in the transcript, not only in
// the server's log.
func TestConfigWarningsShown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connectWith("gpt-4.1-mini", `,"warnings":["/home/ana/.scv/config.toml: this file holds an API key but other users can read it (mode -rw-r--r--); run chmod 600 /home/ana/.scv/config.toml"]`)
	if s := h.screen(); !strings.Contains(s, "Configuration warning:") || !strings.Contains(s, "other users can read it") {
		t.Errorf("the configuration warning is not shown:\n%s", s)
	}
}

// TestCostAndExitSummary: /cost sums the session's tokens (a resumed
// session's earlier ones included) and the exit summary names the session
// and the command that resumes it.
func TestCostAndExitSummary(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if h.m.ExitSummary() != "" {
		t.Error("an exit summary before any session")
	}
	h.connectWith("gpt-4.1-mini", `,"resumed":true,"usage":{"input_tokens":10000,"output_tokens":500}`)
	rid := h.prompt("go").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("turn.completed", rid, tid, `"steps":2,"usage":{"input_tokens":2400,"output_tokens":100}`))
	h.typeText("/cost")
	h.key("enter")
	if s := strings.Join(strings.Fields(h.screen()), " "); !strings.Contains(s, "12k input and 600 output tokens (1 turn completed here)") || !strings.Contains(s, "of 128k tokens") {
		t.Errorf("/cost:\n%s", s)
	}
	want := "Session " + sid + ": 12k input and 600 output tokens.\nResume it with: scv -C " + ws + " --resume " + sid + "\n"
	if got := h.m.ExitSummary(); got != want {
		t.Errorf("ExitSummary = %q, want %q", got, want)
	}
}

// TestApprovalDiffAndReason: an edit's approval shows its diff; r takes a
// reason in the editor (Esc goes back to the dialog) and Enter denies the
// call with it.
func TestApprovalDiffAndReason(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	rid := h.prompt("change x").RequestID
	h.typeText("draft")
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("tool.proposed", rid, tid, `"call_id":"e1","name":"edit","arguments":{"path":"main.go","old_string":"var x = 1","new_string":"var x = 2"}`))
	h.event(turnEvent("approval.requested", rid, tid, `"approval_id":"a1","call_id":"e1","name":"edit","risk":"filesystem","cwd":"/w","summary":"Edit main.go (1 replacement, +1 -1 lines)","diff":"--- a/main.go\n+++ b/main.go\n@@ -3 +3 @@\n-var x = 1\n+var x = 2\n"`))
	s := h.screen()
	if !strings.Contains(s, "-var x = 1") || !strings.Contains(s, "+var x = 2") || !strings.Contains(s, "r deny") {
		t.Fatalf("the dialog does not show the diff and the reason key:\n%s", s)
	}
	golden.RequireStyled(t, h.m.render())
	h.key("r")
	if h.m.dialog != nil || !strings.Contains(h.screen(), "reason>") {
		t.Fatalf("r did not open the reason prompt:\n%s", h.screen())
	}
	h.key("esc")
	if h.m.dialog == nil || h.m.editor.Value() != "draft" {
		t.Fatalf("Esc did not go back to the dialog with the draft kept (editor %q)", h.m.editor.Value())
	}
	h.key("r")
	h.typeText("keep x; change y")
	n := len(h.sent)
	h.key("enter")
	if len(h.sent) != n+1 {
		t.Fatalf("Enter sent %d frames", len(h.sent)-n)
	}
	ar, ok := h.sent[n].(*protocol.ApprovalResolve)
	if !ok || ar.Approved || ar.Feedback != "keep x; change y" || ar.ApprovalID != "a1" {
		t.Fatalf("sent %s, want a denial with the reason", encode(h.sent[n]))
	}
	if h.m.editor.Value() != "draft" || strings.Contains(h.screen(), "reason>") {
		t.Errorf("the editor did not come back (value %q):\n%s", h.m.editor.Value(), h.screen())
	}
}

// TestCompletionAndMentions: "/co" offers /compact and /cost and Tab
// completes the first; "@" offers workspace files; a mentioned file is
// attached to the prompt and shown as one line.
func TestCompletionAndMentions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.connect("gpt-4.1-mini")
	h.m.cwd = dir // as if session.started had named it
	h.typeText("/co")
	if s := h.screen(); !strings.Contains(s, "▸ /compact") || !strings.Contains(s, "/cost") {
		t.Fatalf("no command menu for /co:\n%s", s)
	}
	h.key("tab")
	if h.m.editor.Value() != "/compact " {
		t.Errorf("Tab completed to %q", h.m.editor.Value())
	}
	h.m.editor.Reset()
	h.typeText("explain @ma")
	if !strings.Contains(h.screen(), "▸ @main.go") {
		t.Fatalf("no file suggestion for @ma:\n%s", h.screen())
	}
	h.key("tab")
	if h.m.editor.Value() != "explain @main.go " {
		t.Fatalf("Tab completed to %q", h.m.editor.Value())
	}
	h.key("enter")
	ts := last[*protocol.TurnStart](h)
	if !strings.Contains(ts.Prompt, "<attached path=\"main.go\">\npackage main\n</attached>") {
		t.Fatalf("the prompt sent lacks the attached file: %q", ts.Prompt)
	}
	h.event(turnEvent("turn.started", ts.RequestID, tid, ""))
	if s := h.screen(); !strings.Contains(s, "[attached: main.go]") || strings.Contains(s, "package main") {
		t.Errorf("the transcript does not show the attachment as one line:\n%s", s)
	}
}

// TestCommandMenuInASmallTerminal: at 60x20 the full command menu does not
// fit; it is cut from its end, so the first command (the one Tab takes)
// shows with a line saying how many more there are.
func TestCommandMenuInASmallTerminal(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.msg(tea.WindowSizeMsg{Width: 60, Height: 20})
	h.connect("gpt-4.1-mini")
	h.typeText("/")
	s := h.screen()
	if !strings.Contains(s, "▸ /clear") || !strings.Contains(s, "more: type to narrow") || strings.Contains(s, "/rules") {
		t.Fatalf("the command menu at 60x20:\n%s", s)
	}
	if lines := strings.Count(s, "\n") + 1; lines != 20 {
		t.Errorf("the frame has %d lines, want 20", lines)
	}
	h.key("tab")
	if h.m.editor.Value() != "/clear " {
		t.Errorf("Tab completed to %q", h.m.editor.Value())
	}
}

// TestRevokeRule: /revoke sends rule.revoke with the key; the answer lists
// the rules left.
func TestRevokeRule(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	h.typeText("/revoke bash:go test")
	h.key("enter")
	rr := last[*protocol.RuleRevoke](h)
	if rr.Key != "bash:go test" || rr.SessionID != sid {
		t.Fatalf("sent %s", encode(rr))
	}
	h.event(`{"type":"session.rules_listed","request_id":"` + rr.RequestID + `","session_id":"` + sid + `","rules":[]}`)
	if s := h.screen(); !strings.Contains(s, "No session rules are granted") || !strings.Contains(s, "Revoked bash:go test") {
		t.Errorf("the revocation and the rules left are not shown:\n%s", s)
	}

	// A refused revocation says so and never claims it was revoked.
	h.typeText("/revoke bash:nope")
	h.key("enter")
	rr = last[*protocol.RuleRevoke](h)
	h.event(`{"type":"error","request_id":"` + rr.RequestID + `","code":"invalid_request","message":"the session holds no rule bash:nope"}`)
	if s := h.screen(); !strings.Contains(s, "bash:nope was not revoked: the session holds no rule bash:nope.") || strings.Contains(s, "Revoked bash:nope") {
		t.Errorf("the refusal is not shown as such:\n%s", s)
	}
}

// TestPromptFromTheCommandLine: the command line's PROMPT is sent once,
// when the session is ready, as if typed.
func TestPromptFromTheCommandLine(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.m.opts.Prompt = "fix the failing tests"
	h.connect("gpt-4.1-mini")
	ts := last[*protocol.TurnStart](h)
	if ts.Prompt != "fix the failing tests" || ts.SessionID != sid {
		t.Fatalf("sent %s", encode(ts))
	}
	if h.m.opts.Prompt != "" || !h.m.editor.Empty() {
		t.Errorf("the prompt would be sent again (opts %q, editor %q)", h.m.opts.Prompt, h.m.editor.Value())
	}
}

func TestOtherNotices(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	rid := h.prompt("go").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(sessionEvent("session.trimmed", rid, `"removed_messages":250,"history_bytes":12000000`))
	h.event(turnEvent("context.compacted", rid, tid, `"before_tokens":130000,"after_tokens":96000,"removed_messages":42`))
	h.event(turnEvent("turn.completed", rid, tid, `"steps":1`))
	golden.RequirePlain(t, h.m.transcript.View())
}

func TestDemoBanner(t *testing.T) {
	t.Parallel()
	for _, w := range []int{80, 40} {
		t.Run(fmt.Sprint(w), func(t *testing.T) {
			h := newHarness(t)
			h.msg(tea.WindowSizeMsg{Width: w, Height: 20})
			h.connect("scv-demo")
			out := h.m.render()
			golden.RequireWidth(t, out, w)
			golden.RequirePlain(t, out)
			if !strings.Contains(strings.Join(strings.Fields(golden.Plain(out)), " "), "run `scv config path`") {
				t.Error("banner does not say how to configure a provider")
			}
		})
	}
}

func TestNarrowStreamingAndTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.msg(tea.WindowSizeMsg{Width: 40, Height: 22})
	h.connect("gpt-4.1-mini")
	rid := h.prompt("Fix the failing test please, it is in the pkg directory").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("tool.proposed", rid, tid, `"call_id":"c1","name":"agent","arguments":{"agent":"codex","prompt":"fix the test"}`))
	h.event(turnEvent("tool.started", rid, tid, `"call_id":"c1","name":"agent"`))
	h.event(turnEvent("tool.progress", rid, tid, `"call_id":"c1","name":"agent","line":"$ go test ./pkg/..."`))
	h.event(turnEvent("tool.completed", rid, tid, `"call_id":"c1","name":"agent","success":false,"output":"exit status 1\nline 2\nline 3\nline 4\nline 5\nline 6","truncated":true`))
	h.event(turnEvent("assistant.delta", rid, tid, `"content":"The test fails because"`))
	h.clock = h.clock.Add(75 * time.Second)
	out := h.m.render()
	golden.RequireWidth(t, out, 40)
	golden.RequirePlain(t, out)
	h.key("ctrl+o")
	if !strings.Contains(h.screen(), "line 6") {
		t.Errorf("Ctrl+O did not expand the card:\n%s", h.screen())
	}
}

func TestSeqGapAndDuplicate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	h.typeText("kept input")
	rid := "99"
	h.event(`{"type":"turn.started","request_id":"` + rid + `","session_id":"` + sid + `","turn_id":"` + tid + `","seq":2}`)
	h.event(`{"type":"assistant.delta","request_id":"` + rid + `","session_id":"` + sid + `","turn_id":"` + tid + `","seq":3,"content":"once"}`)
	h.event(`{"type":"assistant.delta","request_id":"` + rid + `","session_id":"` + sid + `","turn_id":"` + tid + `","seq":3,"content":"once"}`)
	if strings.Contains(h.screen(), "onceonce") {
		t.Error("a duplicate event was applied")
	}
	if !strings.Contains(h.m.warning, "duplicate") {
		t.Errorf("warning = %q", h.m.warning)
	}
	h.event(`{"type":"assistant.delta","request_id":"` + rid + `","session_id":"` + sid + `","turn_id":"` + tid + `","seq":7,"content":" and more"}`)
	if !strings.Contains(h.m.warning, "events 4 to 6 were lost") {
		t.Errorf("warning = %q", h.m.warning)
	}
	if h.m.editor.Value() != "kept input" {
		t.Errorf("input lost: %q", h.m.editor.Value())
	}
	golden.RequirePlain(t, h.m.render())
	// Events of another session are ignored, seq and all.
	h.event(`{"type":"assistant.delta","request_id":"1","session_id":"other","turn_id":"` + tid + `","seq":1,"content":"foreign"}`)
	if strings.Contains(h.screen(), "foreign") {
		t.Error("an event of another session was shown")
	}
	// Ctrl+R restarts; ServerStarted resumes the session.
	h.run(h.msg(keyMsg("ctrl+r")))
	if h.restarts != 1 {
		t.Fatalf("restarts = %d", h.restarts)
	}
	h.msg(ServerStarted{})
	ini := last[*protocol.Initialize](h)
	h.event(`{"type":"initialized","request_id":"` + ini.RequestID + `","protocol_version":4,"server":{"name":"scv-server","version":"0.1.0"}}`)
	if ss := last[*protocol.SessionStart](h); ss.Resume != sid {
		t.Errorf("restart did not resume the session: %s", encode(ss))
	}
}

func TestServerProblems(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	rid := h.prompt("go").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.typeText("half-typed")
	h.msg(ServerProblem{Err: errors.New(`line 7 is not JSON: "panic: oops"`)})
	if !strings.Contains(h.screen(), "cannot read") || h.m.phase != ready {
		t.Errorf("non-JSON problem:\n%s", h.screen())
	}
	h.key("esc") // cancels the turn; the problem stays
	if h.m.problem == "" {
		t.Error("Esc dismissed the problem instead of cancelling the turn")
	}
	last[*protocol.TurnCancel](h)
	h.event(sessionEvent("queue.enqueued", "77", `"entry":{"queue_id":"qz","revision":1,"prompt":"queued before the crash","submitter":"scv-tui","position":0}`))
	h.msg(ServerProblem{Err: errors.New("exit status 2"), Exited: true})
	if h.m.queue.Len() != 0 || !strings.Contains(h.screen(), "queued before the crash") {
		t.Errorf("the dead server's queue was not listed and cleared:\n%s", h.screen())
	}
	if h.m.phase != disconnected || h.m.turnID != "" {
		t.Error("exit did not end the connection and the turn")
	}
	if h.m.editor.Value() != "half-typed" {
		t.Errorf("input lost: %q", h.m.editor.Value())
	}
	golden.RequirePlain(t, h.m.render())
	h.key("enter")
	if _, ok := h.sent[len(h.sent)-1].(*protocol.TurnStart); ok && h.sent[len(h.sent)-1].(*protocol.TurnStart).Prompt == "half-typed" {
		t.Error("a prompt was sent to a stopped server")
	}
	// Restart fails, then works.
	h.m.opts.Restart = func() error { return errors.New("scv-server not found") }
	h.run(h.msg(keyMsg("ctrl+r")))
	if !strings.Contains(h.screen(), "could not be restarted: scv-server not found") {
		t.Errorf("restart failure not shown:\n%s", h.screen())
	}
	// Send failing is a problem too, and keeps the input.
	h.m.opts.Restart = func() error { return nil }
	h.run(h.msg(keyMsg("ctrl+r")))
	h.sendErr = errors.New("the send queue is full")
	h.msg(ServerStarted{})
	if !strings.Contains(h.screen(), "the send queue is full") {
		t.Errorf("send failure not shown:\n%s", h.screen())
	}
}

func TestQuit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if cmd := h.msg(keyMsg("ctrl+c")); cmd != nil {
		t.Fatal("one Ctrl+C quit")
	}
	if cmd := h.msg(keyMsg("ctrl+c")); cmd == nil || cmd() != (tea.QuitMsg{}) {
		t.Error("Ctrl+C twice did not quit")
	}
	h.key("ctrl+c", "x") // another key disarms
	if cmd := h.msg(keyMsg("ctrl+c")); cmd != nil {
		t.Error("Ctrl+C after another key quit at once")
	}
	h.m.editor.Reset()
	h.typeText("/quit")
	if cmd := h.msg(keyMsg("enter")); cmd == nil || cmd() != (tea.QuitMsg{}) {
		t.Error("/quit did not quit")
	}
}

func TestResumePicker(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	h.typeText("/resume")
	h.key("enter")
	sl := last[*protocol.SessionList](h)
	if sl.Cwd != ws {
		t.Errorf("session.list = %s", encode(sl))
	}
	h.event(`{"type":"session.listed","request_id":"` + sl.RequestID + `","sessions":[{"session_id":"` + sid + `","cwd":"` + ws + `","title":"This one","created_at":"2026-12-01T08:00:00Z","updated_at":"2026-12-01T09:00:00Z","turns":1,"bytes":10},{"session_id":"11111111-2222-4333-8444-555555555555","cwd":"` + ws + `","title":"Fix the failing test.","created_at":"2026-12-01T08:00:00Z","updated_at":"2026-12-01T08:05:00Z","turns":2,"bytes":18432}]}`)
	if h.m.picker == nil {
		t.Fatal("picker not open")
	}
	t.Run("picker", func(t *testing.T) { golden.RequirePlain(t, h.m.render()) })
	h.key("down", "enter")
	ss := last[*protocol.SessionStart](h)
	if ss.Resume != "11111111-2222-4333-8444-555555555555" {
		t.Fatalf("session.start = %s", encode(ss))
	}
	h.seq = 0
	h.event(`{"type":"session.started","request_id":"` + ss.RequestID + `","session_id":"11111111-2222-4333-8444-555555555555","cwd":"` + ws + `","model":"gpt-4.1-mini","context_max_tokens":128000,"max_server_frame_bytes":8388608,"max_transcript_bytes":8388608,"max_transcript_items":10000,"max_prompt_history_bytes":1048576,"max_prompt_history_items":200,"resumed":true,"usage":{"input_tokens":5400,"output_tokens":610}}`)
	h.event(`{"type":"session.replay","request_id":"` + ss.RequestID + `","session_id":"11111111-2222-4333-8444-555555555555","items":[{"kind":"user","turn_id":"t1","text":"Fix the failing test."},{"kind":"tool","turn_id":"t1","text":"exit status 1","call_id":"call_1","name":"bash","arguments":{"command":"go test ./..."},"success":false},{"kind":"assistant","turn_id":"t1","text":"The test expects a trailing newline."},{"kind":"notice","turn_id":"t2","text":"This turn was interrupted: the server stopped before it ended.","interrupted":true}],"done":true}`)
	h.event(`{"type":"queue.snapshot","request_id":"` + ss.RequestID + `","session_id":"11111111-2222-4333-8444-555555555555","seq":1,"entries":[]}`)
	if h.m.sessionID != "11111111-2222-4333-8444-555555555555" || h.m.lastSeq != 1 {
		t.Errorf("session %q seq %d", h.m.sessionID, h.m.lastSeq)
	}
	t.Run("replayed", func(t *testing.T) { golden.RequirePlain(t, h.m.transcript.View()) })
}

func TestResumeRefusedAtStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.m.resumeID = "11111111-2222-4333-8444-555555555555"
	h.msg(ServerStarted{})
	ini := last[*protocol.Initialize](h)
	h.event(`{"type":"initialized","request_id":"` + ini.RequestID + `","protocol_version":4,"server":{"name":"scv-server","version":"0.1.0"}}`)
	ss := last[*protocol.SessionStart](h)
	if ss.Resume == "" {
		t.Fatal("Options.Resume not used")
	}
	h.event(`{"type":"error","request_id":"` + ss.RequestID + `","code":"session_not_found","message":"no stored session has id 1111","fatal":false}`)
	if ss2 := last[*protocol.SessionStart](h); ss2.Resume != "" || ss2.RequestID == ss.RequestID {
		t.Errorf("no fresh session.start after a refused resume: %s", encode(ss2))
	}
}

// TestCtrlCInterrupts: Ctrl+C during a turn cancels it (pausing a
// non-empty queue first) and a second one within the window quits.
func TestCtrlCInterrupts(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	clock := time.Unix(1_000_000, 0)
	h.m.now = func() time.Time { return clock }
	h.connect("gpt-4.1-mini")
	rid := h.prompt("long task").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(sessionEvent("queue.enqueued", "77", `"entry":{"queue_id":"qa","revision":1,"prompt":"next one","submitter":"scv-tui","position":0}`))
	n := len(h.sent)
	if cmd := h.msg(keyMsg("ctrl+c")); cmd != nil {
		t.Fatal("Ctrl+C during a turn quit instead of interrupting it")
	}
	if len(h.sent) != n+2 {
		t.Fatalf("Ctrl+C sent %d frames, want session.pause then turn.cancel", len(h.sent)-n)
	}
	if p, ok := h.sent[n].(*protocol.SessionPause); !ok || !p.Paused {
		t.Errorf("first frame after Ctrl+C = %s, want session.pause paused:true", encode(h.sent[n]))
	}
	if tc, ok := h.sent[n+1].(*protocol.TurnCancel); !ok || tc.TurnID != tid {
		t.Errorf("second frame after Ctrl+C = %s, want turn.cancel", encode(h.sent[n+1]))
	}
	if !strings.Contains(h.screen(), "Press Ctrl+C again to quit") {
		t.Errorf("no hint after the interrupt:\n%s", h.screen())
	}
	clock = clock.Add(quitWindow + time.Second)
	if cmd := h.msg(keyMsg("ctrl+c")); cmd != nil {
		t.Error("a Ctrl+C long after the interrupt quit at once")
	}
	if cmd := h.msg(keyMsg("ctrl+c")); cmd == nil || cmd() != (tea.QuitMsg{}) {
		t.Error("a second Ctrl+C on the idle prompt did not quit")
	}
}

// TestCancelledCallKeepsOutput: a call running when its turn is cancelled
// gets no tool.completed; its card stops and keeps the output it showed.
func TestCancelledCallKeepsOutput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	rid := h.prompt("build it").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("tool.proposed", rid, tid, `"call_id":"c1","name":"bash","arguments":{"command":"make"}`))
	h.event(turnEvent("tool.started", rid, tid, `"call_id":"c1","name":"bash"`))
	h.event(turnEvent("tool.progress", rid, tid, `"call_id":"c1","name":"bash","line":"compiling pkg/a"`))
	h.key("esc")
	h.event(turnEvent("turn.cancelled", rid, tid, ""))
	s := h.screen()
	if !strings.Contains(s, "stopped: the turn was cancelled") || !strings.Contains(s, "compiling pkg/a") {
		t.Errorf("the cancelled call's card lost its output or did not stop:\n%s", s)
	}
}

// TestEscPausesQueue: Esc cancels the turn and pauses a non-empty queue so
// the next prompt waits for the user.
func TestEscPausesQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	rid := h.prompt("long task").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	n := len(h.sent)
	h.key("esc")
	if len(h.sent) != n+1 {
		t.Fatalf("Esc with an empty queue sent %d frames, want turn.cancel only", len(h.sent)-n)
	}
	h.event(turnEvent("turn.cancelled", rid, tid, ""))
	rid = h.prompt("second task").RequestID
	h.event(turnEvent("turn.started", rid, tid2, ""))
	h.event(sessionEvent("queue.enqueued", "78", `"entry":{"queue_id":"qb","revision":1,"prompt":"third","submitter":"scv-tui","position":0}`))
	n = len(h.sent)
	h.key("esc")
	if p, ok := h.sent[n].(*protocol.SessionPause); !ok || !p.Paused {
		t.Fatalf("Esc with a queue sent %s first, want session.pause", encode(h.sent[n]))
	}
	if !strings.Contains(h.screen(), "the queue is paused") {
		t.Errorf("no word of the paused queue:\n%s", h.screen())
	}
}

func TestHistoryRecallAndPaste(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	h.key("up")
	if h.m.editor.Value() != "an older prompt" {
		t.Errorf("Up recalled %q", h.m.editor.Value())
	}
	h.m.editor.Reset()
	big := strings.Repeat("pasted text line\n", 20000)
	h.msg(tea.PasteMsg{Content: big})
	if h.m.editor.Value() != big {
		t.Error("paste not inserted whole")
	}
	golden.RequireWidth(t, h.m.render(), 80)
	h.key("enter")
	if _, ok := h.sent[len(h.sent)-1].(*protocol.TurnStart); ok {
		t.Error("a prompt over the limit was sent")
	}
	if !strings.Contains(h.screen(), "over the 262144-byte limit") {
		t.Errorf("no limit message:\n%s", h.screen())
	}
	// A refused turn.start puts the prompt back.
	h.m.editor.Reset()
	ts := h.prompt("refused prompt")
	h.event(`{"type":"error","request_id":"` + ts.RequestID + `","code":"invalid_request","message":"prompt is empty","fatal":false}`)
	if h.m.editor.Value() != "refused prompt" {
		t.Errorf("refused prompt not restored: %q", h.m.editor.Value())
	}
}

func TestScrollKeysAndMouse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	for i := range 50 {
		h.m.transcript.AddNotice(0, fmt.Sprintf("notice %d", i))
	}
	h.key("pgup")
	if h.m.transcript.Following() {
		t.Error("PgUp did not scroll")
	}
	h.key("end")
	h.msg(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	if h.m.transcript.Following() {
		t.Error("wheel did not scroll")
	}
	h.key("home")
	if !strings.Contains(h.screen(), "notice 0") {
		t.Error("Home does not show the first item")
	}
	// Resize at any time, down to tiny sizes.
	for _, sz := range [][2]int{{40, 10}, {10, 3}, {1, 1}, {200, 60}} {
		h.msg(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
		out := h.m.render()
		if n := strings.Count(out, "\n") + 1; n != sz[1] {
			t.Errorf("%dx%d: %d lines", sz[0], sz[1], n)
		}
		golden.RequireWidth(t, out, sz[0])
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	h.typeText("/help")
	h.key("enter")
	out := h.screen()
	if !strings.Contains(out, "/home/ana/.scv/logs/scv-tui-server.log") || !strings.Contains(out, "/compact") {
		t.Errorf("help:\n%s", out)
	}
	golden.RequirePlain(t, h.m.render())
	h.key("esc")
	if h.m.help {
		t.Error("help still open")
	}
}

// TestHelpWrapsUnderItsColumn: in a terminal narrower than the help, a
// key's description goes on under the description's column, not at the
// left edge.
func TestHelpWrapsUnderItsColumn(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	h.msg(tea.WindowSizeMsg{Width: 50, Height: 60})
	lines := strings.Split(h.m.helpText(), "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "  Enter ") {
			next := lines[i+1]
			if col := len(next) - len(strings.TrimLeft(next, " ")); col != 19 || !strings.Contains(l, "send the prompt") {
				t.Fatalf("the Enter line wraps as\n%s\n%s\nwant the rest at column 19", l, next)
			}
			return
		}
	}
	t.Fatalf("no Enter line in the help:\n%s", strings.Join(lines, "\n"))
}

// TestOverlaysAtSmallSizes: the help scrolls when it does not fit, and
// every overlay (help, session picker, /mcp, an approval) keeps the
// screen's exact height and width down to 40x12.
func TestOverlaysAtSmallSizes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	h.msg(tea.WindowSizeMsg{Width: 60, Height: 20})
	h.typeText("/help")
	h.key("enter")
	if s := h.screen(); !strings.Contains(s, "Keys") || !strings.Contains(s, "scroll") {
		t.Fatalf("the top of the help, with how to scroll, is not shown at 60x20:\n%s", s)
	}
	h.key("end")
	if s := h.screen(); !strings.Contains(s, "Any key closes this help.") || strings.Contains(s, "Keys\n") {
		t.Errorf("End did not scroll the help to its last line:\n%s", s)
	}
	h.key("home", "down")
	if !h.m.help || h.m.helpScroll != 1 {
		t.Errorf("Home, Down: help open %v at line %d, want open at 1", h.m.help, h.m.helpScroll)
	}
	check := func(what string) {
		t.Helper()
		for _, sz := range [][2]int{{60, 20}, {40, 12}} {
			h.msg(tea.WindowSizeMsg{Width: sz[0], Height: sz[1]})
			out := h.m.render()
			if n := strings.Count(out, "\n") + 1; n != sz[1] {
				t.Errorf("%s at %dx%d: %d lines", what, sz[0], sz[1], n)
			}
			golden.RequireWidth(t, out, sz[0])
		}
	}
	check("help")
	h.key("esc")
	h.typeText("/mcp")
	h.key("enter")
	check("/mcp")
	h.key("esc")
	rid := h.prompt("go").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("tool.proposed", rid, tid, `"call_id":"c1","name":"bash","arguments":{"command":"rm -rf build && make all && make test && make install PREFIX=/usr/local"}`))
	h.event(turnEvent("approval.requested", rid, tid, `"approval_id":"a1","call_id":"c1","name":"bash","risk":"execute","summary":"rm -rf build && make all && make test","arguments":{"command":"rm -rf build"}`))
	check("approval")
}

// TestHandshakeWire: the TUI's initialize is shared/client's Hello, with
// the bytes the TUI always sent (version 3, its name, SCV's version).
func TestHandshakeWire(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.msg(ServerStarted{})
	ini := last[*protocol.Initialize](h)
	got, err := protocol.EncodeClientMessage(ini)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"initialize","request_id":"` + ini.RequestID + `","protocol_version":4,"client":{"name":"scv-tui","version":"` + version.Version + `"}}`
	if strings.TrimSpace(string(got)) != want {
		t.Errorf("initialize on the wire:\n got %s\nwant %s", got, want)
	}
	if ini.ProtocolVersion != protocol.Version4 {
		t.Errorf("initialize asks for version %d, not 4", ini.ProtocolVersion)
	}
}

// TestHandshakeVersionMismatch: a server answering with another version
// is a problem the user can act on, and no session is started.
func TestHandshakeVersionMismatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.msg(ServerStarted{})
	ini := last[*protocol.Initialize](h)
	h.event(`{"type":"initialized","request_id":"` + ini.RequestID + `","protocol_version":3,"server":{"name":"scv-server","version":"0.1.0"}}`)
	if m := h.sent[len(h.sent)-1]; m != protocol.ClientMessage(ini) {
		t.Errorf("sent %s after a version mismatch", encode(m))
	}
	want := "The server answered with protocol version 3; this client speaks version 4. Update scv-server, then press Ctrl+R."
	if h.m.problem != want {
		t.Errorf("problem = %q, want %q", h.m.problem, want)
	}
	// After a restart the handshake is new and succeeds.
	h.msg(ServerStarted{})
	ini = last[*protocol.Initialize](h)
	h.event(`{"type":"initialized","request_id":"` + ini.RequestID + `","protocol_version":4,"server":{"name":"scv-server","version":"0.1.0"}}`)
	last[*protocol.SessionStart](h)
	if h.m.problem != "" {
		t.Errorf("the problem stayed after a good handshake: %q", h.m.problem)
	}
}

// TestMCPView: /mcp shows the MCP servers session.started listed, with
// their states, errors and tools; Esc closes it and the editor has the
// keys again. Without servers it says how to add one.
func TestMCPView(t *testing.T) {
	t.Parallel()
	t.Run("servers", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.msg(tea.WindowSizeMsg{Width: 80, Height: 24})
		h.connectWith("gpt-4.1-mini", `,"mcp_servers":[`+
			`{"name":"files","state":"ready","tools":["mcp__files__read_file","mcp__files__list_directory"]},`+
			`{"name":"github","state":"failed","tools":[],"error":"the server exited during initialize: exit status 1"},`+
			`{"name":"old","state":"disabled","tools":[]}]`)
		sent := len(h.sent)
		h.typeText("/mcp")
		h.key("enter")
		if h.m.mcpView == nil {
			t.Fatalf("/mcp did not open the view; flash %q", h.m.flash)
		}
		if len(h.sent) != sent {
			t.Errorf("/mcp sent %s: the list is from session.started", encode(h.sent[len(h.sent)-1]))
		}
		out := h.screen()
		for _, want := range []string{"MCP servers (3)", "files · ready · 2 tools", "  mcp__files__read_file", "  mcp__files__list_directory",
			"github · failed", "  the server exited during initialize: exit status 1", "old · disabled", "Esc close"} {
			if !strings.Contains(out, want) {
				t.Errorf("%q is not on the screen:\n%s", want, out)
			}
		}
		t.Run("screen", func(t *testing.T) { golden.RequirePlain(t, h.m.render()) })
		h.typeText("x") // keys go to the view, not the editor
		if h.m.editor.Value() != "" {
			t.Errorf("the editor took %q while /mcp was open", h.m.editor.Value())
		}
		h.key("esc")
		if h.m.mcpView != nil {
			t.Fatal("Esc did not close the view")
		}
		if h.m.turnID != "" || strings.Contains(h.screen(), "MCP servers") {
			t.Errorf("after Esc:\n%s", h.screen())
		}
	})
	t.Run("none", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.msg(tea.WindowSizeMsg{Width: 100, Height: 24})
		h.connect("gpt-4.1-mini")
		h.typeText("/mcp")
		h.key("enter")
		if out := h.screen(); !strings.Contains(out, "No MCP servers are configured; add one with `scv mcp add`.") {
			t.Errorf("the empty view is not shown:\n%s", out)
		}
		h.key("esc")
		if h.m.mcpView != nil {
			t.Fatal("Esc did not close the view")
		}
	})
	t.Run("before the session", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		h.msg(ServerStarted{})
		h.typeText("/mcp")
		h.key("enter")
		if h.m.mcpView != nil || h.m.flash != "Not connected to a session yet." {
			t.Errorf("view %v, flash %q", h.m.mcpView != nil, h.m.flash)
		}
	})
}
