// Package queue is the panel of prompts queued behind the running turn.
// The server owns the queue: the panel shows only what queue.* events and
// queue.snapshot say, in server order, and never infers an entry from the
// user's input.
package queue

import (
	"fmt"
	"strings"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// Panel is the queue view: entries in order, a selection, and the paused
// state the server last reported.
type Panel struct {
	entries  []protocol.QueueEntry
	selected int
	focused  bool
	paused   bool
}

// Entries returns the entries in server order.
func (p *Panel) Entries() []protocol.QueueEntry { return p.entries }

// Len is the number of queued entries.
func (p *Panel) Len() int { return len(p.entries) }

// Paused reports the last paused state the server sent.
func (p *Panel) Paused() bool { return p.paused }

// SetPaused records session.paused.
func (p *Panel) SetPaused(v bool) { p.paused = v }

// Focused reports whether the panel takes the keys.
func (p *Panel) Focused() bool { return p.focused && len(p.entries) > 0 }

// Focus gives the panel the keys (or takes them back).
func (p *Panel) Focus(v bool) { p.focused = v && len(p.entries) > 0 }

// Selected returns the selected entry.
func (p *Panel) Selected() (protocol.QueueEntry, bool) {
	if p.selected < 0 || p.selected >= len(p.entries) {
		return protocol.QueueEntry{}, false
	}
	return p.entries[p.selected], true
}

// Select moves the selection by d, within the list.
func (p *Panel) Select(d int) {
	if len(p.entries) == 0 {
		return
	}
	p.selected = min(max(p.selected+d, 0), len(p.entries)-1)
}

// Neighbour returns the entry d places from the selected one.
func (p *Panel) Neighbour(d int) (protocol.QueueEntry, bool) {
	i := p.selected + d
	if i < 0 || i >= len(p.entries) {
		return protocol.QueueEntry{}, false
	}
	return p.entries[i], true
}

// Snapshot replaces the list (queue.snapshot).
func (p *Panel) Snapshot(entries []protocol.QueueEntry) {
	p.entries = append(p.entries[:0:0], entries...)
	p.clamp()
}

// Clear empties the list (session.cleared drops every queued prompt).
func (p *Panel) Clear() {
	p.entries = nil
	p.clamp()
}

// Enqueued inserts the entry at its position (queue.enqueued).
func (p *Panel) Enqueued(e protocol.QueueEntry) { p.place(e) }

// Updated replaces the entry (queue.updated, or the current entry of a
// queue_conflict error).
func (p *Panel) Updated(e protocol.QueueEntry) { p.place(e) }

// Moved puts the entry at its new position (queue.moved).
func (p *Panel) Moved(e protocol.QueueEntry) {
	sel, hadSel := p.Selected()
	p.place(e)
	if hadSel && sel.QueueID == e.QueueID {
		p.selected = p.index(e.QueueID) // the selection follows a moved entry
	}
}

// Removed drops the entry (queue.removed, queue.dequeued).
func (p *Panel) Removed(e protocol.QueueEntry) {
	if i := p.index(e.QueueID); i >= 0 {
		p.entries = append(p.entries[:i], p.entries[i+1:]...)
	}
	p.clamp()
}

func (p *Panel) index(id string) int {
	for i, e := range p.entries {
		if e.QueueID == id {
			return i
		}
	}
	return -1
}

// place removes any entry with e's id and inserts e at its position. The
// event's position is the server's index, so applying it in order keeps
// the list equal to the server's.
func (p *Panel) place(e protocol.QueueEntry) {
	if i := p.index(e.QueueID); i >= 0 {
		p.entries = append(p.entries[:i], p.entries[i+1:]...)
	}
	at := min(max(e.Position, 0), len(p.entries))
	p.entries = append(p.entries, protocol.QueueEntry{})
	copy(p.entries[at+1:], p.entries[at:])
	p.entries[at] = e
	p.clamp()
}

func (p *Panel) clamp() {
	p.selected = min(max(p.selected, 0), max(len(p.entries)-1, 0))
	if len(p.entries) == 0 {
		p.focused = false
	}
}

// Height is the rows View takes at most rows entries.
func (p *Panel) Height(rows int) int {
	if len(p.entries) == 0 {
		return 0
	}
	n := min(len(p.entries), rows)
	if n < len(p.entries) {
		n++ // "… N more"
	}
	h := 1 + n
	if p.Focused() {
		h++ // the key hint
	}
	return h
}

// View renders the panel, showing at most rows entries around the
// selection; nothing when the queue is empty.
func (p *Panel) View(st styles.Styles, width, rows int) string {
	if len(p.entries) == 0 {
		return ""
	}
	rows = max(rows, 1)
	title := fmt.Sprintf("Queued (%d)", len(p.entries))
	if p.paused {
		title += " · paused: no prompt starts until you resume (p)"
	}
	if !p.Focused() {
		title += " · Tab to manage"
	}
	lines := []string{st.Panel.Render(wrap.Truncate(title, width))}
	start := 0
	if p.selected >= rows {
		start = p.selected - rows + 1
	}
	end := min(start+rows, len(p.entries))
	for i := start; i < end; i++ {
		e := p.entries[i]
		line := fmt.Sprintf("%d. %s", i+1, wrap.OneLine(e.Prompt))
		if e.Submitter != "" && e.Submitter != "scv-tui" {
			line += " (" + wrap.OneLine(e.Submitter) + ")"
		}
		line = wrap.Truncate(line, width-2)
		if p.Focused() && i == p.selected {
			lines = append(lines, "▸ "+st.Selected.Render(line))
		} else {
			lines = append(lines, "  "+line)
		}
	}
	if hidden := len(p.entries) - (end - start); hidden > 0 {
		lines = append(lines, st.Dim.Render(wrap.Truncate(fmt.Sprintf("  … %d more", hidden), width)))
	}
	if p.Focused() {
		lines = append(lines, st.Dim.Render(wrap.Truncate("e edit · K/J move up/down · d remove · p pause · Tab/Esc back", width)))
	}
	return strings.Join(lines, "\n")
}
