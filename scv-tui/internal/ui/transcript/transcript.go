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

// SetStyles changes the styles and the Markdown renderer (the terminal's
// background became known); every item renders again when next shown.
func (t *Transcript) SetStyles(st styles.Styles, md *markdown.Renderer) {
	t.st, t.md = st, md
	for _, it := range t.items {
		it.dirty = true
	}
	if t.live != nil {
		t.live.dirty = true
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

// UpdateCards applies f to every card whose key starts with prefix (the
// cards of one turn) and re-renders those it changed.
func (t *Transcript) UpdateCards(prefix string, f func(*toolcard.Card)) {
	for key := range t.cards {
		if strings.HasPrefix(key, prefix) {
			t.UpdateCard(key, f)
		}
	}
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
