package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/protocol"
)

// attach writes an outbox entry as chat_attach does: the copy, then its
// record.
func attach(t *testing.T, home, account, conv, name string, created time.Time) chatlog.OutboxRecord {
	t.Helper()
	out := chatlog.OutboxDir(home)
	data := []byte("content of " + name)
	sum := sha256.Sum256(data)
	id := fmt.Sprintf("%s-%012x", created.UTC().Format("20060102T150405"), created.UnixNano()&0xffffffffffff)
	r := chatlog.OutboxRecord{ID: id, Platform: "feishu", Account: account, Conversation: conv, SessionID: "s1",
		Name: name, Path: filepath.Join(out, id, name), Source: "/w/" + name, Size: int64(len(data)),
		SHA256: hex.EncodeToString(sum[:]), Kind: "file", Created: created.UTC()}
	if err := os.MkdirAll(filepath.Join(out, id), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.Path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(r)
	if err := atomicfile.WriteFile(filepath.Join(out, id+".json"), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

func rowsOf(t *testing.T, st *store.Store, kind string) []store.Outbound {
	t.Helper()
	all, err := st.Rows("")
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Outbound
	for _, o := range all {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// TestAttachedFilesGoWithTheReply: the files chat_attach left for this
// conversation are queued after the reply's text, in the order they were
// attached, at most eight; the ninth is named in the reply and removed;
// other conversations' and accounts' files are left alone; a second reply
// queues none again, and once a file's row is final its copy and record go.
func TestAttachedFilesGoWithTheReply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := time.Date(2026, 9, 26, 6, 4, 5, 0, time.UTC)
	var recs []chatlog.OutboxRecord
	for i := range 9 {
		recs = append(recs, attach(t, dir, "work", "oc_owner", fmt.Sprintf("f%d.txt", i), base.Add(time.Duration(i)*time.Millisecond)))
	}
	other := attach(t, dir, "work", "oc_other", "other.txt", base.Add(time.Second))
	otherAcct := attach(t, dir, "home", "oc_owner", "acct.txt", base.Add(2*time.Second))
	e := start(t, dir, func(c *Config) { c.Home = dir })
	e.accept("m1", "oc_owner", "ou_owner", true, "send them")
	got := e.replies(9)
	if !strings.Contains(got[0], "Not sent: f8.txt.") {
		t.Fatalf("the reply %q does not name the file left out", got[0])
	}
	files := rowsOf(t, e.st, KindFile)
	if len(files) != MaxFilesPerReply {
		t.Fatalf("%d file rows, want %d", len(files), MaxFilesPerReply)
	}
	for i, o := range files {
		var a Attachment
		if err := json.Unmarshal(o.Payload, &a); err != nil || a.Record.Name != recs[i].Name || a.Conversation != "oc_owner" {
			t.Fatalf("file row %d = %s (%v), want %s", i, o.Payload, err, recs[i].Name)
		}
	}
	if _, err := os.Stat(recs[8].Path); !os.IsNotExist(err) {
		t.Fatalf("the file left out is still in the outbox: %v", err)
	}
	for _, r := range []chatlog.OutboxRecord{other, otherAcct, recs[0]} {
		if _, err := ReadAttachment(dir, r); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
	}
	if err := e.st.MarkSent(files[0].ID, "om_1"); err != nil {
		t.Fatal(err)
	}
	e.accept("m2", "oc_owner", "ou_owner", true, "and now?")
	e.replies(10)
	if n := len(rowsOf(t, e.st, KindFile)); n != MaxFilesPerReply {
		t.Fatalf("%d file rows after a second reply, want still %d", n, MaxFilesPerReply)
	}
	if _, err := os.Stat(filepath.Join(chatlog.OutboxDir(dir), recs[0].ID+".json")); !os.IsNotExist(err) {
		t.Fatalf("the record of a sent file stays: %v", err)
	}
	if _, err := os.Stat(recs[1].Path); err != nil {
		t.Fatalf("a file still to send was removed: %v", err)
	}
}

func TestReadAttachmentRefusesWhatWasNotCopied(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	now := time.Now()
	ok := attach(t, home, "work", "oc", "ok.txt", now)
	if _, err := ReadAttachment(home, ok); err != nil {
		t.Fatal(err)
	}
	changed := attach(t, home, "work", "oc", "changed.txt", now.Add(time.Millisecond))
	if err := os.WriteFile(changed.Path, []byte("content of chXnged.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	linked := attach(t, home, "work", "oc", "linked.txt", now.Add(2*time.Millisecond))
	secret := filepath.Join(home, "secret")
	if err := os.WriteFile(secret, []byte("content of linked.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(linked.Path)
	if err := os.Symlink(secret, linked.Path); err != nil {
		t.Fatal(err)
	}
	elsewhere := ok
	elsewhere.Path = secret
	up := ok
	up.Name = "../secret"
	for name, r := range map[string]chatlog.OutboxRecord{"changed": changed, "linked": linked, "elsewhere": elsewhere, "up": up} {
		if _, err := ReadAttachment(home, r); err == nil {
			t.Errorf("%s: read, want a refusal", name)
		}
	}
}

func TestSweepOutboxOrphans(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	out := chatlog.OutboxDir(home)
	rec := attach(t, home, "work", "oc", "a.txt", time.Now())
	for _, d := range []string{"orphan-old", "orphan-new"} {
		if err := os.MkdirAll(filepath.Join(out, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, d := range []string{"orphan-old", rec.ID} {
		if err := os.Chtimes(filepath.Join(out, d), old, old); err != nil {
			t.Fatal(err)
		}
	}
	if n := SweepOutboxOrphans(home, time.Now()); n != 1 {
		t.Fatalf("removed %d, want 1", n)
	}
	for d, want := range map[string]bool{"orphan-old": false, "orphan-new": true, rec.ID: true} {
		if _, err := os.Stat(filepath.Join(out, d)); (err == nil) != want {
			t.Errorf("%s: exists=%v, want %v", d, err == nil, want)
		}
	}
}

// streamAgent's sessions stream their answer in three deltas.
type streamAgent struct{ fakeAgent }

func (a *streamAgent) Start(ctx context.Context, req protocol.SessionStart, report func(string)) (Session, error) {
	s, err := a.fakeAgent.Start(ctx, req, report)
	return &streamSession{s.(*fakeSession)}, err
}

type streamSession struct{ *fakeSession }

func (s *streamSession) TurnStream(ctx context.Context, p string, delta func(string)) (string, error) {
	for _, d := range []string{"Hel", "Hello, ", "Hello, world."} {
		delta(d)
		time.Sleep(20 * time.Millisecond)
	}
	return s.Turn(ctx, p)
}

type fakeStreamer struct {
	mu     sync.Mutex
	begins []string
	shown  []string
	aborts []string
}

func (f *fakeStreamer) Begin(_ context.Context, conv, replyTo string) (LiveReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.begins = append(f.begins, conv+"/"+replyTo)
	return &fakeLive{f: f}, nil
}

type fakeLive struct{ f *fakeStreamer }

func (l *fakeLive) ID() string { return "card_1" }
func (l *fakeLive) Show(_ context.Context, text string) {
	l.f.mu.Lock()
	l.f.shown = append(l.f.shown, text)
	l.f.mu.Unlock()
}
func (l *fakeLive) Abort(ctx context.Context, note string) {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	if ctx.Err() == nil {
		l.f.aborts = append(l.f.aborts, note)
	}
}

// TestShutdownEndsALiveReply: a bridge stopping during a streamed answer
// ends its card (with a context that still works) rather than leaving it
// "generating"; the turn is resumed at the next start.
func TestShutdownEndsALiveReply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := &fakeStreamer{}
	st, err := store.Open(filepath.Join(dir, "bridge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := New(Config{Platform: "feishu", Account: "work", Owner: "ou_owner", Quiet: 10 * time.Millisecond, Streamer: fs},
		st, &streamAgent{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Accept(Message{ID: "m1", Conversation: "oc_owner", Sender: "ou_owner", Direct: true, Text: "block"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		fs.mu.Lock()
		n := len(fs.shown)
		fs.mu.Unlock()
		if n >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	c.Wait()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.aborts) != 1 || !strings.Contains(fs.aborts[0], "Interrupted") {
		t.Fatalf("aborts %q, want one interruption note", fs.aborts)
	}
	if un, _ := st.Unprocessed(); len(un) != 1 {
		t.Fatalf("%d unprocessed messages, want the interrupted one", len(un))
	}
}

// TestAnswerStreamsThroughTheStreamer: a streaming session's deltas reach
// one live reply answering the last message, and the reply's outbox row
// names it, so the sender finishes it with the final text.
func TestAnswerStreamsThroughTheStreamer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs := &fakeStreamer{}
	st, err := store.Open(filepath.Join(dir, "bridge.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := New(Config{Platform: "feishu", Account: "work", Owner: "ou_owner", Quiet: 10 * time.Millisecond, Streamer: fs},
		st, &streamAgent{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Wait() }()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Accept(Message{ID: "m1", Conversation: "oc_owner", Sender: "ou_owner", Direct: true, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(rowsOf(t, st, KindText)) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	rows := rowsOf(t, st, KindText)
	if len(rows) != 1 {
		t.Fatal("no reply")
	}
	var r Reply
	_ = json.Unmarshal(rows[0].Payload, &r)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if r.Stream != "card_1" || r.Text != "answer to: hi" || len(fs.begins) != 1 || fs.begins[0] != "oc_owner/m1" {
		t.Fatalf("reply %+v, begins %v", r, fs.begins)
	}
	if len(fs.shown) == 0 || fs.shown[len(fs.shown)-1] != "Hello, world." {
		t.Fatalf("shown %q", fs.shown)
	}
}
