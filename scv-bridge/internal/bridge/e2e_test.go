package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/bridgetest"
	"github.com/scv-cli/scv/scv-bridge/internal/feishu/feishutest"
	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit"
	"github.com/scv-cli/scv/shared/testkit/bins"
)

func TestMain(m *testing.M) { os.Exit(bridgetest.Main(m)) }

type rig struct {
	fs    *feishutest.Server
	model *fakeopenai.Server
	opts  Options
	acct  FeishuAccount
}

func newRig(t *testing.T, replies ...fakeopenai.Reply) *rig {
	t.Helper()
	fs := feishutest.New()
	t.Cleanup(fs.Close)
	model := fakeopenai.Start(t, replies...)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(model.Config("")), 0o600); err != nil {
		t.Fatal(err)
	}
	return &rig{fs: fs, model: model,
		opts: Options{Home: home, Archive: filepath.Join(home, "archive"), Cwd: t.TempDir(),
			ServerPath: bins.Need(t, "scv-server"), ServerEnv: append(os.Environ(), "SCV_HOME="+home),
			HTTPClient: fs.Client(), Quiet: 20 * time.Millisecond, Log: slog.New(slog.NewTextHandler(testLogOut(), nil))},
		acct: FeishuAccount{Name: "work", Secret: feishutest.AppSecret,
			Config: config.FeishuAccount{AppID: feishutest.AppID, BaseURL: fs.URL, OwnerOpenID: "ou_owner"}}}
}

// rehome moves the rig to SCV_HOME home (for a test that needs its path
// before the model's script is written).
func (r *rig) rehome(t *testing.T, home string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.opts.Home, "config.toml"))
	if err == nil {
		err = os.WriteFile(filepath.Join(home, "config.toml"), data, 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.opts.Home, r.opts.Archive = home, filepath.Join(home, "archive")
	r.opts.ServerEnv = append(r.opts.ServerEnv, "SCV_HOME="+home)
}

// start runs the account until the returned stop is called.
func (r *rig) start(t *testing.T) func() error {
	return runUntilStopped(t, func(ctx context.Context) error { return RunFeishu(ctx, r.opts, r.acct) })
}

// runUntilStopped runs an account's run function until the returned stop
// is called (or the test ends); stop cancels it and returns its result.
func runUntilStopped(t *testing.T, run func(context.Context) error) func() error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var err error
	stopped := false
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			err = <-done
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// shown is what the user sees of m: a card's final text, or the content.
func (r *rig) shown(m feishutest.Message) string {
	if card := r.fs.Card(cardID(m)); card != nil {
		return card.Text
	}
	return m.Content
}

// done says the fake holds n messages and none is a card still streaming.
func (r *rig) done(n int) bool {
	msgs := r.fs.Messages()
	if len(msgs) != n {
		return false
	}
	for _, m := range msgs {
		if id := cardID(m); id != "" {
			if c := r.fs.Card(id); c == nil || c.Streaming {
				return false
			}
		}
	}
	return true
}

func cardID(m feishutest.Message) string {
	var c struct {
		Data struct {
			CardID string `json:"card_id"`
		} `json:"data"`
	}
	if m.MsgType != "interactive" || json.Unmarshal([]byte(m.Content), &c) != nil {
		return ""
	}
	return c.Data.CardID
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, 30*time.Second, what, cond)
}

func TestFeishuOwnerRoundTripAndRedelivery(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeopenai.Script(fakeopenai.Text("Hello from SCV.")))
	stop := r.start(t)
	ev := feishutest.MessageEvent("om_in1", "oc_owner", "p2p", "ou_owner", "text", map[string]string{"text": "hi"})
	r.fs.PushEvent(ev)
	waitFor(t, "the reply", func() bool { return r.done(1) })
	m := r.fs.Messages()[0]
	if m.ReplyTo != "om_in1" || !strings.Contains(r.shown(m), "Hello from SCV.") {
		t.Fatalf("reply %+v", m)
	}
	r.fs.PushEvent(ev) // the platform delivers the same message again
	waitFor(t, "the redelivery's ack", func() bool { return len(r.fs.Acks()) >= 2 })
	time.Sleep(300 * time.Millisecond)
	if n, reqs := len(r.fs.Messages()), len(r.model.Requests()); n != 1 || reqs != 1 {
		t.Fatalf("after a redelivery: %d messages, %d model requests; want 1 and 1", n, reqs)
	}
	if err := stop(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("RunFeishu = %v", err)
	}
	// The owner's chat is logged.
	if _, err := os.Stat(filepath.Join(r.opts.Archive, "feishu", "work", "oc_owner")); err != nil {
		t.Fatalf("no chat log: %v", err)
	}
}

func TestSecondBridgeForTheSameAccountIsRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.start(t)
	waitFor(t, "the long connection", func() bool { return r.fs.Live() == 1 })
	err := RunFeishu(context.Background(), r.opts, r.acct)
	if !errors.Is(err, store.ErrLocked) {
		t.Fatalf("a second bridge = %v, want ErrLocked", err)
	}
}

// A crash after the reply was queued and before it was sent: the next
// run sends it, and the user sees it once.
func TestQueuedReplySentAfterRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeopenai.Script(fakeopenai.Text("Answer.")))
	st, err := store.Open(StorePath(r.opts.Home, "feishu", "work"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Enqueue("oc_owner", "text", []byte(`{"conversation":"oc_owner","text":"left by a crash"}`)); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	r.start(t)
	waitFor(t, "the queued reply", func() bool { return len(r.fs.Messages()) == 1 })
	time.Sleep(200 * time.Millisecond)
	if msgs := r.fs.Messages(); len(msgs) != 1 || !strings.Contains(msgs[0].Content, "left by a crash") {
		t.Fatalf("messages %+v", msgs)
	}
}

// fakeClaude answers like `claude -p --output-format stream-json`.
const fakeClaude = `#!/bin/bash
for last; do :; done
printf '{"type":"result","subtype":"success","is_error":false,"result":"delegated: %s","session_id":"s-1","usage":{"input_tokens":7,"output_tokens":3}}\n' "$last"
`

// TestBackgroundReportArrivesUnprompted: the owner's session starts a
// background agent job; when it finishes, the server's report turn is sent
// to the owner's chat as a message of its own (no reply to any message).
func TestBackgroundReportArrivesUnprompted(t *testing.T) {
	t.Parallel()
	r := newRig(t,
		fakeopenai.Script(fakeopenai.ToolCall("call_1", "agent", `{"agent":"claude","prompt":"land the fix","background":true}`)),
		fakeopenai.Script(fakeopenai.Text("Started job-1.")),
		fakeopenai.Script(fakeopenai.Text("job-1 finished: the fix landed.")))
	userHome := t.TempDir()
	bin := filepath.Join(userHome, ".local", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(fakeClaude), 0o755); err != nil {
		t.Fatal(err)
	}
	r.opts.ServerEnv = append(r.opts.ServerEnv, "HOME="+userHome)
	r.start(t)
	r.fs.PushEvent(feishutest.MessageEvent("om_in1", "oc_owner", "p2p", "ou_owner", "text", map[string]string{"text": "delegate it"}))
	waitFor(t, "the answer and the report", func() bool { return r.done(2) })
	msgs := r.fs.Messages()
	if msgs[0].ReplyTo != "om_in1" || !strings.Contains(r.shown(msgs[0]), "Started job-1.") {
		t.Fatalf("the answer = %+v", msgs[0])
	}
	if msgs[1].ReplyTo != "" || msgs[1].ReceiveID != "oc_owner" || !strings.Contains(msgs[1].Content, "job-1 finished: the fix landed.") {
		t.Fatalf("the report = %+v, want an unprompted message in the owner's chat", msgs[1])
	}
}

// TestGroupMessagesNeedAMention: in a group only messages that mention the
// bot reach SCV, in a tool-free session, with the mention removed.
func TestGroupMessagesNeedAMention(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeopenai.Script(fakeopenai.Text("Hello group.")))
	r.start(t)
	r.fs.PushEvent(feishutest.MessageEvent("om_g1", "oc_group", "group", "ou_owner", "text", map[string]string{"text": "chatting among ourselves"}))
	r.fs.PushEvent(feishutest.MessageEvent("om_g2", "oc_group", "group", "ou_someone", "text",
		map[string]string{"text": "@_user_1 what time is it?"}, [3]string{"@_user_1", feishutest.BotOpenID, "SCV"}))
	waitFor(t, "the reply", func() bool { return len(r.fs.Messages()) == 1 })
	time.Sleep(200 * time.Millisecond)
	msgs, reqs := r.fs.Messages(), r.model.Requests()
	if len(msgs) != 1 || msgs[0].ReplyTo != "om_g2" || len(reqs) != 1 {
		t.Fatalf("messages %+v, %d model requests; want one answer to the mention", msgs, len(reqs))
	}
	last := reqs[0].Messages[len(reqs[0].Messages)-1].Content
	if last != "what time is it?" || len(reqs[0].ToolNames()) != 0 {
		t.Fatalf("the model got %q with tools %v; want the text without the mention, no tools", last, reqs[0].ToolNames())
	}
}

func testLogOut() io.Writer {
	if os.Getenv("BRIDGE_TEST_LOG") != "" {
		return os.Stderr
	}
	return io.Discard
}
