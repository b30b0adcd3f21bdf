package transcript

import (
	"fmt"

	"github.com/scv-cli/scv/scv-tui/internal/ui/toolcard"
)

// The bounds of the transcript: how many items and text bytes it keeps.

// track keeps the running cards apart, so a new spinner frame re-renders
// only them (SetFrame).
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
