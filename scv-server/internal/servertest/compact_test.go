package servertest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/loop"
	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// small starts a server whose model has a context of contextTokens.
func small(t *testing.T, contextTokens int64, opts st.Options) (*fo.Server, *st.Server) {
	t.Helper()
	f := fo.Start(t)
	opts.Config = st.FakeProviderConfigWithContext(f.URL(), contextTokens, "")
	return f, st.Start(t, opts)
}

// reply is a model answer of about n bytes.
func reply(tag string, n int) fo.Reply {
	return fo.Script(fo.Text(tag + " " + strings.Repeat("x", n)))
}

// toolFree starts a v3 session without tools, so the fixed part of every
// request (the system prompt) stays small and the sizes below hold.
func toolFree(t *testing.T, s *st.Server) string {
	t.Helper()
	s.Client.Init(3)
	off := false
	s.Client.Send(&protocol.SessionStart{RequestID: s.Client.ID(), Cwd: t.TempDir(), Tools: &off})
	started := st.Expect[*protocol.SessionStarted](s.Client)
	st.Expect[*protocol.QueueSnapshot](s.Client)
	return started.SessionID
}

func TestCompactionKeepsTheConversationGoing(t *testing.T) {
	t.Parallel()
	// Each answer is ~3,000 bytes (~860 estimated tokens) and the system
	// prompt a few hundred. With a 3,000-token window compaction starts
	// past 2,400: not before the fourth request, which holds three answers.
	f, s := small(t, 3000, st.Options{})
	sid := toolFree(t, s)
	c := s.Client
	for i, tag := range []string{"one", "two", "three"} {
		f.Enqueue(reply(tag, 3000))
		c.Turn(sid, "turn "+tag)
		evs, _ := st.Until[*protocol.TurnCompleted](c)
		if strings.Contains(st.Kinds(evs), "context.compacted") {
			t.Fatalf("turn %d compacted already: %s", i+1, st.Kinds(evs))
		}
	}
	f.Enqueue(fo.Script(fo.Text("SUMMARY: the user counted one, two, three.")), reply("four", 100))
	c.Turn(sid, "turn four")
	evs, end := st.Until[*protocol.TurnCompleted](c)
	if got := st.Kinds(evs); !strings.HasPrefix(got, "context.compacted assistant.delta") {
		t.Fatalf("turn four: %s, want context.compacted before the reply", got)
	}
	cc := evs[0].(*protocol.ContextCompacted)
	if cc.RemovedMessages != 2 || cc.AfterTokens >= cc.BeforeTokens || cc.BeforeTokens <= 2400 || cc.AfterTokens > 3000 {
		t.Fatalf("context.compacted = %+v, want the first turn's 2 messages removed", cc)
	}
	if end.Steps != 1 {
		t.Fatalf("steps = %d; the summary is not a step", end.Steps)
	}
	reqs := f.Requests()
	sum := reqs[3]
	if !strings.Contains(sum.Messages[0].Content, "summarize the earlier part") || !strings.Contains(sum.Messages[1].Content, "User: turn one") {
		t.Fatalf("summary request = %+v", sum.Messages)
	}
	if len(sum.Tools) != 0 {
		t.Fatal("the summary request offers tools")
	}
	next := reqs[4].Messages
	if !strings.HasPrefix(next[1].Content, loop.SummaryPrefix) || !strings.Contains(next[1].Content, "SUMMARY: the user counted") {
		t.Fatalf("the turn after compaction starts with %q", next[1].Content)
	}
	if next[2].Content != "turn two" || next[len(next)-1].Content != "turn four" {
		t.Fatalf("kept turns = %+v", next)
	}
	// The compacted history stays: the next turn starts from the summary.
	f.Enqueue(reply("five", 10))
	c.Turn(sid, "turn five")
	st.Until[*protocol.TurnCompleted](c)
	if m := f.Requests()[5].Messages; !strings.HasPrefix(m[1].Content, loop.SummaryPrefix) {
		t.Fatalf("turn five lost the summary: %+v", m[1])
	}
}

func TestContextLimit(t *testing.T) {
	t.Parallel()
	f, s := small(t, 1000, st.Options{})
	sid := toolFree(t, s)
	c := s.Client
	c.Turn(sid, strings.Repeat("word ", 2000))
	_, fail := st.Until[*protocol.TurnFailed](c)
	if fail.Code != protocol.FailContextLimit || !strings.Contains(fail.Message, "1000") {
		t.Fatalf("turn.failed = %+v", fail)
	}
	if n := len(f.Requests()); n != 0 {
		t.Fatalf("%d requests reached the provider", n)
	}
	// The session is still usable with a prompt that fits.
	f.Enqueue(reply("ok", 10))
	c.Turn(sid, "short")
	st.Until[*protocol.TurnCompleted](c)
}

func TestManualCompact(t *testing.T) {
	t.Parallel()
	f, s := small(t, 1000000, st.Options{})
	sid, _ := session(t, s, 3)
	c := s.Client
	c.Send(&protocol.SessionCompact{RequestID: "k0", SessionID: sid})
	if e := c.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, "nothing to compact") {
		t.Fatalf("empty history: %+v", e)
	}
	for _, tag := range []string{"one", "two"} {
		f.Enqueue(reply(tag, 50))
		c.Turn(sid, "turn "+tag)
		st.Until[*protocol.TurnCompleted](c)
	}
	f.Enqueue(fo.Script(fo.Text("SUMMARY-1"), fo.Usage(50, 5)))
	c.Send(&protocol.SessionCompact{RequestID: "k1", SessionID: sid})
	started := st.Expect[*protocol.TurnStarted](c)
	cc := st.Expect[*protocol.ContextCompacted](c)
	end := st.Expect[*protocol.TurnCompleted](c)
	if started.RequestID != "k1" || cc.RequestID != "k1" || cc.RemovedMessages != 2 || end.Steps != 0 || end.Usage == nil || end.Usage.InputTokens != 50 {
		t.Fatalf("manual compaction: %+v %+v %+v", started, cc, end)
	}
	f.Enqueue(reply("three", 10))
	c.Turn(sid, "turn three")
	st.Until[*protocol.TurnCompleted](c)
	m := f.Requests()[3].Messages
	if !strings.Contains(m[1].Content, "SUMMARY-1") || m[2].Content != "turn two" {
		t.Fatalf("after session.compact: %+v", m)
	}
	// During a turn it is refused.
	f.Enqueue(fo.Script(fo.Text("busy"), fo.Hang()))
	turn := c.Turn(sid, "busy")
	st.Expect[*protocol.AssistantDelta](c)
	c.Send(&protocol.SessionCompact{RequestID: "k2", SessionID: sid})
	c.ExpectError(protocol.ErrTurnActive)
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: turn.TurnID})
	st.Until[*protocol.TurnCancelled](c)
}

func TestTrimAndHistoryLimit(t *testing.T) {
	t.Parallel()
	f, s := small(t, 1000000, st.Options{MaxHistoryBytes: 5000})
	sid, _ := session(t, s, 3)
	c := s.Client
	for _, tag := range []string{"one", "two"} {
		f.Enqueue(reply(tag, 2000))
		c.Turn(sid, "turn "+tag)
		evs, _ := st.Until[*protocol.TurnCompleted](c)
		if strings.Contains(st.Kinds(evs), "session.trimmed") {
			t.Fatalf("trimmed too early: %s", st.Kinds(evs))
		}
	}
	f.Enqueue(reply("three", 2000))
	turn := c.Turn(sid, "turn three")
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	tr, ok := evs[len(evs)-2].(*protocol.SessionTrimmed)
	if !ok || tr.RemovedMessages != 2 || tr.HistoryBytes > 5000 || tr.RequestID != turn.RequestID {
		t.Fatalf("events %s; session.trimmed = %+v", st.Kinds(evs), tr)
	}
	f.Enqueue(reply("four", 10))
	c.Turn(sid, "turn four")
	st.Until[*protocol.TurnCompleted](c)
	if m := f.Requests()[3].Messages; m[1].Content != "turn two" {
		t.Fatalf("the oldest turn is still sent: %+v", m[1])
	}
	// A turn that cannot fit on its own fails, and keeps only its prompt.
	f.Enqueue(reply("huge", 6000))
	c.Turn(sid, "turn huge")
	_, fail := st.Until[*protocol.TurnFailed](c)
	if fail.Code != protocol.FailHistoryLimit {
		t.Fatalf("turn.failed = %+v", fail)
	}
	f.Enqueue(reply("after", 10))
	c.Turn(sid, "after")
	st.Until[*protocol.TurnCompleted](c)
	m := f.Requests()[5].Messages
	var sawPrompt bool
	for _, x := range m {
		if strings.Contains(x.Content, strings.Repeat("x", 2000)) && strings.HasPrefix(x.Content, "huge") {
			t.Fatal("the oversized reply is still in the history")
		}
		sawPrompt = sawPrompt || x.Content == "turn huge"
	}
	if !sawPrompt {
		t.Fatal("the failed turn's prompt was dropped too")
	}
}

// TestCompactionCarriesEarlierSummaries: three compactions in a row. Each
// compacts more history than half the window, so the transcript it
// summarizes is cut; the earlier summary must still reach the model whole,
// so that what the first summary held survives the second and the third.
func TestCompactionCarriesEarlierSummaries(t *testing.T) {
	t.Parallel()
	// A 3,000-token window: compaction starts past 2,400 and a compaction
	// request holds at most 1,500 tokens of transcript. Every reply, an
	// answer or a summary, is about 430 tokens; the script has replies to
	// spare, so a turn that compacts (two requests) takes its answer from
	// the next turn's.
	f, s := small(t, 3000, st.Options{})
	sid := toolFree(t, s)
	c := s.Client
	replyText := func(i int) string { return fmt.Sprintf("R%d-", i) }
	const spare = 4
	for i := range spare {
		f.Enqueue(reply(replyText(i), 1500))
	}
	var compactions []int // request indices
	for turn := 1; len(compactions) < 3; turn++ {
		if turn > 40 {
			t.Fatalf("only %d compactions after 40 turns", len(compactions))
		}
		f.Enqueue(reply(replyText(turn+spare-1), 1500))
		n := len(f.Requests())
		c.Turn(sid, fmt.Sprint("turn ", turn))
		evs, _ := st.Until[*protocol.TurnCompleted](c)
		if strings.Contains(st.Kinds(evs), "context.compacted") {
			compactions = append(compactions, n)
		}
	}
	reqs := f.Requests()
	for i, at := range compactions {
		req := reqs[at]
		if !strings.Contains(req.Messages[0].Content, "You summarize the earlier part") {
			t.Fatalf("request %d is not a summary request: %.80q", at, req.Messages[0].Content)
		}
		prompt := req.Messages[len(req.Messages)-1].Content
		if !strings.Contains(prompt, "earlier entries omitted") {
			t.Fatalf("compaction %d fit its transcript whole; the test needs a longer one:\n%.300s", i+1, prompt)
		}
		if i == 0 {
			continue
		}
		// The reply to the previous compaction request was its summary.
		earlier := replyText(compactions[i-1])
		if !strings.HasPrefix(prompt, "Summary of the conversation before the transcript below") ||
			!strings.Contains(prompt, "\n\n"+earlier) {
			t.Fatalf("compaction %d does not carry summary %d (%s) forward:\n%.400s", i+1, i, earlier, prompt)
		}
	}
	// The conversation goes on from the third summary.
	f.Enqueue(reply("last", 10))
	c.Turn(sid, "last turn")
	st.Until[*protocol.TurnCompleted](c)
	reqs = f.Requests()
	third := replyText(compactions[2])
	if m := reqs[len(reqs)-1].Messages; !strings.HasPrefix(m[1].Content, loop.SummaryPrefix) || !strings.Contains(m[1].Content, third) {
		t.Fatalf("the turn after three compactions starts with %.120q, want summary %s", m[1].Content, third)
	}
}
