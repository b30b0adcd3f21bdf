package transcript

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
	"github.com/scv-cli/scv/scv-tui/internal/ui/markdown"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/toolcard"
)

func newT(w, h int) *Transcript {
	st := styles.Default()
	t := New(st, markdown.New(st.MarkdownStyle))
	t.SetSize(w, h)
	return t
}

func TestGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		w, h int
		fill func(*Transcript)
	}{
		{"streaming", 60, 10, func(tr *Transcript) {
			tr.AddUser("Explain the build.")
			for _, d := range []string{"The build ", "runs in **two** steps:\n", "1. compile\n", "2. te"} {
				tr.Delta(d)
			}
		}},
		{"completed_markdown", 60, 16, func(tr *Transcript) {
			tr.AddUser("Show me main.")
			tr.Delta("partial")
			tr.Complete("Here is `main`:\n\n```go\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n```\n\n- one\n- two")
		}},
		{"interrupted", 60, 8, func(tr *Transcript) {
			tr.AddUser("Write a poem.")
			tr.Delta("Roses are red,\nviolets")
			tr.Interrupt()
			tr.AddNotice(Info, "The turn was cancelled.")
		}},
		{"tools_only_reply", 60, 8, func(tr *Transcript) {
			tr.AddUser("Read it.")
			tr.Delta("x")
			tr.Complete("")
			c := toolcard.New("c1", "read", json.RawMessage(`{"path":"a.go"}`))
			tr.AddCard("t/c1", c)
		}},
		{"notices", 60, 12, func(tr *Transcript) {
			tr.AddNotice(Info, "The context was compacted: about 52000 tokens became 9100 (118 messages summarized).")
			tr.AddNotice(Warn, "Events were lost: seq jumped from 4 to 7.")
			tr.AddNotice(Error, "The turn failed: the model's reply was larger than the 4 MiB limit.")
		}},
		{"narrow", 40, 14, func(tr *Transcript) {
			tr.AddUser("A prompt that is long enough to wrap at forty columns, surely.")
			tr.AddReply("A reply with a [link](https://example.com) and a very-long-identifier-that-cannot-wrap-anywhere-at-all.")
			c := toolcard.New("c1", "bash", json.RawMessage(`{"command":"go vet ./..."}`))
			c.Start("")
			tr.AddCard("t/c1", c)
		}},
		{"scrolled", 40, 6, func(tr *Transcript) {
			for i := range 10 {
				tr.AddNotice(Info, fmt.Sprintf("notice %d", i))
			}
			tr.ScrollUp(7)
		}},
		{"marker", 50, 8, func(tr *Transcript) {
			tr.SetBounds(0, 3)
			for i := range 6 {
				tr.AddUser(fmt.Sprintf("prompt %d", i))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newT(tt.w, tt.h)
			tt.fill(tr)
			out := tr.View()
			if n := strings.Count(out, "\n") + 1; n != tt.h {
				t.Errorf("view has %d lines, want %d", n, tt.h)
			}
			golden.RequireWidth(t, out, tt.w)
			golden.RequireStyled(t, out)
		})
	}
}

func TestBoundsItems(t *testing.T) {
	t.Parallel()
	tr := newT(40, 5)
	tr.SetBounds(0, 100)
	for i := range 1000 {
		tr.AddUser(fmt.Sprintf("p%d", i))
	}
	if tr.Len() != 101 { // 100 items plus the marker
		t.Errorf("len = %d, want 101", tr.Len())
	}
	if tr.Dropped() != 900 {
		t.Errorf("dropped = %d, want 900", tr.Dropped())
	}
	if !strings.Contains(golden.Plain(strings.Join(tr.itemLines(0), "\n")), "900 earlier items were removed") {
		t.Errorf("marker: %q", tr.itemLines(0))
	}
	if !strings.Contains(tr.View(), "p999") {
		t.Error("the newest item is not shown")
	}
}

func TestBoundsBytes(t *testing.T) {
	t.Parallel()
	tr := newT(40, 5)
	tr.SetBounds(10_000, 0)
	big := strings.Repeat("x", 999)
	for range 100 {
		tr.AddReply(big)
	}
	if tr.Bytes() > 10_000 {
		t.Errorf("bytes = %d, over the 10000 bound", tr.Bytes())
	}
	// One item bigger than the whole bound still stays: the newest is kept.
	tr.Delta(strings.Repeat("y", 20_000))
	if tr.live == nil || tr.Len() != 2 {
		t.Errorf("the live reply was dropped: len %d", tr.Len())
	}
	tr.Delta("more")
	tr.Complete(strings.Repeat("y", 20_000) + "more")
	if tr.Bytes() != 20_004 {
		t.Errorf("bytes = %d after completion", tr.Bytes())
	}
}

func TestScroll(t *testing.T) {
	t.Parallel()
	tr := newT(30, 5)
	for i := range 20 {
		tr.AddNotice(Info, fmt.Sprintf("n%02d", i)) // 2 lines each with the separator
	}
	if !tr.Following() {
		t.Fatal("not following at start")
	}
	tr.PageUp()
	if tr.Following() {
		t.Fatal("still following after PageUp")
	}
	tr.Home()
	if v := golden.Plain(tr.View()); !strings.HasPrefix(v, "• n00") {
		t.Errorf("Home shows %q", v)
	}
	tr.ScrollDown(1000)
	if !tr.Following() {
		t.Error("scrolling past the end does not follow again")
	}
	tr.PageUp()
	tr.AddNotice(Info, "new")
	if strings.Contains(tr.View(), "new") {
		t.Error("a new item moved a scrolled-up view")
	}
	tr.End()
	if !strings.Contains(tr.View(), "new") {
		t.Error("End does not show the newest item")
	}
	// Scrolling an empty or short transcript is harmless.
	short := newT(30, 10)
	short.ScrollUp(5)
	short.PageDown()
	short.Home()
	if !short.Following() {
		t.Error("a transcript that fits should keep following")
	}
}

func TestResizeAnyTime(t *testing.T) {
	t.Parallel()
	tr := newT(80, 10)
	tr.AddReply("# Heading\n\nSome text that will wrap differently at each width we try here.")
	tr.Delta("live text streaming along")
	for _, w := range []int{80, 40, 12, 1, 200, 40} {
		tr.SetSize(w, 7)
		golden.RequireWidth(t, tr.View(), max(w, 1))
	}
}

func TestCardLifecycle(t *testing.T) {
	t.Parallel()
	tr := newT(50, 10)
	c := toolcard.New("c1", "bash", json.RawMessage(`{"command":"sleep 1"}`))
	tr.AddCard("k", c)
	tr.UpdateCard("k", func(c *toolcard.Card) { c.Start("") })
	if len(tr.running) != 1 {
		t.Fatal("running card not tracked")
	}
	tr.SetFrame("⠙")
	if !strings.Contains(tr.View(), "⠙") {
		t.Error("spinner frame not shown")
	}
	tr.UpdateCard("k", func(c *toolcard.Card) { c.Complete(true, strings.Repeat("line\n", 10), false) })
	if len(tr.running) != 0 {
		t.Error("finished card still tracked as running")
	}
	if !tr.ToggleLastCard() || !tr.Card("k").Expanded {
		t.Error("toggle did not expand the card")
	}
	if tr.UpdateCard("missing", func(*toolcard.Card) {}) {
		t.Error("UpdateCard of a missing card reported true")
	}
}

func TestClear(t *testing.T) {
	t.Parallel()
	tr := newT(40, 5)
	tr.SetBounds(0, 2)
	for range 5 {
		tr.AddUser("x")
	}
	tr.Delta("live")
	tr.Clear()
	if tr.Len() != 0 || tr.Bytes() != 0 || tr.Dropped() != 0 || tr.live != nil {
		t.Errorf("not empty after Clear: len %d bytes %d", tr.Len(), tr.Bytes())
	}
	tr.Delta("again")
	if tr.Len() != 1 {
		t.Error("streaming after Clear failed")
	}
}

// TestRenderCostIsVisibleOnly checks that a view renders only the items it
// shows: loading, viewing, resizing and scrolling a long transcript renders
// a screenful of items, not the whole transcript.
func TestRenderCostIsVisibleOnly(t *testing.T) {
	t.Parallel()
	tr := newT(80, 20)
	for i := range 10_000 {
		if i%2 == 0 {
			tr.AddReply(fmt.Sprintf("reply **%d**", i))
		} else {
			tr.AddUser(fmt.Sprintf("prompt %d", i))
		}
	}
	if tr.renders != 0 {
		t.Fatalf("adding items rendered %d of them", tr.renders)
	}
	tr.View()
	if tr.renders > 20 {
		t.Errorf("one view rendered %d items for a 20-line screen", tr.renders)
	}
	before := tr.renders
	tr.View()
	if tr.renders != before {
		t.Errorf("a second view re-rendered %d cached items", tr.renders-before)
	}
	tr.SetSize(60, 20)
	tr.View()
	if n := tr.renders - before; n > 20 {
		t.Errorf("a resize re-rendered %d items", n)
	}
	before = tr.renders
	tr.PageUp()
	tr.View()
	if n := tr.renders - before; n > 20 {
		t.Errorf("a page up rendered %d items", n)
	}
	before = tr.renders
	tr.Home()
	tr.View()
	if n := tr.renders - before; n > 40 {
		t.Errorf("Home rendered %d items", n)
	}
}

func TestToggleSelectsTheCardOnScreen(t *testing.T) {
	t.Parallel()
	tr := newT(50, 6)
	for i := range 3 {
		c := toolcard.New(fmt.Sprint(i), "bash", json.RawMessage(`{"command":"c`+fmt.Sprint(i)+`"}`))
		c.Complete(true, strings.Repeat("out\n", 8), false)
		tr.AddCard(fmt.Sprint(i), c)
		for range 5 {
			tr.AddNotice(Info, "filler")
		}
	}
	tr.Home() // card 0 is on screen
	if !tr.ToggleLastCard() || !tr.Card("0").Expanded || tr.Card("2").Expanded {
		t.Errorf("toggle did not pick the card on screen: 0=%v 2=%v", tr.Card("0").Expanded, tr.Card("2").Expanded)
	}
	tr.End() // no card on screen: the newest
	if !tr.ToggleLastCard() || !tr.Card("2").Expanded {
		t.Error("toggle did not fall back to the newest card")
	}
}

func TestHugeReplyIsPlain(t *testing.T) {
	t.Parallel()
	tr := newT(40, 5)
	tr.AddReply("**" + strings.Repeat("a ", markdownMax) + "**")
	if v := tr.View(); !strings.Contains(golden.Plain(v), "a a") {
		t.Errorf("huge reply not shown: %q", v)
	}
}

// TestCacheBounded scrolls through a long transcript with a small cache
// bound: the rendered lines held stay bounded, and the view stays right.
func TestCacheBounded(t *testing.T) {
	t.Parallel()
	tr := newT(60, 10)
	tr.cacheMax = 200 << 10
	for i := range 5000 {
		tr.AddNotice(Info, fmt.Sprintf("notice %d %s", i, strings.Repeat("x", 40)))
	}
	tr.Home()
	for range 3000 {
		tr.PageDown()
		_ = tr.View()
		if tr.Following() {
			break
		}
	}
	if !tr.Following() {
		t.Fatal("never reached the end")
	}
	// One window of 256 items on each side of three places, at most.
	if limit := tr.cacheMax + 3*(2*evictWindow+1)*200; tr.cached > limit {
		t.Errorf("cache holds %d bytes, over %d", tr.cached, limit)
	}
	sum := 0
	for _, it := range tr.items {
		sum += it.cacheN
	}
	if sum != tr.cached {
		t.Errorf("cache accounting %d, items hold %d", tr.cached, sum)
	}
	tr.Home()
	if v := golden.Plain(tr.View()); !strings.HasPrefix(v, "• notice 0 ") {
		t.Errorf("after eviction Home shows %q", v)
	}
}

// TestDeltaCostIndependentOfReplyLength checks that one delta and a view
// allocate about the same bytes early and late in a long reply, and
// whatever the transcript's length.
func TestDeltaCostIndependentOfReplyLength(t *testing.T) {
	// Serial: TotalAlloc counts every goroutine's allocations, and parallel
	// tests' would be counted as this one's.
	measure := func(items, lines int) float64 {
		tr := newT(80, 20)
		for i := range items {
			tr.AddUser(fmt.Sprintf("prompt %d", i))
		}
		for range lines {
			tr.Delta("a full line of streamed text\n")
		}
		tr.View()
		const runs = 200
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			tr.Delta("x ")
			tr.View()
		}
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc-before.TotalAlloc) / runs
	}
	base := measure(10, 10)
	for _, c := range []struct{ items, lines int }{{10, 10_000}, {9_000, 10}, {9_000, 10_000}} {
		if got := measure(c.items, c.lines); got > 2*base+1024 {
			t.Errorf("%d items, %d reply lines: %.0f bytes allocated per delta, %.0f for a short reply", c.items, c.lines, got, base)
		}
	}
}
