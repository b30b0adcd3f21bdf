package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
)

// chooser draws choices from fuzz bytes, or from a seeded generator.
type chooser struct {
	data []byte
	rng  *rand.Rand
}

func (c *chooser) n(k int) int {
	if c.rng != nil {
		return c.rng.IntN(k)
	}
	if len(c.data) == 0 {
		return 0
	}
	b := c.data[0]
	c.data = c.data[1:]
	return int(b) % k
}

func (c *chooser) done() bool { return c.rng == nil && len(c.data) == 0 }

var (
	fuzzTurns = []string{tid, tid2, "t3"}
	fuzzCalls = []string{"call_1", "call_2", "c"}
	fuzzTexts = []string{"", "hi", "line\nline", "\x1b[2J\x1b[31mred", "# h\n```go\nx\n```", strings.Repeat("w ", 300), "日本語", "\t\r\n"}
	fuzzKeys  = []string{"enter", "esc", "tab", "up", "down", "pgup", "pgdown", "home", "end", "ctrl+o", "ctrl+r", "y", "n", "a", "v", "d", "K", "J", "p", "e", "x", "/", "alt+enter", "backspace", "shift+up"}
)

// randomEvent builds one event frame, mostly well-sequenced, sometimes
// with a gap, a repeat or another session.
func randomEvent(c *chooser, seq *uint64) protocol.Event {
	s := sid
	if c.n(10) == 0 {
		s = "other"
	}
	switch c.n(6) {
	case 0: // gap
		*seq += uint64(c.n(3) + 2)
	case 1: // repeat
	default:
		*seq++
	}
	turn := fuzzTurns[c.n(len(fuzzTurns))]
	call := fuzzCalls[c.n(len(fuzzCalls))]
	text := fuzzTexts[c.n(len(fuzzTexts))]
	th := protocol.TurnHeader{RequestID: fmt.Sprint(c.n(20)), SessionID: s, TurnID: turn, Seq: *seq}
	sh := protocol.SessionHeader{RequestID: fmt.Sprint(c.n(20)), SessionID: s, Seq: *seq}
	entry := protocol.QueueEntry{QueueID: fuzzCalls[c.n(3)], Revision: int64(c.n(4)), Prompt: text, Position: c.n(5) - 1}
	rule := &protocol.Rule{Tool: "bash", Key: "bash:go", Description: text}
	switch c.n(26) {
	case 0:
		return &protocol.TurnStarted{TurnHeader: th}
	case 1, 2, 3:
		return &protocol.AssistantDelta{TurnHeader: th, Content: text}
	case 4:
		return &protocol.AssistantCompleted{TurnHeader: th, Content: text}
	case 5:
		args := json.RawMessage(`{"command":"go test"}`)
		if c.n(3) == 0 {
			args = json.RawMessage(`"raw {"`)
		}
		return &protocol.ToolProposed{TurnHeader: th, CallID: call, Name: []string{"bash", "agent", "read"}[c.n(3)], Arguments: args}
	case 6:
		r := rule
		if c.n(2) == 0 {
			r = nil
		}
		return &protocol.ApprovalRequested{TurnHeader: th, ApprovalID: "ap" + call, CallID: call, Name: "bash", Risk: protocol.RiskProcess, Cwd: ws, Summary: text, Rule: r}
	case 7:
		return &protocol.ToolStarted{TurnHeader: th, CallID: call, Name: "bash", Rule: rule}
	case 8:
		return &protocol.ToolProgress{TurnHeader: th, CallID: call, Name: "bash", Line: text}
	case 9:
		return &protocol.ToolCompleted{TurnHeader: th, CallID: call, Name: "bash", Success: c.n(2) == 0, Output: text, Truncated: c.n(2) == 0}
	case 10:
		return &protocol.ContextCompacted{TurnHeader: th, BeforeTokens: 100, AfterTokens: 10}
	case 11:
		return &protocol.TurnCompleted{TurnHeader: th, Steps: c.n(3), Usage: &protocol.Usage{InputTokens: 10, OutputTokens: 5}}
	case 12:
		return &protocol.TurnCancelled{TurnHeader: th}
	case 13:
		return &protocol.TurnFailed{TurnHeader: th, Code: protocol.FailureCodes[c.n(len(protocol.FailureCodes))], Message: text}
	case 14:
		return &protocol.QueueEnqueued{SessionHeader: sh, Entry: entry}
	case 15:
		return &protocol.QueueUpdated{SessionHeader: sh, Entry: entry}
	case 16:
		return &protocol.QueueMoved{SessionHeader: sh, Entry: entry}
	case 17:
		return &protocol.QueueRemoved{SessionHeader: sh, Entry: entry}
	case 18:
		return &protocol.QueueDequeued{SessionHeader: sh, Entry: entry}
	case 19:
		return &protocol.SessionPaused{SessionHeader: sh, Paused: c.n(2) == 0}
	case 20:
		return &protocol.SessionCleared{SessionHeader: sh}
	case 21:
		return &protocol.SessionTrimmed{SessionHeader: sh, RemovedMessages: 3}
	case 22:
		return &protocol.Error{RequestID: fmt.Sprint(c.n(20)), Code: protocol.ErrorCodes[c.n(len(protocol.ErrorCodes))], Message: text, Entry: &entry}
	case 23:
		return &protocol.SessionReplay{RequestID: "2", SessionID: s, Items: []protocol.ReplayItem{{Kind: "user", Text: text}, {Kind: "tool", Name: "bash", Text: text}, {Kind: "weird"}}}
	case 24:
		return &protocol.SessionListed{RequestID: fmt.Sprint(c.n(20)), Sessions: []protocol.SessionSummary{{SessionID: sid}, {SessionID: "x", Title: text}}}
	default:
		return &protocol.QueueSnapshot{SessionHeader: sh, Entries: []protocol.QueueEntry{entry}}
	}
}

// drive feeds random messages to a connected model and checks the screen
// after each one.
func drive(t *testing.T, c *chooser, steps int) {
	h := newHarness(t)
	h.connect("scv-demo")
	seq := h.seq
	w, hh := 80, 24
	for i := 0; i < steps && !c.done(); i++ {
		var msg tea.Msg
		switch c.n(10) {
		case 0, 1, 2, 3, 4:
			msg = ServerEvent{Event: randomEvent(c, &seq)}
		case 5, 6:
			msg = keyMsg(fuzzKeys[c.n(len(fuzzKeys))])
		case 7:
			msg = tea.PasteMsg{Content: fuzzTexts[c.n(len(fuzzTexts))]}
		case 8:
			w, hh = c.n(120)+1, c.n(40)+1
			msg = tea.WindowSizeMsg{Width: w, Height: hh}
		default:
			switch c.n(4) {
			case 0:
				msg = ServerProblem{Err: errors.New("bad line"), Exited: c.n(2) == 0}
			case 1:
				msg = ServerStarted{}
			case 2:
				msg = tickMsg{gen: h.m.tickGen}
			default:
				msg = tea.MouseWheelMsg{Button: tea.MouseWheelUp}
			}
		}
		h.m.Update(msg)
		out := h.m.render()
		if n := strings.Count(out, "\n") + 1; n != hh {
			t.Fatalf("step %d (%T): %d lines on a %d-line screen", i, msg, n, hh)
		}
		golden.RequireWidth(t, out, w)
		if h.m.overflow && hh >= 24 && h.m.dialog == nil && h.m.picker == nil {
			t.Errorf("the %dx%d frame was taller than the screen: the layout gave the transcript too much", w, hh)
		}
		if t.Failed() {
			t.Fatalf("step %d (%T %+v)", i, msg, msg)
		}
	}
}

func TestRandomMessagesNeverPanic(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			drive(t, &chooser{rng: rand.New(rand.NewPCG(seed, 42))}, 700)
		})
	}
}

func FuzzModel(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("approval queue cancel"))
	f.Fuzz(func(t *testing.T, data []byte) {
		drive(t, &chooser{data: data}, 500)
	})
}
