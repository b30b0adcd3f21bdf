package app

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/toolcard"
	"github.com/scv-cli/scv/scv-tui/internal/ui/transcript"
)

// loaded returns a connected model whose transcript holds n items: prompts,
// Markdown replies, tool cards and notices, as a long session would.
func loaded(b *testing.B, n int) *harness {
	h := newHarness(b)
	h.connect("gpt-4.1-mini")
	tr := h.m.transcript
	for i := range n {
		switch i % 4 {
		case 0:
			tr.AddUser(fmt.Sprintf("prompt %d: please look at the build and fix what fails", i))
		case 1:
			tr.AddReply(fmt.Sprintf("Reply %d with **bold**, `code` and a list:\n\n- one\n- two\n\n```go\nfunc f%d() {}\n```", i, i))
		case 2:
			c := toolcard.New(fmt.Sprint(i), "bash", json.RawMessage(`{"command":"go test ./..."}`))
			c.Complete(true, "ok  pkg/a 0.1s\nok  pkg/b 0.2s", false)
			tr.AddCard(fmt.Sprint(i), c)
		default:
			tr.AddNotice(transcript.Info, "The turn was cancelled.")
		}
	}
	_ = h.m.View()
	return h
}

// BenchmarkKeystroke measures one keystroke's Update plus View with a
// transcript of 10,000 items.
func BenchmarkKeystroke(b *testing.B) {
	h := loaded(b, 10_000)
	if h.m.transcript.Len() != 10_000 {
		b.Fatalf("transcript holds %d items", h.m.transcript.Len())
	}
	key := tea.KeyPressMsg{Code: 'x', Text: "x"}
	bs := tea.KeyPressMsg{Code: tea.KeyBackspace}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		k := key
		if i%2 == 1 {
			k = bs
		}
		h.m.Update(k)
		_ = h.m.View()
	}
}

// BenchmarkStreamDelta streams replies of 2,000 deltas into transcripts of
// 10 and 10,000 items; ns/delta is the Update plus View of one delta.
func BenchmarkStreamDelta(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			h := loaded(b, n)
			seq := h.m.lastSeq
			next := func() uint64 { seq++; return seq }
			turn := 0
			b.ReportAllocs()
			b.ResetTimer()
			var deltas int
			for b.Loop() {
				turn++
				id := fmt.Sprintf("turn-%d", turn)
				h.m.Update(ServerEvent{Event: &protocol.TurnStarted{TurnHeader: protocol.TurnHeader{SessionID: sid, TurnID: id, Seq: next()}}})
				for d := range 2000 {
					content := "word "
					if d%40 == 39 {
						content = "end of a line.\n"
					}
					h.m.Update(ServerEvent{Event: &protocol.AssistantDelta{TurnHeader: protocol.TurnHeader{SessionID: sid, TurnID: id, Seq: next()}, Content: content}})
					_ = h.m.View()
					deltas++
				}
				b.StopTimer()
				h.m.Update(ServerEvent{Event: &protocol.TurnCancelled{TurnHeader: protocol.TurnHeader{SessionID: sid, TurnID: id, Seq: next()}}})
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(deltas), "ns/delta")
		})
	}
}

// BenchmarkKeystrokeLargePaste measures a keystroke's Update plus View
// with a 256 KiB prompt pasted in the editor: 4,000 lines, or one line.
func BenchmarkKeystrokeLargePaste(b *testing.B) {
	for _, c := range []struct {
		name string
		text string
	}{
		{"lines", strings.Repeat("a pasted line of sixty-four bytes, give or take a few more.\n", 4096)},
		{"one_line", strings.Repeat("x", 256<<10)},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := loaded(b, 100)
			h.m.Update(tea.PasteMsg{Content: c.text})
			key := tea.KeyPressMsg{Code: 'x', Text: "x"}
			bs := tea.KeyPressMsg{Code: tea.KeyBackspace}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				k := key
				if i%2 == 1 {
					k = bs
				}
				h.m.Update(k)
				_ = h.m.View()
			}
		})
	}
}
