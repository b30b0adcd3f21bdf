package servertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/loop"
	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// resumeSession sends session.start with resume and reads the answer:
// session.started, the replay frames (checked) and queue.snapshot.
func resumeSession(t *testing.T, c *st.Client, cwd, id string) (*protocol.SessionStarted, []protocol.ReplayItem, []*protocol.SessionReplay) {
	t.Helper()
	rid := c.ID()
	c.Send(&protocol.SessionStart{RequestID: rid, Cwd: cwd, Resume: id})
	started := st.Expect[*protocol.SessionStarted](c)
	if !started.Resumed || started.SessionID != id || started.RequestID != rid || started.Usage == nil {
		t.Fatalf("session.started = %+v", started)
	}
	var items []protocol.ReplayItem
	var frames []*protocol.SessionReplay
	for {
		r := st.Expect[*protocol.SessionReplay](c)
		if r.RequestID != rid || r.SessionID != id || r.Items == nil {
			t.Fatalf("session.replay = %+v", r)
		}
		frames = append(frames, r)
		items = append(items, r.Items...)
		if r.Done {
			break
		}
	}
	if snap := st.Expect[*protocol.QueueSnapshot](c); snap.Seq != 1 || snap.RequestID != rid || len(snap.Entries) != 0 {
		t.Fatalf("queue.snapshot = %+v", snap)
	}
	return started, items, frames
}

// stateLog is the log of session id under home.
func stateLog(home, id string) string {
	return filepath.Join(home, "state", "sessions", id, "log.jsonl")
}

func TestResumeRestoresTheSession(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "")
	a := st.Start(t, st.Options{Config: cfg})
	a.Client.Init(3)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("remember: blue\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first := a.Client.StartSession(dir, 3)
	sid := first.SessionID
	f.Enqueue(
		fo.Script(fo.Text("Reading."), fo.ToolCall("call_1", "read", `{"path":"notes.txt"}`), fo.Usage(100, 10)),
		// Cached input tokens, where reported, are summed over requests,
		// turns and a resume.
		fo.Script(fo.Text("They say blue."), fo.CachedUsage(200, 20, 150)),
		fo.Script(fo.Text("Blue it is."), fo.CachedUsage(300, 30, 250)),
		fo.Script(fo.Text("Noted.")),
	)
	a.Client.Turn(sid, "What do my\nnotes say?")
	if _, done := st.Until[*protocol.TurnCompleted](a.Client); usageText(done.Usage) != "300/30 cached 150" {
		t.Fatalf("first turn's usage %s, want 300/30 cached 150", usageText(done.Usage))
	}
	a.Client.Turn(sid, "And the colour?")
	st.Until[*protocol.TurnCompleted](a.Client)
	sess, err := a.Runtime.Manager.Get(sid)
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.StartServerTurn(context.Background(), protocol.Origin{Kind: "background", Jobs: []string{"job-1"}}, "[SCV background report] job-1 finished"); err != nil {
		t.Fatal(err)
	}
	st.Until[*protocol.TurnCompleted](a.Client)
	a.Stop()

	b := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	b.Client.Init(3)
	started, items, _ := resumeSession(t, b.Client, dir, sid)
	if usageText(started.Usage) != "600/60 cached 400" || started.Cwd != first.Cwd || started.Model != "fake-model" {
		t.Fatalf("session.started = %+v, usage %s", started, usageText(started.Usage))
	}
	kinds := make([]string, len(items))
	for i, it := range items {
		kinds[i] = it.Kind
		if it.TurnID == "" || it.Interrupted {
			t.Errorf("item %d = %+v", i, it)
		}
	}
	if got := strings.Join(kinds, " "); got != "user assistant tool assistant user assistant notice assistant" {
		t.Fatalf("replay kinds = %s", got)
	}
	tool := items[2]
	if tool.CallID != "call_1" || tool.Name != "read" || string(tool.Arguments) != `{"path":"notes.txt"}` ||
		tool.Success == nil || !*tool.Success || !strings.Contains(tool.Text, "remember: blue") {
		t.Fatalf("tool item = %+v", tool)
	}
	if items[0].Text != "What do my\nnotes say?" || items[1].Text != "Reading." || items[3].Text != "They say blue." || items[0].TurnID != items[3].TurnID ||
		items[6].Text != "[SCV background report] job-1 finished" {
		t.Fatalf("items = %+v", items)
	}

	// The next request carries the restored history.
	f.Enqueue(fo.Script(fo.Text("Still blue.")))
	if ts := b.Client.Turn(sid, "Once more?"); ts.Seq != 2 {
		t.Fatalf("turn.started = %+v", ts)
	}
	st.Until[*protocol.TurnCompleted](b.Client)
	reqs := f.Requests()
	last := reqs[len(reqs)-1]
	if got := strings.Join(last.Roles(), " "); got != "system user assistant tool assistant user assistant user assistant user" {
		t.Fatalf("roles of the request after resume = %s", got)
	}
	m := last.Messages
	if m[1].Content != "What do my\nnotes say?" || len(m[2].ToolCalls) != 1 || m[2].ToolCalls[0].ID != "call_1" ||
		m[3].ToolCallID != "call_1" || !strings.Contains(m[3].Content, "remember: blue") || m[9].Content != "Once more?" {
		t.Fatalf("messages = %+v", m)
	}
	if u := sessUsage(t, b, sid); usageText(&u) != "600/60 cached 400" {
		t.Fatalf("usage after a turn without usage = %s", usageText(&u))
	}

	// session.list shows it, titled by its first prompt.
	b.Client.Send(&protocol.SessionList{RequestID: "list", Cwd: dir})
	listed := st.Expect[*protocol.SessionListed](b.Client)
	if listed.RequestID != "list" || len(listed.Sessions) != 1 {
		t.Fatalf("session.listed = %+v", listed)
	}
	if got := listed.Sessions[0]; got.SessionID != sid || got.Title != "What do my notes say?" || got.Turns != 4 || got.Bytes <= 0 || got.Cwd != first.Cwd {
		t.Fatalf("summary = %+v", got)
	}
}

func sessUsage(t *testing.T, s *st.Server, id string) protocol.Usage {
	t.Helper()
	sess, err := s.Runtime.Manager.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return sess.Usage()
}

func TestSessionListNewestFirst(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	c := s.Client
	c.Init(3)
	dir, other := t.TempDir(), t.TempDir()
	var ids []string
	for _, prompt := range []string{"first prompt", "second prompt", "third prompt"} {
		sid := c.StartSession(dir, 3).SessionID
		f.Enqueue(fo.Script(fo.Text("ok")))
		c.Turn(sid, prompt)
		st.Until[*protocol.TurnCompleted](c)
		ids = append(ids, sid)
		time.Sleep(20 * time.Millisecond) // file times are coarser than this loop
	}
	elsewhere := c.StartSession(other, 3).SessionID
	f.Enqueue(fo.Script(fo.Text("ok")))
	c.Turn(elsewhere, "elsewhere")
	st.Until[*protocol.TurnCompleted](c)
	c.StartSession(dir, 3) // no turn: not listed

	list := func(cwd string, limit int) []protocol.SessionSummary {
		t.Helper()
		c.Send(&protocol.SessionList{RequestID: c.ID(), Cwd: cwd, Limit: limit})
		return st.Expect[*protocol.SessionListed](c).Sessions
	}
	got := list(dir, 0)
	if len(got) != 3 {
		t.Fatalf("session.listed = %+v", got)
	}
	for i, want := range []string{"third prompt", "second prompt", "first prompt"} {
		if got[i].Title != want || got[i].SessionID != ids[2-i] || got[i].Turns != 1 {
			t.Fatalf("session %d = %+v, want %q", i, got[i], want)
		}
		for _, ts := range []string{got[i].CreatedAt, got[i].UpdatedAt} {
			if _, err := time.Parse(time.RFC3339, ts); err != nil {
				t.Fatalf("time %q: %v", ts, err)
			}
		}
	}
	if got := list(dir, 2); len(got) != 2 || got[0].SessionID != ids[2] {
		t.Fatalf("limit 2: %+v", got)
	}
	if got := list(dir, 5000); len(got) != 3 {
		t.Fatalf("limit 5000: %+v", got)
	}
	if got := list(other, 0); len(got) != 1 || got[0].SessionID != elsewhere {
		t.Fatalf("other workspace: %+v", got)
	}
	if got := list(t.TempDir(), 0); got == nil || len(got) != 0 {
		t.Fatalf("empty workspace: %+v", got)
	}
	for _, bad := range []protocol.SessionList{{Cwd: dir, Limit: -1}, {Cwd: "relative"}, {Cwd: filepath.Join(dir, "missing")}} {
		bad.RequestID = c.ID()
		c.Send(&bad)
		if e := c.ExpectError(protocol.ErrInvalidRequest); e.RequestID != bad.RequestID {
			t.Fatalf("error = %+v", e)
		}
	}
	c.SendRaw(`{"type":"session.list","request_id":"x"}`)
	if e := c.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, `"cwd"`) {
		t.Fatalf("session.list without cwd: %s", e.Message)
	}

	// Older versions do not have session.list.
	_, s2 := fake(t, "", st.Options{})
	s2.Client.Init(2)
	s2.Client.Send(&protocol.SessionList{RequestID: "l", Cwd: dir})
	if e := s2.Client.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, "needs version 3") {
		t.Fatalf("v2 session.list: %s", e.Message)
	}
}

func TestResumeErrors(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "")
	a := st.Start(t, st.Options{Config: cfg})
	a.Client.Init(3)
	dir := t.TempDir()
	sid := a.Client.StartSession(dir, 3).SessionID
	f.Enqueue(fo.Script(fo.Text("hello")))
	a.Client.Turn(sid, "hi")
	st.Until[*protocol.TurnCompleted](a.Client)

	refuse := func(c *st.Client, code protocol.ErrorCode, cwd, id, want string) {
		t.Helper()
		rid := c.ID()
		c.Send(&protocol.SessionStart{RequestID: rid, Cwd: cwd, Resume: id})
		e := c.ExpectError(code)
		if e.RequestID != rid || !strings.Contains(e.Message, want) {
			t.Fatalf("resume %q: %s, want it to say %q", id, e.Message, want)
		}
	}
	refuse(a.Client, protocol.ErrInvalidRequest, dir, sid, "already open in this server")
	a.Stop()
	path := stateLog(a.Home, sid)
	stored, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func() {
		t.Helper()
		if now, _ := os.ReadFile(path); string(now) != string(stored) {
			t.Fatalf("a refused resume changed the log:\n%s", now)
		}
	}

	b := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	c := b.Client
	c.Init(3)
	refuse(c, protocol.ErrSessionNotFound, dir, uuid.NewString(), "no stored session has id")
	refuse(c, protocol.ErrInvalidRequest, dir, "../../etc/passwd", "is not a session id")
	refuse(c, protocol.ErrInvalidRequest, dir, strings.ToUpper(sid), "is not a session id")
	refuse(c, protocol.ErrInvalidRequest, t.TempDir(), sid, "belongs to the workspace")
	refuse(c, protocol.ErrInvalidRequest, filepath.Join(dir, "missing"), sid, "does not exist")
	unchanged()

	original := stored
	lines := strings.SplitAfter(string(stored), "\n")
	lines[1] = "{\"t\":\"turn\",\n"
	stored = []byte(strings.Join(lines, ""))
	if err := os.WriteFile(path, stored, 0o600); err != nil {
		t.Fatal(err)
	}
	refuse(c, protocol.ErrInvalidRequest, dir, sid, path+":2: ")
	unchanged()

	// Repaired, it resumes; another server of the same home cannot open it
	// meanwhile.
	if err := os.WriteFile(path, original, 0o600); err != nil {
		t.Fatal(err)
	}
	resumeSession(t, c, dir, sid)
	other := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	other.Client.Init(3)
	refuse(other.Client, protocol.ErrInvalidRequest, dir, sid, "open in another scv-server process")
	refuse(c, protocol.ErrInvalidRequest, dir, sid, "already open in this server")

	// v1 and v2 clients know no resume: the field is ignored.
	for _, v := range []int{1, 2} {
		s := st.Start(t, st.Options{Config: cfg, Home: a.Home})
		s.Client.Init(v)
		s.Client.Send(&protocol.SessionStart{RequestID: "s", Cwd: dir, Resume: sid})
		got := st.Expect[*protocol.SessionStarted](s.Client)
		if got.Resumed || got.SessionID == sid || got.Usage != nil {
			t.Fatalf("v%d session.started = %+v", v, got)
		}
		if v == 2 {
			st.Expect[*protocol.QueueSnapshot](s.Client)
		}
	}
}

func TestResumeEmptyTranscript(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	cwd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	sid := uuid.NewString()
	meta, _ := json.Marshal(map[string]any{"t": "meta", "v": 1, "id": sid, "cwd": cwd, "model": "m", "at": time.Now().Format(time.RFC3339Nano)})
	if err := os.MkdirAll(filepath.Dir(stateLog(home, sid)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stateLog(home, sid), append(meta, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	_, s := fake(t, "", st.Options{Home: home})
	s.Client.Init(3)
	started, items, frames := resumeSession(t, s.Client, dir, sid)
	if len(frames) != 1 || len(items) != 0 || *started.Usage != (protocol.Usage{}) {
		t.Fatalf("frames %+v, usage %+v", frames, started.Usage)
	}
	lines := s.Client.Lines()
	if raw := string(lines[len(lines)-2]); !strings.Contains(raw, `"items":[],"done":true`) || !strings.Contains(string(lines[len(lines)-3]), `"usage":{"input_tokens":0,"output_tokens":0}`) {
		t.Fatalf("frames:\n%s\n%s", lines[len(lines)-3], raw)
	}
}

func TestLargeReplayIsSplitIntoFrames(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "")
	a := st.Start(t, st.Options{Config: cfg})
	a.Client.Init(3)
	dir := t.TempDir()
	sid := a.Client.StartSession(dir, 3).SessionID
	// Large deltas: the size of the replay is what matters here, and 28,000
	// small ones take over a minute under -race on a loaded machine.
	chunk := strings.Repeat("0123456789", 1000)
	for i := range 4 {
		f.Enqueue(fo.Script(fo.Repeat(70, chunk))) // 700,000 bytes
		a.Client.Turn(sid, "long answer "+string(rune('a'+i)))
		st.Until[*protocol.TurnCompleted](a.Client)
	}
	a.Stop()

	b := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	b.Client.Init(3)
	_, items, frames := resumeSession(t, b.Client, dir, sid)
	if len(items) != 8 || len(frames) < 2 {
		t.Fatalf("%d items in %d frames", len(items), len(frames))
	}
	for i, fr := range frames {
		b, _ := protocol.EncodeEvent(fr)
		if len(b) > 2<<20 || fr.Done != (i == len(frames)-1) {
			t.Fatalf("frame %d: %d bytes, done %v", i, len(b), fr.Done)
		}
	}
	for i := 1; i < 8; i += 2 {
		if items[i].Kind != "assistant" || len(items[i].Text) != 700000 {
			t.Fatalf("item %d: %s of %d bytes", i, items[i].Kind, len(items[i].Text))
		}
	}
}

func TestUnstorableSessionStillRuns(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A file where the sessions directory belongs: nothing can be stored.
	if err := os.WriteFile(filepath.Join(home, "state", "sessions"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f, s := fake(t, "", st.Options{Home: home})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.Text("fine")))
	s.Client.Turn(sid, "hello")
	if _, end := st.Until[*protocol.TurnCompleted](s.Client); end.Steps != 1 {
		t.Fatalf("turn.completed = %+v", end)
	}
}

// TestResumeKeepsCompactionAndTrimming resumes sessions whose history a
// compaction or a trim replaced: the restored history is the one the
// session had, not the raw turns.
func TestResumeKeepsCompactionAndTrimming(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	cfg := st.FakeProviderConfigWithContext(f.URL(), 3000, "")
	a := st.Start(t, st.Options{Config: cfg})
	sid := toolFree(t, a)
	dir := mustSessionCwd(t, a, sid)
	for _, tag := range []string{"one", "two", "three"} {
		f.Enqueue(reply(tag, 3000))
		a.Client.Turn(sid, "turn "+tag)
		st.Until[*protocol.TurnCompleted](a.Client)
	}
	f.Enqueue(fo.Script(fo.Text("SUMMARY: the user counted one, two, three.")), reply("four", 100))
	a.Client.Turn(sid, "turn four")
	if evs, _ := st.Until[*protocol.TurnCompleted](a.Client); !strings.Contains(st.Kinds(evs), "context.compacted") {
		t.Fatalf("turn four did not compact: %s", st.Kinds(evs))
	}
	sess, err := a.Runtime.Manager.Get(sid)
	if err != nil {
		t.Fatal(err)
	}
	history := sess.History()
	a.Stop()

	b := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	b.Client.Init(3)
	off := false
	b.Client.Send(&protocol.SessionStart{RequestID: "r", Cwd: dir, Resume: sid, Tools: &off})
	st.Expect[*protocol.SessionStarted](b.Client)
	var items []protocol.ReplayItem
	for {
		r := st.Expect[*protocol.SessionReplay](b.Client)
		items = append(items, r.Items...)
		if r.Done {
			break
		}
	}
	st.Expect[*protocol.QueueSnapshot](b.Client)
	resumed, _ := b.Runtime.Manager.Get(sid)
	if got := resumed.History(); len(got) != len(history) || got[0].Content != history[0].Content || !strings.HasPrefix(got[0].Content, loop.SummaryPrefix) {
		t.Fatalf("restored history (%d messages) starts %.60q; want the %d compacted messages", len(got), got[0].Content, len(history))
	}
	var notices, users int
	for _, it := range items {
		switch {
		case it.Kind == "notice" && strings.HasPrefix(it.Text, "The context was compacted"):
			notices++
		case it.Kind == "user":
			users++
		}
	}
	if notices != 1 || users != 4 {
		t.Fatalf("replay has %d compaction notices and %d prompts: %+v", notices, users, items)
	}
	f.Enqueue(reply("five", 10))
	b.Client.Turn(sid, "turn five")
	st.Until[*protocol.TurnCompleted](b.Client)
	reqs := f.Requests()
	if m := reqs[len(reqs)-1].Messages; !strings.HasPrefix(m[1].Content, loop.SummaryPrefix) || m[len(m)-1].Content != "turn five" {
		t.Fatalf("the request after resume: %+v", m)
	}

	// Trimming: a history bound of four messages keeps the last two turns.
	c := st.Start(t, st.Options{Config: st.FakeProviderConfig(f.URL(), ""), MaxHistoryItems: 4})
	c.Client.Init(3)
	tdir := t.TempDir()
	tsid := c.Client.StartSession(tdir, 3).SessionID
	for _, tag := range []string{"a", "b", "c"} {
		f.Enqueue(reply(tag, 10))
		c.Client.Turn(tsid, "turn "+tag)
		st.Until[*protocol.TurnCompleted](c.Client)
	}
	c.Stop()
	d := st.Start(t, st.Options{Config: st.FakeProviderConfig(f.URL(), ""), Home: c.Home, MaxHistoryItems: 4})
	d.Client.Init(3)
	_, items, _ = resumeSession(t, d.Client, tdir, tsid)
	got, _ := d.Runtime.Manager.Get(tsid)
	if h := got.History(); len(h) != 4 || h[0].Content != "turn b" || h[2].Content != "turn c" {
		t.Fatalf("restored trimmed history = %+v", h)
	}
	if len(items) != 7 || items[6].Kind != "notice" || items[6].Text != "2 earlier messages were dropped to keep the history within its bounds." {
		t.Fatalf("replay = %+v", items)
	}
}

// mustSessionCwd returns the canonical workspace of session id.
func mustSessionCwd(t *testing.T, s *st.Server, id string) string {
	t.Helper()
	sess, err := s.Runtime.Manager.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	return sess.Cwd()
}

// TestResumeKeepsQueuedPrompts: prompts still queued when the server
// stopped come back with the resumed session, paused, in order, with their
// ids; resuming the queue runs them.
func TestResumeKeepsQueuedPrompts(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "")
	a := st.Start(t, st.Options{Config: cfg})
	a.Client.Init(3)
	dir := t.TempDir()
	sid := a.Client.StartSession(dir, 3).SessionID
	f.Enqueue(fo.Script(fo.Text("busy"), fo.Hang()))
	a.Client.Turn(sid, "first")
	st.Expect[*protocol.AssistantDelta](a.Client)
	a.Client.Send(&protocol.TurnStart{RequestID: "q1", SessionID: sid, Prompt: "second"})
	one := st.Expect[*protocol.QueueEnqueued](a.Client).Entry
	a.Client.Send(&protocol.TurnStart{RequestID: "q2", SessionID: sid, Prompt: "third"})
	two := st.Expect[*protocol.QueueEnqueued](a.Client).Entry
	a.Client.Send(&protocol.QueueUpdate{RequestID: a.Client.ID(), SessionID: sid, QueueID: two.QueueID, Revision: two.Revision, Prompt: "third, edited"})
	two = st.Expect[*protocol.QueueUpdated](a.Client).Entry
	a.Stop()

	b := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	c := b.Client
	c.Init(3)
	rid := c.ID()
	c.Send(&protocol.SessionStart{RequestID: rid, Cwd: dir, Resume: sid})
	st.Expect[*protocol.SessionStarted](c)
	st.Until[*protocol.SessionReplay](c)
	snap := st.Expect[*protocol.QueueSnapshot](c)
	if len(snap.Entries) != 2 || snap.Entries[0].QueueID != one.QueueID || snap.Entries[1].QueueID != two.QueueID ||
		snap.Entries[1].Prompt != "third, edited" || snap.Entries[1].Revision != two.Revision || snap.Entries[1].Position != 1 {
		t.Fatalf("queue.snapshot after resume = %+v", snap.Entries)
	}
	if p := st.Expect[*protocol.SessionPaused](c); !p.Paused || p.RequestID != rid {
		t.Fatalf("session.paused = %+v, want the restored queue paused", p)
	}
	f.Enqueue(fo.Script(fo.Text("second done")), fo.Script(fo.Text("third done")))
	c.Send(&protocol.SessionPause{RequestID: c.ID(), SessionID: sid, Paused: false})
	st.Expect[*protocol.SessionPaused](c)
	if d := st.Expect[*protocol.QueueDequeued](c); d.Entry.QueueID != one.QueueID || d.RequestID != "q1" {
		t.Fatalf("queue.dequeued = %+v", d)
	}
	if ts := st.Expect[*protocol.TurnStarted](c); ts.RequestID != "q1" {
		t.Fatalf("turn.started = %+v, want the queued turn's request_id", ts)
	}
	st.Until[*protocol.TurnCompleted](c)
	st.Expect[*protocol.QueueDequeued](c)
	st.Until[*protocol.TurnCompleted](c)
	reqs := f.Requests()
	if m := reqs[len(reqs)-1].Messages; m[len(m)-1].Content != "third, edited" {
		t.Fatalf("the last request's prompt = %q", m[len(m)-1].Content)
	}
}

// TestResumedQueueDoesNotHoldUpANewPrompt: a prompt sent to a resumed
// session whose restored queue waits paused runs at once (so `scv exec
// --continue` runs its prompt), and the restored prompts keep waiting.
func TestResumedQueueDoesNotHoldUpANewPrompt(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "")
	a := st.Start(t, st.Options{Config: cfg})
	a.Client.Init(3)
	dir := t.TempDir()
	sid := a.Client.StartSession(dir, 3).SessionID
	f.Enqueue(fo.Script(fo.Text("busy"), fo.Hang()))
	a.Client.Turn(sid, "first")
	st.Expect[*protocol.AssistantDelta](a.Client)
	a.Client.Send(&protocol.TurnStart{RequestID: "q1", SessionID: sid, Prompt: "later"})
	st.Expect[*protocol.QueueEnqueued](a.Client)
	a.Stop()

	b := st.Start(t, st.Options{Config: cfg, Home: a.Home})
	c := b.Client
	c.Init(3)
	c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: dir, Resume: sid})
	st.Expect[*protocol.SessionStarted](c)
	st.Until[*protocol.SessionReplay](c)
	st.Expect[*protocol.QueueSnapshot](c)
	st.Expect[*protocol.SessionPaused](c)
	f.Enqueue(fo.Script(fo.Text("now")))
	if ts := c.Turn(sid, "right now"); ts.RequestID == "" {
		t.Fatalf("turn.started = %+v", ts)
	}
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	for _, e := range evs {
		if _, ok := e.(*protocol.QueueDequeued); ok {
			t.Fatal("a restored prompt ran while the queue was paused")
		}
	}
	c.Send(&protocol.SessionPause{RequestID: c.ID(), SessionID: sid, Paused: true})
	st.Expect[*protocol.SessionPaused](c)
	// Once the user has answered, the session is paused as any other: a
	// new prompt joins the end of the queue.
	c.Send(&protocol.TurnStart{RequestID: "q2", SessionID: sid, Prompt: "after"})
	if e := st.Expect[*protocol.QueueEnqueued](c); e.Entry.Position != 1 {
		t.Fatalf("queue.enqueued = %+v", e)
	}
}

// usageText is a usage as "IN/OUT", with " cached N" where it says.
func usageText(u *protocol.Usage) string {
	if u == nil {
		return "none"
	}
	s := fmt.Sprintf("%d/%d", u.InputTokens, u.OutputTokens)
	if u.CachedInputTokens != nil {
		s += fmt.Sprintf(" cached %d", *u.CachedInputTokens)
	}
	return s
}
