// Package transcript is the scrolling conversation view: prompts, replies
// (streamed as plain text, then rendered as Markdown), tool cards and
// notices.
//
// Cost does not grow with its length: every finished item caches its
// rendered lines for the current width, the view renders only the items it
// shows (walking from the scroll anchor), a live reply re-wraps only its
// last line per delta, and the item count and text bytes are bounded (the
// oldest items leave, replaced by one marker).
package transcript

import (
	"fmt"
	"strings"

	"github.com/scv-cli/scv/scv-tui/internal/ui/markdown"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/toolcard"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// Kind is what an item shows.
type Kind int

// Item kinds.
const (
	User      Kind = iota // a prompt
	Assistant             // a reply: live while streaming, Markdown when done
	Tool                  // a tool card
	Notice                // a notice (info, warning or error level)
	Marker                // "older items were removed"
)

// Level is the weight of a notice.
type Level int

// Notice levels.
const (
	Info Level = iota
	Warn
	Error
)

// Default bounds, used until SetBounds is called (the protocol's defaults),
// and the bound of the rendered-lines cache.
const (
	DefaultMaxBytes   = 8 << 20
	DefaultMaxItems   = 10000
	DefaultCacheBytes = 32 << 20
)

type item struct {
	kind  Kind
	text  string // prompt, final reply, notice; "" for a live reply
	level Level
	live  *stream        // a reply still streaming
	card  *toolcard.Card // a tool call
	key   string         // a card's lookup key
	plain bool           // a reply that ended without assistant.completed: not Markdown
	size  int            // bytes counted against the bound

	// cache: rendered lines at cacheW; valid while !dirty.
	cacheW int
	lines  []string
	cacheN int // bytes of lines, counted against the cache bound
	dirty  bool
}

// stream is the text of a reply being streamed. Lines completed by a
// newline are wrapped once; only the last, partial line is wrapped again
// on each render.
type stream struct {
	buf       strings.Builder
	stableEnd int // bytes of buf up to and including the last '\n'
	stableW   int
	// lines[:stable] are the wrapped lines of buf[:wrapped] at stableW;
	// the rest are the partial last line's, rebuilt in place per render.
	lines   []string
	stable  int
	wrapped int // bytes of buf already in lines[:stable]
}

// pos is a scroll position: line `line` of item `idx`.
type pos struct{ idx, line int }

// Transcript is the conversation view. It is not safe for concurrent use.
type Transcript struct {
	st    styles.Styles
	md    *markdown.Renderer
	items []*item
	cards map[string]*item
	// running holds the cards whose spinner turns; kept apart from cards
	// so a spinner tick costs nothing per finished card.
	running map[string]*item
	live    *item // the reply being streamed, if any
	frame   string
	bytes   int
	maxB    int
	maxN    int
	drop    int // items removed so far
	width   int
	height  int
	follow  bool // the view sticks to the bottom
	// cached is the bytes of rendered lines held, bounded by cacheMax.
	cached   int
	cacheMax int
	// renders counts item renders, for tests that check the cost does not
	// grow with the transcript.
	renders int
	top     pos // first visible line when not following
}

// New returns an empty transcript.
func New(st styles.Styles, md *markdown.Renderer) *Transcript {
	return &Transcript{
		st: st, md: md, cards: make(map[string]*item), running: make(map[string]*item),
		maxB: DefaultMaxBytes, maxN: DefaultMaxItems,
		width: 80, height: 20, follow: true, frame: "⠋", cacheMax: DefaultCacheBytes,
	}
}

// SetBounds sets the memory bounds (bytes of text, items), as
// session.started advises; values below 1 keep the current bound.
func (t *Transcript) SetBounds(maxBytes int64, maxItems int) {
	if maxBytes > 0 {
		t.maxB = int(min(maxBytes, 1<<40))
	}
	if maxItems > 0 {
		t.maxN = maxItems
	}
	t.enforce()
}

// SetSize sets the view's size in cells. Items re-render lazily, when next
// shown.
func (t *Transcript) SetSize(width, height int) {
	t.width = max(width, 1)
	t.height = max(height, 1)
	if !t.follow && t.top.idx < len(t.items) {
		t.top.line = min(t.top.line, max(t.itemHeight(t.top.idx)-1, 0))
	}
}

// Len is the number of items, the marker included.
func (t *Transcript) Len() int { return len(t.items) }

// Bytes is the text the transcript holds, as counted against its bound.
func (t *Transcript) Bytes() int { return t.bytes }

// Dropped is the number of items removed to stay within the bounds.
func (t *Transcript) Dropped() int { return t.drop }

// Following reports whether the view sticks to the bottom.
func (t *Transcript) Following() bool { return t.follow }

// Clear removes every item (on session.cleared or a resume).
func (t *Transcript) Clear() {
	clear(t.items)
	t.items = t.items[:0]
	clear(t.cards)
	clear(t.running)
	t.live = nil
	t.bytes = 0
	t.cached = 0
	t.drop = 0
	t.follow = true
	t.top = pos{}
}

// AddUser appends a prompt.
func (t *Transcript) AddUser(prompt string) {
	t.add(&item{kind: User, text: wrap.Sanitize(prompt)})
}

// AddNotice appends a notice.
func (t *Transcript) AddNotice(level Level, text string) {
	t.add(&item{kind: Notice, level: level, text: wrap.Sanitize(text)})
}

// AddReply appends a finished reply (a replayed one), rendered as Markdown.
func (t *Transcript) AddReply(text string) {
	t.add(&item{kind: Assistant, text: wrap.Sanitize(text)})
}

// Delta appends streamed text to the live reply, starting one if needed.
func (t *Transcript) Delta(content string) {
	content = wrap.Sanitize(content)
	if t.live == nil {
		t.live = &item{kind: Assistant, live: &stream{}}
		t.add(t.live)
	}
	t.live.live.buf.WriteString(content)
	if i := strings.LastIndexByte(content, '\n'); i >= 0 {
		t.live.live.stableEnd = t.live.live.buf.Len() - len(content) + i + 1
	}
	t.live.size += len(content)
	t.bytes += len(content)
	t.live.dirty = true
	t.enforce()
}

// Complete ends the live reply with its canonical text, rendered as
// Markdown from now on. A reply that only requested tools (empty content)
// removes the preview, if any.
func (t *Transcript) Complete(content string) {
	content = wrap.Sanitize(content)
	if t.live == nil {
		if content != "" {
			t.AddReply(content)
		}
		return
	}
	it := t.live
	t.live = nil
	if content == "" {
		t.remove(it)
		return
	}
	t.bytes += len(content) - it.size
	it.size = len(content)
	it.text = content
	it.live = nil
	it.dirty = true
	t.enforce()
}

// Interrupt ends the live reply without a canonical text (the turn was
// cancelled or failed): its preview stays, as plain text.
func (t *Transcript) Interrupt() {
	if t.live == nil {
		return
	}
	it := t.live
	t.live = nil
	it.text = strings.TrimRight(it.live.buf.String(), "\n") + " [incomplete]"
	it.live = nil
	it.plain = true
	it.dirty = true
}

// AddCard appends a tool card, found later by key.
func (t *Transcript) AddCard(key string, c *toolcard.Card) {
	if old, ok := t.cards[key]; ok {
		old.key = ""
	}
	it := &item{kind: Tool, card: c, key: key, size: c.Size()}
	t.cards[key] = it
	t.track(it)
	t.add(it)
}

// Card returns the card with key, or nil.
func (t *Transcript) Card(key string) *toolcard.Card {
	if it, ok := t.cards[key]; ok {
		return it.card
	}
	return nil
}

// UpdateCard applies f to the card with key and re-renders it; it reports
// whether the card exists.
func (t *Transcript) UpdateCard(key string, f func(*toolcard.Card)) bool {
	it, ok := t.cards[key]
	if !ok {
		return false
	}
	f(it.card)
	t.track(it)
	n := it.card.Size()
	t.bytes += n - it.size
	it.size = n
	it.dirty = true
	t.enforce()
	return true
}

// ToggleLastCard expands or collapses a finished tool card: the lowest
// one on screen, so scrolling to a card selects it, else the newest. It
// reports whether there was one.
func (t *Transcript) ToggleLastCard() bool {
	first, last := t.visibleRange()
	for i := last; i >= first && i >= 0; i-- {
		if t.toggle(i) {
			return true
		}
	}
	for i := len(t.items) - 1; i >= 0; i-- {
		if t.toggle(i) {
			return true
		}
	}
	return false
}

func (t *Transcript) toggle(i int) bool {
	it := t.items[i]
	if it.kind != Tool || it.card.State < toolcard.Succeeded {
		return false
	}
	it.card.Expanded = !it.card.Expanded
	it.dirty = true
	if !t.follow && i == t.top.idx {
		t.top.line = 0 // a collapsing card must not leave the anchor past its end
	}
	return true
}

// visibleRange returns the indexes of the first and last items on screen
// (-1, -1 when empty).
func (t *Transcript) visibleRange() (first, last int) {
	if len(t.items) == 0 {
		return -1, -1
	}
	if t.follow {
		n := 0
		i := len(t.items) - 1
		for ; i > 0; i-- {
			n += t.itemHeight(i)
			if n >= t.height {
				break
			}
		}
		return i, len(t.items) - 1
	}
	n := t.itemHeight(t.top.idx) - t.top.line
	i := t.top.idx
	for i+1 < len(t.items) && n < t.height-1 {
		i++
		n += t.itemHeight(i)
	}
	return t.top.idx, i
}

// SetFrame sets the spinner frame of running cards. Only running cards
// that are visible are re-rendered, when next shown.
func (t *Transcript) SetFrame(frame string) {
	if frame == t.frame {
		return
	}
	t.frame = frame
	for _, it := range t.running {
		it.dirty = true
	}
}

func (t *Transcript) track(it *item) {
	if it.card.State == toolcard.Running {
		t.running[it.key] = it
	} else {
		delete(t.running, it.key)
	}
}

func (t *Transcript) add(it *item) {
	if it.size == 0 {
		it.size = len(it.text) + 16
	}
	it.dirty = true
	t.items = append(t.items, it)
	t.bytes += it.size
	t.enforce()
}

// remove takes one item out (a preview replaced by nothing).
func (t *Transcript) remove(it *item) {
	for i := len(t.items) - 1; i >= 0; i-- {
		if t.items[i] == it {
			t.items = append(t.items[:i], t.items[i+1:]...)
			t.items[:len(t.items)+1][len(t.items)] = nil
			t.bytes -= it.size
			t.cached -= it.cacheN
			if !t.follow {
				if t.top.idx > i {
					t.top.idx--
				} else if t.top.idx == i {
					t.top.line = 0
				}
				if t.top.idx >= len(t.items) {
					t.follow = true
				}
			}
			return
		}
	}
}

// enforce drops the oldest items until the transcript is within its
// bounds. The newest item always stays, and one marker item at the top
// says how many left.
func (t *Transcript) enforce() {
	first := 0
	if len(t.items) > 0 && t.items[0].kind == Marker {
		first = 1
	}
	n := 0
	for len(t.items)-first-n > 1 && (len(t.items)-first-n > t.maxN || t.bytes > t.maxB) {
		it := t.items[first+n]
		t.bytes -= it.size
		t.cached -= it.cacheN
		if it.key != "" && t.cards[it.key] == it {
			delete(t.cards, it.key)
			delete(t.running, it.key)
		}
		if it == t.live {
			t.live = nil
		}
		n++
	}
	if n == 0 {
		return
	}
	t.drop += n
	if first == 0 {
		// The marker takes the first dropped item's slot.
		t.items[n-1] = &item{kind: Marker}
		clear(t.items[:n-1])
		t.items = t.items[n-1:]
	} else {
		copy(t.items[1:], t.items[1+n:])
		clear(t.items[len(t.items)-n:])
		t.items = t.items[:len(t.items)-n]
	}
	m := t.items[0]
	m.text = fmt.Sprintf("… %d earlier items were removed to keep the transcript within %d items and %s", t.drop, t.maxN, formatBytes(t.maxB))
	m.dirty = true
	if !t.follow {
		shift := n
		if first == 0 {
			shift = n - 1
		}
		t.top.idx -= shift
		if t.top.idx <= 0 {
			t.top = pos{}
		}
	}
	// The backing array keeps its capacity; re-allocate when mostly empty
	// so removed items' memory goes back.
	if cap(t.items) > 64 && len(t.items) < cap(t.items)/4 {
		t.items = append([]*item(nil), t.items...)
	}
}

func formatBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// itemLines returns the rendered lines of item i at the current width,
// rendering it only when its cache is stale. A separator blank line
// follows every item.
func (t *Transcript) itemLines(i int) []string {
	it := t.items[i]
	if it.live != nil {
		return t.streamLines(it)
	}
	if !it.dirty && it.cacheW == t.width {
		return it.lines
	}
	it.lines = append(clip(t.render(it), t.width), "")
	it.cacheW = t.width
	it.dirty = false
	n := 0
	for _, l := range it.lines {
		n += len(l) + 16
	}
	t.cached += n - it.cacheN
	it.cacheN = n
	if t.cached > t.cacheMax {
		t.evict(i)
	}
	return it.lines
}

// evictWindow is how many items on each side of the one being rendered,
// and of the scroll anchor, keep their cache when the cache is full.
const evictWindow = 256

// evict drops the rendered lines of items far from item keep and from the
// scroll anchor, so the cache stays bounded however far the user scrolls.
// A pass costs O(items) and frees all but two windows, so it is rare.
func (t *Transcript) evict(keep int) {
	near := func(i, c int) bool { return i >= c-evictWindow && i <= c+evictWindow }
	t.cached = 0
	for i, it := range t.items {
		if near(i, keep) || near(i, t.top.idx) || near(i, len(t.items)-1) {
			t.cached += it.cacheN
			continue
		}
		it.lines, it.cacheN, it.dirty = nil, 0, true
	}
}

func (t *Transcript) itemHeight(i int) int { return len(t.itemLines(i)) }

// markdownMax is the largest reply rendered as Markdown; a larger one is
// wrapped as plain text, since rendering megabytes would stall the screen.
const markdownMax = 128 << 10

func (t *Transcript) render(it *item) []string {
	t.renders++
	w := t.width
	switch it.kind {
	case User:
		bar := t.st.UserBar.Render("┃ ")
		var out []string
		for _, l := range wrap.Lines(it.text, w-2) {
			out = append(out, bar+t.st.User.Render(l))
		}
		return out
	case Assistant:
		if it.plain || len(it.text) > markdownMax {
			return indent(wrap.Lines(it.text, w-2), t.st.Assistant.Render)
		}
		return t.md.Render(it.text, w)
	case Tool:
		return it.card.Render(t.st, w, t.frame)
	case Marker:
		return indent(wrap.Lines(it.text, w-2), t.st.Dim.Render)
	default:
		style := t.st.Notice
		prefix := "• "
		switch it.level {
		case Warn:
			style, prefix = t.st.Warning, "! "
		case Error:
			style, prefix = t.st.Error, "✗ "
		}
		lines := wrap.Lines(it.text, w-2)
		for i, l := range lines {
			p := "  "
			if i == 0 {
				p = prefix
			}
			lines[i] = style.Render(p + l)
		}
		return lines
	}
}

// clip cuts lines wider than width, in place. Prefixes and margins can pass
// a very small width; a line must never wrap on the terminal. It runs when
// an item is rendered into its cache, not on every view.
func clip(lines []string, width int) []string {
	for i, l := range lines {
		if wrap.Width(l) > width {
			lines[i] = wrap.Truncate(l, width)
		}
	}
	return lines
}

func indent(lines []string, style func(...string) string) []string {
	for i, l := range lines {
		lines[i] = "  " + style(l)
	}
	return lines
}

// streamLines renders a live reply: the lines ended by a newline are
// wrapped once per width; only the partial last line is wrapped per call.
func (t *Transcript) streamLines(it *item) []string {
	s := it.live
	w := t.width
	text := s.buf.String()
	if s.stableW != w {
		s.lines = s.lines[:0]
		s.stable = 0
		s.wrapped = 0
		s.stableW = w
	}
	// Lines are appended in place, never copied: a delta costs the size
	// of its own line, not of the reply so far. The slice returned is
	// valid until the next call.
	if s.wrapped < s.stableEnd {
		seg := text[s.wrapped : s.stableEnd-1] // without the final '\n'
		s.lines = s.lines[:s.stable]
		for _, l := range wrap.Lines(seg, w-2) {
			s.lines = append(s.lines, "  "+t.st.Assistant.Render(l))
		}
		clip(s.lines[s.stable:], w)
		s.stable = len(s.lines)
		s.wrapped = s.stableEnd
	}
	s.lines = s.lines[:s.stable]
	for _, l := range wrap.Lines(text[s.stableEnd:]+"▍", w-2) {
		s.lines = append(s.lines, "  "+t.st.Assistant.Render(l))
	}
	clip(s.lines[s.stable:], w)
	s.lines = append(s.lines, "")
	it.dirty = false
	return s.lines
}

// View renders the visible lines, exactly height lines of at most width
// cells.
func (t *Transcript) View() string {
	lines := t.visible()
	for len(lines) < t.height {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// visible returns the lines on screen: from the anchor down, or the last
// height lines when following. It renders only the items it reaches.
func (t *Transcript) visible() []string {
	h := t.height
	if len(t.items) == 0 {
		return nil
	}
	if t.follow {
		var chunks [][]string
		n := 0
		for i := len(t.items) - 1; i >= 0 && n < h; i-- {
			l := t.itemLines(i)
			chunks = append(chunks, l)
			n += len(l)
		}
		// Copy only the last h lines: the oldest chunk may be a long
		// reply of which a few lines show.
		out := make([]string, 0, min(n, h))
		skip := max(n-h, 0)
		for i := len(chunks) - 1; i >= 0; i-- {
			c := chunks[i]
			if skip >= len(c) {
				skip -= len(c)
				continue
			}
			out = append(out, c[skip:]...)
			skip = 0
		}
		return out
	}
	body := h - 1 // the last line says there is more below
	out := make([]string, 0, h)
	p := t.top
	for p.idx < len(t.items) && len(out) < body {
		l := t.itemLines(p.idx)
		if p.line < len(l) {
			out = append(out, l[p.line:min(len(l), p.line+body-len(out))]...)
		}
		p = pos{p.idx + 1, 0}
	}
	out = append(out, t.st.Dim.Render(wrap.Truncate("── more below · End follows the conversation ──", t.width)))
	return out
}

// followTop is the anchor of the view when it follows the bottom.
func (t *Transcript) followTop() (pos, bool) {
	n := 0
	for i := len(t.items) - 1; i >= 0; i-- {
		n += t.itemHeight(i)
		if n >= t.height {
			return pos{i, n - t.height}, true
		}
	}
	return pos{}, false // everything fits: nothing to scroll
}

// ScrollUp moves the view n lines up.
func (t *Transcript) ScrollUp(n int) {
	if t.follow {
		top, ok := t.followTop()
		if !ok {
			return
		}
		t.top = top
		t.follow = false
	}
	for n > 0 {
		if t.top.line > 0 {
			d := min(n, t.top.line)
			t.top.line -= d
			n -= d
			continue
		}
		if t.top.idx == 0 {
			break
		}
		t.top.idx--
		t.top.line = t.itemHeight(t.top.idx)
	}
}

// ScrollDown moves the view n lines down; reaching the bottom follows it
// again.
func (t *Transcript) ScrollDown(n int) {
	if t.follow {
		return
	}
	for n > 0 && t.top.idx < len(t.items) {
		rem := t.itemHeight(t.top.idx) - t.top.line
		if n < rem {
			t.top.line += n
			break
		}
		n -= rem
		t.top = pos{t.top.idx + 1, 0}
	}
	// Follow again once the rest fits on the screen.
	need := t.height - 1
	seen := 0
	for i := t.top.idx; i < len(t.items) && seen <= need; i++ {
		h := t.itemHeight(i)
		if i == t.top.idx {
			h -= t.top.line
		}
		seen += h
	}
	if seen <= need {
		t.follow = true
	}
}

// PageUp scrolls one screen up.
func (t *Transcript) PageUp() { t.ScrollUp(max(t.height-2, 1)) }

// PageDown scrolls one screen down.
func (t *Transcript) PageDown() { t.ScrollDown(max(t.height-2, 1)) }

// Home shows the oldest item.
func (t *Transcript) Home() {
	if _, ok := t.followTop(); !ok {
		return
	}
	t.follow = false
	t.top = pos{}
}

// End follows the newest output again.
func (t *Transcript) End() { t.follow = true }
