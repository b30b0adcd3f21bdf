package servertest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestQueueBounds: the queue holds at most MaxQueueEntries prompts and
// MaxQueueBytes of prompt text; a prompt past either bound, queued or
// grown by queue.update, is refused with queue_full and changes nothing;
// room comes back when an entry leaves.
func TestQueueBounds(t *testing.T) {
	t.Parallel()
	_, s, sid, turn := busySession(t, 2)
	c := s.Client

	var entries []protocol.QueueEntry
	for i := range protocol.MaxQueueEntries {
		c.Send(&protocol.TurnStart{RequestID: fmt.Sprint("q", i), SessionID: sid, Prompt: fmt.Sprint("prompt ", i)})
		entries = append(entries, st.Expect[*protocol.QueueEnqueued](c).Entry)
	}
	c.Send(&protocol.TurnStart{RequestID: "over", SessionID: sid, Prompt: "one too many"})
	if e := c.ExpectError(protocol.ErrQueueFull); e.RequestID != "over" || !strings.Contains(e.Message, "holds 64 prompts") {
		t.Fatalf("queue_full = %+v", e)
	}
	c.Send(&protocol.QueueRemove{RequestID: "rm", SessionID: sid, QueueID: entries[0].QueueID, Revision: 1})
	st.Expect[*protocol.QueueRemoved](c)
	c.Send(&protocol.TurnStart{RequestID: "fits", SessionID: sid, Prompt: "room again"})
	st.Expect[*protocol.QueueEnqueued](c)

	// Bytes: grow entries to the largest prompts, four of which fill the
	// byte bound exactly; a fifth byte is refused.
	big := strings.Repeat("b", protocol.MaxPromptBytes)
	small := 0
	for _, e := range entries[5:] {
		small += len(e.Prompt)
	}
	for i := 1; i <= 4; i++ {
		e := entries[i]
		prompt := big
		if i == 4 {
			// What is left of the byte bound once the others are counted
			// (the entries not grown, and "room again").
			prompt = big[:protocol.MaxPromptBytes-small-len("room again")]
		}
		c.Send(&protocol.QueueUpdate{RequestID: fmt.Sprint("grow", i), SessionID: sid, QueueID: e.QueueID, Revision: 1, Prompt: prompt})
		st.Expect[*protocol.QueueUpdated](c)
	}
	c.Send(&protocol.QueueUpdate{RequestID: "grow5", SessionID: sid, QueueID: entries[5].QueueID, Revision: 1, Prompt: entries[5].Prompt + "!"})
	if e := c.ExpectError(protocol.ErrQueueFull); !strings.Contains(e.Message, "over the queue's limit of 1048576 bytes") {
		t.Fatalf("queue_full = %+v", e)
	}
	// The refused update changed nothing: the entry is still at revision 1.
	c.Send(&protocol.QueueUpdate{RequestID: "same", SessionID: sid, QueueID: entries[5].QueueID, Revision: 1, Prompt: "x"})
	if up := st.Expect[*protocol.QueueUpdated](c); up.Entry.Revision != 2 {
		t.Fatalf("queue.updated = %+v", up.Entry)
	}
	c.Send(&protocol.TurnCancel{RequestID: "cancel", SessionID: sid, TurnID: turn.TurnID})
	st.Until[*protocol.TurnCancelled](c)
	c.Send(&protocol.SessionPause{RequestID: "pause", SessionID: sid, Paused: true})
	st.Until[*protocol.SessionPaused](c)
}

// TestQueueLogStaysLinear: queue changes are logged one record each, so
// moving the largest prompts around does not rewrite them into the log
// (earlier servers wrote the whole queue at every change: quadratic).
func TestQueueLogStaysLinear(t *testing.T) {
	t.Parallel()
	_, s, sid, turn := busySession(t, 3)
	c := s.Client
	var ids []string
	for i := range 4 {
		c.Send(&protocol.TurnStart{RequestID: fmt.Sprint("q", i), SessionID: sid, Prompt: strings.Repeat(fmt.Sprint(i), protocol.MaxPromptBytes)})
		ids = append(ids, st.Expect[*protocol.QueueEnqueued](c).Entry.QueueID)
	}
	rev := map[string]int64{}
	for i := range 40 {
		id := ids[i%4]
		rev[id]++
		c.Send(&protocol.QueueMove{RequestID: fmt.Sprint("m", i), SessionID: sid, QueueID: id, Revision: rev[id]})
		st.Expect[*protocol.QueueMoved](c)
	}
	// Paused, the queue starts no next turn when the busy one ends: that
	// turn's record of its prompt would be the log's growth, not the moves'.
	c.Send(&protocol.SessionPause{RequestID: "pause", SessionID: sid, Paused: true})
	st.Expect[*protocol.SessionPaused](c)
	c.Send(&protocol.TurnCancel{RequestID: "cancel", SessionID: sid, TurnID: turn.TurnID})
	st.Until[*protocol.TurnCancelled](c)
	fi, err := os.Stat(filepath.Join(s.Home, "state", "sessions", sid, "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if limit := int64(4*protocol.MaxPromptBytes + 64<<10); fi.Size() > limit {
		t.Fatalf("the session log is %d bytes after moving four prompts 40 times, more than the prompts once (%d)", fi.Size(), limit)
	}
}

// TestResumeBoundsAnOldQueue: a log of an earlier server, with no bound,
// recorded more prompts than the queue holds now; the resumed session
// keeps the first MaxQueueEntries, and the log records the others as
// dropped, so a second resume agrees.
func TestResumeBoundsAnOldQueue(t *testing.T) {
	t.Parallel()
	_, cfg, home, dir, sid := storedSession(t)
	var q []string
	for i := range protocol.MaxQueueEntries + 6 {
		q = append(q, fmt.Sprintf(`{"queue_id":"q%d","revision":1,"prompt":"p%d","request":"r%d"}`, i, i, i))
	}
	log := filepath.Join(home, "state", "sessions", sid, "log.jsonl")
	lf, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(lf, `{"t":"queue","at":"2026-11-30T10:00:00Z","queue":[%s]}`+"\n", strings.Join(q, ","))
	lf.Close()

	for round := range 2 {
		b := st.Start(t, st.Options{Config: cfg, Home: home})
		c := b.Client
		c.Init(3)
		c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: dir, Resume: sid})
		st.Expect[*protocol.SessionStarted](c)
		st.Until[*protocol.SessionReplay](c)
		snap := st.Expect[*protocol.QueueSnapshot](c)
		if len(snap.Entries) != protocol.MaxQueueEntries || snap.Entries[0].QueueID != "q0" || snap.Entries[63].QueueID != "q63" {
			t.Fatalf("round %d: %d entries restored, want the first %d", round, len(snap.Entries), protocol.MaxQueueEntries)
		}
		b.Stop()
	}
}
