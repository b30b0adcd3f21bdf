package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-bridge/internal/feishu"
	"github.com/scv-cli/scv/scv-bridge/internal/feishu/feishutest"
)

func TestMain(m *testing.M) {
	if os.Getenv("STORE_CRASH_HELPER") != "" {
		crashHelper()
		return
	}
	goleak.VerifyTestMain(m)
}

// clock is an injected clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }
func open(t *testing.T, path string, c *clock) *Store {
	t.Helper()
	o := Options{LockTimeout: 100 * time.Millisecond}
	if c != nil {
		o.Now = c.now
	}
	s, err := Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestInboundPersistDedupResume(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state", "bridge.db")
	s := open(t, path, nil)
	for _, id := range []string{"om_1", "om_2", "om_3"} {
		fresh, err := s.PutInbound(Inbound{ID: id, Conversation: "c", Payload: json.RawMessage(`{"t":"` + id + `"}`)})
		if err != nil || !fresh {
			t.Fatalf("PutInbound(%s) = %v, %v; want a fresh event", id, fresh, err)
		}
	}
	if fresh, err := s.PutInbound(Inbound{ID: "om_2", Conversation: "c"}); err != nil || fresh {
		t.Fatalf("a redelivered event was taken as new (%v, %v)", fresh, err)
	}
	if err := s.MarkProcessed("om_1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A restart resumes what was not processed, in arrival order, and
	// still knows the processed event.
	s = open(t, path, nil)
	defer s.Close()
	got, err := s.Unprocessed()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "om_2" || got[1].ID != "om_3" || string(got[1].Payload) != `{"t":"om_3"}` {
		t.Fatalf("unprocessed after restart = %+v, want om_2, om_3", got)
	}
	if fresh, _ := s.PutInbound(Inbound{ID: "om_1", Conversation: "c"}); fresh {
		t.Fatal("a processed event redelivered after a restart was taken as new")
	}
	if err := s.MarkProcessed("om_9"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("MarkProcessed of an unknown id = %v, want ErrNotFound", err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("database mode = %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

func TestInboundDedupWindowIsAtLeastSevenDays(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}
	s := open(t, filepath.Join(t.TempDir(), "b.db"), c)
	defer s.Close()
	for _, id := range []string{"done", "open"} {
		if _, err := s.PutInbound(Inbound{ID: id, Conversation: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.MarkProcessed("done"); err != nil {
		t.Fatal(err)
	}
	c.add(6*24*time.Hour + 23*time.Hour)
	// Asking for one hour still keeps seven days.
	if n, err := s.PruneInbound(time.Hour); err != nil || n != 0 {
		t.Fatalf("pruned %d (%v) before 7 days", n, err)
	}
	if fresh, _ := s.PutInbound(Inbound{ID: "done", Conversation: "c"}); fresh {
		t.Fatal("a redelivery within 7 days was taken as new")
	}
	c.add(2 * time.Hour)
	if n, err := s.PruneInbound(time.Hour); err != nil || n != 1 {
		t.Fatalf("pruned %d (%v) after 7 days, want the processed event only", n, err)
	}
	if got, _ := s.Unprocessed(); len(got) != 1 || got[0].ID != "open" {
		t.Fatalf("an unprocessed event was pruned: %+v", got)
	}
}

func TestOpenIsExclusive(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "b.db")
	s := open(t, path, nil)
	defer s.Close()
	_, err := Open(path, Options{LockTimeout: 50 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("a second Open = %v, want ErrLocked", err)
	}
}

func TestOutboxStates(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "b.db"), nil)
	defer s.Close()
	a, _ := s.Enqueue("c1", "text", json.RawMessage(`"a"`))
	b, _ := s.Enqueue("c1", "text", json.RawMessage(`"b"`))
	h, _ := s.EnqueueHeld("c2", "text", json.RawMessage(`"h"`))
	if len(a.ID) > 32 || a.ID == b.ID {
		t.Fatalf("row ids %q, %q: want distinct keys of at most 32 bytes", a.ID, b.ID)
	}
	var tried []string
	d := NewDeliverer(s, func(_ context.Context, o Outbound) (string, error) {
		tried = append(tried, o.ID)
		if o.ID == a.ID {
			return "", errors.New("HTTP 500")
		}
		return "om_" + o.ID, nil
	})
	d.MaxAttempts = 2
	d.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if failed, err := d.Pass(context.Background()); err != nil || !failed {
		t.Fatalf("Pass = %v, %v; want a failure", failed, err)
	}
	// b waits behind a (order per conversation); h is held.
	if len(tried) != 1 || tried[0] != a.ID {
		t.Fatalf("sent %v, want only the first row of c1", tried)
	}
	if _, err := d.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Release("c2"); err != nil || n != 1 {
		t.Fatalf("Release = %d, %v", n, err)
	}
	if _, err := d.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, _ := s.Rows("")
	want := map[string]State{a.ID: Dead, b.ID: Sent, h.ID: Sent}
	for _, r := range rows {
		if r.State != want[r.ID] {
			t.Errorf("row %s is %s, want %s (%+v)", r.ID, r.State, want[r.ID], r)
		}
	}
	if err := s.MarkSent(a.ID, "x"); err == nil {
		t.Error("a dead row was marked sent")
	}
}

// crashHelper is the child of TestCrashBetweenSendAndRecord: it sends the
// pending row through the platform and dies before recording it.
func crashHelper() {
	s, err := Open(os.Getenv("STORE_DB"), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	c, err := feishu.New(feishu.Options{AppID: feishutest.AppID, AppSecret: feishutest.AppSecret,
		BaseURL: os.Getenv("STORE_FEISHU")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	d := NewDeliverer(s, func(ctx context.Context, o Outbound) (string, error) {
		if _, err := sendText(ctx, c, o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(3) // the crash: sent, not recorded
		return "", nil
	})
	_, _ = d.Pass(context.Background())
	os.Exit(2)
}

func sendText(ctx context.Context, c *feishu.Client, o Outbound) (string, error) {
	var text string
	if err := json.Unmarshal(o.Payload, &text); err != nil {
		return "", err
	}
	sent, err := c.Send(ctx, feishu.Recipient{Type: feishu.ByOpenID, ID: o.Conversation}, feishu.TextMessage(text), o.ID)
	return sent.MessageID, err
}

func TestCrashBetweenSendAndRecord(t *testing.T) {
	t.Parallel()
	fs := feishutest.New()
	defer fs.Close()
	path := filepath.Join(t.TempDir(), "b.db")
	s := open(t, path, nil)
	row, err := s.Enqueue("ou_owner", "text", json.RawMessage(`"the report"`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STORE_CRASH_HELPER=1", "STORE_DB="+path, "STORE_FEISHU="+fs.URL)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("the helper did not crash after sending: %v\n%s", err, out)
	}
	if n := len(fs.Messages()); n != 1 {
		t.Fatalf("the platform got %d messages before the crash, want 1", n)
	}
	// Restart: the row is still pending and is sent again with its key.
	s = open(t, path, nil)
	defer s.Close()
	c, err := feishu.New(feishu.Options{AppID: feishutest.AppID, AppSecret: feishutest.AppSecret,
		BaseURL: fs.URL, HTTPClient: fs.Client(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	sends := 0
	d := NewDeliverer(s, func(ctx context.Context, o Outbound) (string, error) {
		sends++
		return sendText(ctx, c, o)
	})
	if failed, err := d.Pass(context.Background()); err != nil || failed {
		t.Fatalf("Pass after restart = %v, %v", failed, err)
	}
	msgs := fs.Messages()
	if sends != 1 || len(msgs) != 1 || msgs[0].UUID != row.ID {
		t.Fatalf("after restart: %d sends, platform shows %d messages (%+v); want 1 resend shown once", sends, len(msgs), msgs)
	}
	rows, _ := s.Rows(Sent)
	if len(rows) != 1 || rows[0].PlatformID != msgs[0].ID {
		t.Fatalf("the row was not recorded sent with the platform's id: %+v", rows)
	}
}

func TestDelivererRunStopsWithContext(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "b.db"), nil)
	defer s.Close()
	got := make(chan string, 4)
	d := NewDeliverer(s, func(_ context.Context, o Outbound) (string, error) { got <- o.ID; return "m", nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	o, _ := s.Enqueue("c", "text", json.RawMessage(`"x"`))
	d.Kick()
	select {
	case id := <-got:
		if id != o.ID {
			t.Fatalf("sent %s, want %s", id, o.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not send after Kick")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
}

// TestKeyedRowsAreQueuedOnce: a row's key is unique while the outbox
// holds it (a file found again after a crash is not queued twice), and
// pruning the row frees the key.
func TestKeyedRowsAreQueuedOnce(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Date(2026, 9, 26, 6, 0, 0, 0, time.UTC)}
	s := open(t, filepath.Join(t.TempDir(), "b.db"), c)
	if _, err := s.PutInbound(Inbound{ID: "m1", Conversation: "oc"}); err != nil {
		t.Fatal(err)
	}
	rows := []Row{{Conversation: "oc", Kind: "text", Payload: []byte(`{}`)},
		{Conversation: "oc", Kind: "file", Payload: []byte(`{}`), Key: "attach:a"},
		{Conversation: "oc", Kind: "file", Payload: []byte(`{}`), Key: "attach:a"}}
	out, err := s.CompleteRows([]string{"m1"}, rows...)
	if err != nil || len(out) != 2 || out[1].Key != "attach:a" {
		t.Fatalf("CompleteRows = %+v, %v; want the text and one file", out, err)
	}
	if un, _ := s.Unprocessed(); len(un) != 0 {
		t.Fatalf("m1 is still unprocessed")
	}
	again, err := s.CompleteRows(nil, rows[1])
	if err != nil || len(again) != 0 {
		t.Fatalf("queueing the key again = %+v, %v; want nothing", again, err)
	}
	o, ok, err := s.RowByKey("attach:a")
	if err != nil || !ok || o.ID != out[1].ID {
		t.Fatalf("RowByKey = %+v %v %v", o, ok, err)
	}
	if err := s.MarkSent(o.ID, "om_1"); err != nil {
		t.Fatal(err)
	}
	c.add(8 * 24 * time.Hour)
	if _, err := s.PruneOutbox(7 * 24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.RowByKey("attach:a"); ok {
		t.Fatal("a pruned row's key is still found")
	}
	if again, err := s.CompleteRows(nil, rows[1]); err != nil || len(again) != 1 {
		t.Fatalf("queueing a pruned row's key = %+v, %v; want it queued", again, err)
	}
}

// TestDelivererReportsFinalRows: OnFinal sees each row once it is sent
// or given up.
func TestDelivererReportsFinalRows(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "b.db"), nil)
	good, _ := s.Enqueue("a", "text", []byte(`"ok"`))
	bad, _ := s.Enqueue("b", "text", []byte(`"no"`))
	d := NewDeliverer(s, func(_ context.Context, o Outbound) (string, error) {
		if o.ID == bad.ID {
			return "", errors.New("refused for good")
		}
		return "pid", nil
	})
	d.Retryable = func(error) bool { return false }
	got := map[string]State{}
	d.OnFinal = func(o Outbound, st State) { got[o.ID] = st }
	if _, err := d.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got[good.ID] != Sent || got[bad.ID] != Dead || len(got) != 2 {
		t.Fatalf("OnFinal saw %v", got)
	}
}
