package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/proctag"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestCrashAndResume kills the real server with SIGKILL in the middle of a
// turn, twice (a call waiting for approval, then a reply still streaming),
// and resumes the session in a new server each time: the completed turns
// are intact, the interrupted ones are marked so, and the next turn runs on
// a history the provider accepts.
func TestCrashAndResume(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	home := t.TempDir()
	config := f.Config("")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the colour is blue\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	p := start(t, home)
	initV3(p)
	p.send(&protocol.SessionStart{RequestID: "s", Cwd: dir})
	sid := nextOf[*protocol.SessionStarted](p).SessionID
	nextOf[*protocol.QueueSnapshot](p)

	// Turn 1 completes: a read, then the answer.
	f.Enqueue(
		fo.Script(fo.ToolCall("call_1", "read", `{"path":"notes.txt"}`), fo.Usage(10, 1)),
		fo.Script(fo.Text("It is blue."), fo.Usage(20, 2)),
	)
	p.send(&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "What colour do my notes say?"})
	if end := nextOf[*protocol.TurnCompleted](p); end.Steps != 2 {
		t.Fatalf("turn 1: %+v", end)
	}
	// Turn 2 is killed while its write call waits for approval.
	f.Enqueue(fo.Script(fo.Text("Writing it down."), fo.ToolCall("call_2", "write", `{"path":"colour.txt","content":"blue\n","mode":"create"}`), fo.Usage(30, 3)))
	p.send(&protocol.TurnStart{RequestID: "t2", SessionID: sid, Prompt: "Write it to colour.txt"})
	nextOf[*protocol.ApprovalRequested](p)
	kill(t, p)

	q := start(t, home)
	initV3(q)
	started, items := resume(t, q, dir, sid)
	// The interrupted turn's usage was never recorded: only turn 1 counts.
	if *started.Usage != (protocol.Usage{InputTokens: 30, OutputTokens: 3}) {
		t.Fatalf("usage = %+v", started.Usage)
	}
	want := []string{
		"user What colour do my notes say?",
		"tool read ok",
		"assistant It is blue.",
		"user! Write it to colour.txt",
		"assistant! Writing it down.",
		"tool! write interrupted; it may or may not have run",
		"notice! This turn was interrupted",
	}
	checkItems(t, items, want)
	if _, err := os.Stat(filepath.Join(dir, "colour.txt")); !os.IsNotExist(err) {
		t.Fatalf("the unapproved write ran: %v", err)
	}

	// The next turn runs, and the provider gets a valid history: the
	// interrupted call has its synthetic result.
	f.Enqueue(fo.Script(fo.Text("I will wait.")))
	q.send(&protocol.TurnStart{RequestID: "t3", SessionID: sid, Prompt: "Never mind."})
	nextOf[*protocol.TurnCompleted](q)
	reqs := f.Requests()
	last := reqs[len(reqs)-1]
	if got := strings.Join(last.Roles(), " "); got != "system user assistant tool assistant user assistant tool user" {
		t.Fatalf("roles = %s", got)
	}
	if m := last.Messages[7]; m.ToolCallID != "call_2" || m.Content != "interrupted; it may or may not have run" {
		t.Fatalf("synthetic result = %+v", m)
	}

	// Turn 4 is killed while its reply streams.
	f.Enqueue(fo.Script(fo.Text("Let me think"), fo.Hang()))
	q.send(&protocol.TurnStart{RequestID: "t4", SessionID: sid, Prompt: "Think hard."})
	nextOf[*protocol.AssistantDelta](q)
	kill(t, q)

	r := start(t, home)
	initV3(r)
	_, items = resume(t, r, dir, sid)
	checkItems(t, items, append(want,
		"user Never mind.",
		"assistant I will wait.",
		"user! Think hard.",
		"notice! This turn was interrupted",
	))
	f.Enqueue(fo.Script(fo.Text("Thought.")))
	r.send(&protocol.TurnStart{RequestID: "t5", SessionID: sid, Prompt: "Go on."})
	if end := nextOf[*protocol.TurnCompleted](r); end.Steps != 1 {
		t.Fatalf("turn 5: %+v", end)
	}
	reqs = f.Requests()
	last = reqs[len(reqs)-1]
	if got := strings.Join(last.Roles(), " "); got != "system user assistant tool assistant user assistant tool user assistant user user" {
		t.Fatalf("roles = %s", got)
	}
	if code := r.exit(); code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, r.stderr.String())
	}
	// A clean end leaves the log with every turn ended.
	log, err := os.ReadFile(filepath.Join(home, "state", "sessions", sid, "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n, m := strings.Count(string(log), `"t":"turn"`), strings.Count(string(log), `"t":"end"`); n != 5 || m != 5 {
		t.Fatalf("%d turn starts and %d ends in the log", n, m)
	}
}

func initV3(p *proc) {
	p.send(&protocol.Initialize{RequestID: "i", ProtocolVersion: 3, Client: protocol.ClientInfo{Name: "crash-test"}})
	nextOf[*protocol.Initialized](p)
}

// kill ends p with SIGKILL and waits for it.
func kill(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

// resume resumes session id and returns session.started and the replay.
func resume(t *testing.T, p *proc, cwd, id string) (*protocol.SessionStarted, []protocol.ReplayItem) {
	t.Helper()
	p.send(&protocol.SessionStart{RequestID: "r", Cwd: cwd, Resume: id})
	started := nextOf[*protocol.SessionStarted](p)
	if !started.Resumed || started.SessionID != id || started.Usage == nil {
		t.Fatalf("session.started = %+v", started)
	}
	var items []protocol.ReplayItem
	for {
		ev := p.next()
		r, ok := ev.(*protocol.SessionReplay)
		if !ok {
			t.Fatalf("want session.replay, got %s", ev.Kind())
		}
		items = append(items, r.Items...)
		if r.Done {
			break
		}
	}
	if snap := nextOf[*protocol.QueueSnapshot](p); snap.Seq != 1 {
		t.Fatalf("queue.snapshot = %+v", snap)
	}
	return started, items
}

// checkItems compares replay items with want, one line each: the kind ("!"
// marks an interrupted item), then the text's start (for a tool, its name
// and "ok" or its text).
func checkItems(t *testing.T, items []protocol.ReplayItem, want []string) {
	t.Helper()
	var got []string
	for _, it := range items {
		kind := it.Kind
		if it.Interrupted {
			kind += "!"
		}
		text := it.Text
		if it.Kind == "tool" {
			if it.Success != nil && *it.Success {
				text = it.Name + " ok"
			} else {
				text = it.Name + " " + it.Text
			}
		}
		got = append(got, kind+" "+text)
	}
	if len(got) != len(want) {
		t.Fatalf("replay:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("replay item %d = %q, want %q\nreplay:\n%s", i, got[i], want[i], strings.Join(got, "\n"))
		}
	}
}

// TestStdioKilledBashTreeReapedByNextServer: a `scv-server --stdio` killed
// with SIGKILL mid bash command leaves the command's tree running; the
// next stdio server on the same SCV_HOME stops it at start.
func TestStdioKilledBashTreeReapedByNextServer(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	home, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(f.Config("")), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, home, "--approval-policy", "auto")
	initV3(p)
	p.send(&protocol.SessionStart{RequestID: "s", Cwd: dir})
	sid := nextOf[*protocol.SessionStarted](p).SessionID
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "bash", `{"command":"sleep 300 & echo \"$SCV_RUN_TAG\" > tag; wait"}`)))
	p.send(&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "run it"})
	var tag string
	for deadline := time.Now().Add(15 * time.Second); tag == ""; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(dir, "tag")); err == nil {
			tag = strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatal("the bash command did not start")
		}
	}
	t.Cleanup(func() { proctag.Kill(tag) })
	kill(t, p)
	if n := len(proctag.Find(tag)); n < 2 {
		t.Fatalf("the SIGKILL already ended the tree (%d processes): nothing to reap", n)
	}
	q := start(t, home)
	initV3(q)
	for deadline := time.Now().Add(10 * time.Second); len(proctag.Find(tag)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the next server left %d processes of the killed one's bash tree", len(proctag.Find(tag)))
		}
	}
}
