package core

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/shared/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeAgent records sessions and turns; a turn whose prompt contains
// "block" waits for its context.
type fakeAgent struct {
	mu      sync.Mutex
	starts  []protocol.SessionStart
	prompts []string
	closed  int
	started chan string
	reports []func(string)
}

func (a *fakeAgent) Start(_ context.Context, req protocol.SessionStart, report func(string)) (Session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.starts = append(a.starts, req)
	a.reports = append(a.reports, report)
	return &fakeSession{a: a}, nil
}

type fakeSession struct{ a *fakeAgent }

func (s *fakeSession) Turn(ctx context.Context, p string) (string, error) {
	s.a.mu.Lock()
	s.a.prompts = append(s.a.prompts, p)
	s.a.mu.Unlock()
	if s.a.started != nil {
		s.a.started <- p
	}
	if strings.Contains(p, "block") {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return "answer to: " + p, nil
}

func (s *fakeSession) Close() error { s.a.mu.Lock(); s.a.closed++; s.a.mu.Unlock(); return nil }

func (a *fakeAgent) snapshot() ([]protocol.SessionStart, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]protocol.SessionStart(nil), a.starts...), append([]string(nil), a.prompts...)
}

type env struct {
	t     *testing.T
	dir   string
	st    *store.Store
	agent *fakeAgent
	core  *Core
	stop  func()
}

func start(t *testing.T, dir string, mod func(*Config)) *env {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "bridge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Platform: "feishu", Account: "work", Owner: "ou_owner", Archive: filepath.Join(dir, "archive"),
		Cwd: dir, Quiet: 50 * time.Millisecond, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&cfg)
	}
	e := &env{t: t, dir: dir, st: st, agent: &fakeAgent{}}
	e.core = New(cfg, st, e.agent, nil)
	ctx, cancel := context.WithCancel(context.Background())
	if err := e.core.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	e.stop = func() { once.Do(func() { cancel(); e.core.Wait(); _ = st.Close() }) }
	t.Cleanup(e.stop)
	return e
}

func (e *env) accept(id, conv, sender string, direct bool, text string) {
	e.t.Helper()
	if err := e.core.Accept(Message{ID: id, Conversation: conv, Sender: sender, Direct: direct, Text: text}); err != nil {
		e.t.Fatal(err)
	}
}

// replies waits until the outbox holds n replies and returns their texts.
func (e *env) replies(n int) []string {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rows, err := e.st.Rows("")
		if err != nil {
			e.t.Fatal(err)
		}
		if len(rows) >= n {
			var out []string
			for _, r := range rows {
				var rp Reply
				_ = json.Unmarshal(r.Payload, &rp)
				out = append(out, rp.Text)
			}
			return out
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %d replies; have %d", n, len(rows))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestOwnerAndStrangerSessions(t *testing.T) {
	t.Parallel()
	e := start(t, t.TempDir(), nil)
	e.accept("m1", "oc_owner", "ou_owner", true, "hello")
	e.accept("m2", "oc_other", "ou_stranger", true, "hi")
	e.replies(2)
	starts, _ := e.agent.snapshot()
	var owner, stranger *protocol.SessionStart
	for i := range starts {
		if starts[i].Channel != nil {
			owner = &starts[i]
		} else {
			stranger = &starts[i]
		}
	}
	if owner == nil || !owner.AutoApprove || !owner.Channel.Log || owner.Channel.Conversation != "oc_owner" ||
		owner.Channel.Platform != "feishu" || owner.Channel.Account != "work" || owner.Tools != nil {
		t.Fatalf("the owner's session = %+v, want tools, channel with log, auto_approve", owner)
	}
	if stranger == nil || stranger.Tools == nil || *stranger.Tools || stranger.AutoApprove {
		t.Fatalf("the stranger's session = %+v, want tools:false", stranger)
	}
	// Only the owner's chat is logged.
	if _, err := os.Stat(filepath.Join(e.dir, "archive", "feishu", "work", "oc_owner")); err != nil {
		t.Fatalf("the owner's chat log is missing: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "archive", "feishu", "work", "oc_other")); !os.IsNotExist(err) {
		t.Fatalf("a stranger's chat was logged (%v)", err)
	}
}

func TestGatedSenderNeverReachesAModel(t *testing.T) {
	t.Parallel()
	e := start(t, t.TempDir(), func(c *Config) { c.Allow = func(s string) bool { return s == "ou_friend" } })
	e.accept("m1", "oc_x", "ou_blocked", true, "hello")
	e.accept("m2", "oc_y", "ou_friend", true, "hello")
	e.replies(1)
	time.Sleep(150 * time.Millisecond)
	if starts, prompts := e.agent.snapshot(); len(starts) != 1 || len(prompts) != 1 {
		t.Fatalf("sessions %d, turns %d; want only the allowed sender's", len(starts), len(prompts))
	}
	if got, _ := e.st.Unprocessed(); len(got) != 0 {
		t.Fatalf("the gated message was left unprocessed: %+v", got)
	}
}

func TestBurstIsOneTurnAndRedeliveryIgnored(t *testing.T) {
	t.Parallel()
	e := start(t, t.TempDir(), func(c *Config) { c.Quiet = 200 * time.Millisecond })
	e.accept("m1", "oc_owner", "ou_owner", true, "look at this")
	e.accept("m2", "oc_owner", "ou_owner", true, "and this")
	e.accept("m1", "oc_owner", "ou_owner", true, "look at this") // redelivered
	got := e.replies(1)
	time.Sleep(300 * time.Millisecond)
	_, prompts := e.agent.snapshot()
	if len(prompts) != 1 || prompts[0] != "look at this\n\nand this" {
		t.Fatalf("turns %q, want one turn of both messages once", prompts)
	}
	if !strings.Contains(got[0], "and this") {
		t.Fatalf("reply %q", got[0])
	}
}

func TestMessagesDuringATurnBecomeTheNextTurn(t *testing.T) {
	t.Parallel()
	e := start(t, t.TempDir(), nil)
	e.agent.started = make(chan string, 4)
	e.accept("m1", "oc_owner", "ou_owner", true, "block please")
	<-e.agent.started
	e.accept("m2", "oc_owner", "ou_owner", true, "second")
	e.accept("m3", "oc_owner", "ou_owner", true, "/stop")
	got := e.replies(1)
	if got[0] != "Stopped. 1 waiting message(s) were not sent to SCV." {
		t.Fatalf("the /stop reply = %q", got[0])
	}
	e.accept("m4", "oc_owner", "ou_owner", true, "third")
	got = e.replies(2)
	_, prompts := e.agent.snapshot()
	if len(prompts) != 2 || prompts[1] != "third" || got[1] != "answer to: third" {
		t.Fatalf("turns %q, replies %q: /stop must cancel the turn and drop the waiting message", prompts, got)
	}
}

func TestStopBypassesTheQueue(t *testing.T) {
	t.Parallel()
	e := start(t, t.TempDir(), nil)
	e.agent.started = make(chan string, 4)
	e.accept("m1", "oc_owner", "ou_owner", true, "block forever")
	<-e.agent.started
	e.accept("m2", "oc_owner", "ou_owner", true, "@_user_1 /STOP")
	if got := e.replies(1); got[0] != "Stopped." {
		t.Fatalf("reply %q", got)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, _ := e.st.Unprocessed()
		if len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled turn's message stays unprocessed: %s", got[0].ID)
		}
	}
}

func TestNewStartsASessionAndEpisode(t *testing.T) {
	t.Parallel()
	e := start(t, t.TempDir(), nil)
	e.accept("m1", "oc_owner", "ou_owner", true, "one")
	e.replies(1)
	e.accept("m2", "oc_owner", "ou_owner", true, "/new")
	e.replies(2)
	e.accept("m3", "oc_owner", "ou_owner", true, "two")
	got := e.replies(3)
	if got[1] != "New conversation started." {
		t.Fatalf("replies %q", got)
	}
	starts, _ := e.agent.snapshot()
	if len(starts) != 2 {
		t.Fatalf("%d sessions, want a new one after /new", len(starts))
	}
	e.stop()
	var lines []string
	_ = filepath.WalkDir(filepath.Join(e.dir, "archive"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".jsonl") {
			b, _ := os.ReadFile(p)
			lines = append(lines, strings.Split(strings.TrimSpace(string(b)), "\n")...)
		}
		return nil
	})
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, `"end":"new"`) || !strings.Contains(joined, `"who":"scv"`) || !strings.Contains(joined, `"text":"two"`) {
		t.Fatalf("chat log lacks the episode end or the messages:\n%s", joined)
	}
}

func TestHelpAndStatus(t *testing.T) {
	t.Parallel()
	e := start(t, t.TempDir(), nil)
	e.accept("m1", "oc_owner", "ou_owner", true, "/help")
	e.accept("m2", "oc_owner", "ou_owner", true, "/status")
	got := e.replies(2)
	if !strings.Contains(got[0], "/stop") || !strings.HasPrefix(got[1], "SCV is idle in the owner's session") {
		t.Fatalf("replies %q", got)
	}
	if _, prompts := e.agent.snapshot(); len(prompts) != 0 {
		t.Fatalf("commands reached the model: %q", prompts)
	}
}

func TestUnfinishedMessagesResumeAfterRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := start(t, dir, func(c *Config) { c.Quiet = time.Hour })
	e.accept("m1", "oc_owner", "ou_owner", true, "remember me")
	e.stop() // the "crash": stored, never answered
	e = start(t, dir, nil)
	if got := e.replies(1); got[0] != "answer to: remember me" {
		t.Fatalf("after restart: %q", got)
	}
	e.accept("m1", "oc_owner", "ou_owner", true, "remember me") // redelivered after restart
	time.Sleep(150 * time.Millisecond)
	if _, prompts := e.agent.snapshot(); len(prompts) != 1 {
		t.Fatalf("turns %q: want one", prompts)
	}
}

func TestBusyConversationRefusesWithoutStoring(t *testing.T) {
	t.Parallel()
	e := start(t, t.TempDir(), func(c *Config) { c.Quiet = time.Hour; c.MaxWaiting = 2 })
	e.accept("m1", "oc", "ou_owner", true, "a")
	e.accept("m2", "oc", "ou_owner", true, "b")
	if err := e.core.Accept(Message{ID: "m3", Conversation: "oc", Sender: "ou_owner", Direct: true, Text: "c"}); err != ErrBusy {
		t.Fatalf("Accept = %v, want ErrBusy", err)
	}
	if got, _ := e.st.Unprocessed(); len(got) != 2 {
		t.Fatalf("stored %d, want the refused message not stored", len(got))
	}
}

func TestBackgroundReportIsAnUnpromptedMessage(t *testing.T) {
	t.Parallel()
	e := start(t, t.TempDir(), nil)
	e.accept("m1", "oc_owner", "ou_owner", true, "start the job")
	e.replies(1)
	e.agent.mu.Lock()
	report := e.agent.reports[0]
	e.agent.mu.Unlock()
	report("The build finished: all green.")
	e.replies(2)
	rows, _ := e.st.Rows(store.Pending)
	var rp Reply
	_ = json.Unmarshal(rows[1].Payload, &rp)
	if rp.Text != "The build finished: all green." || rp.ReplyTo != "" || rp.Conversation != "oc_owner" {
		t.Fatalf("the report row = %+v, want an unprompted message to the owner's chat", rp)
	}
}
