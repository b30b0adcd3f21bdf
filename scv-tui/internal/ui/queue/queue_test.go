package queue

import (
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
)

func entry(id string, rev int64, prompt string, pos int) protocol.QueueEntry {
	return protocol.QueueEntry{QueueID: id, Revision: rev, Prompt: prompt, Submitter: "scv-tui", Position: pos}
}

func ids(p *Panel) string {
	var out []string
	for _, e := range p.Entries() {
		out = append(out, e.QueueID)
	}
	return strings.Join(out, ",")
}

func TestApplyEvents(t *testing.T) {
	t.Parallel()
	var p Panel
	p.Snapshot([]protocol.QueueEntry{entry("a", 1, "A", 0)})
	p.Enqueued(entry("b", 1, "B", 1))
	p.Enqueued(entry("c", 1, "C", 2))
	if ids(&p) != "a,b,c" {
		t.Fatalf("after enqueue: %s", ids(&p))
	}
	p.Moved(entry("c", 2, "C", 0))
	if ids(&p) != "c,a,b" {
		t.Fatalf("after move to 0: %s", ids(&p))
	}
	p.Updated(entry("a", 2, "A2", 1))
	if ids(&p) != "c,a,b" || p.Entries()[1].Prompt != "A2" || p.Entries()[1].Revision != 2 {
		t.Fatalf("after update: %v", p.Entries())
	}
	p.Removed(entry("a", 2, "A2", 1))
	if ids(&p) != "c,b" {
		t.Fatalf("after remove: %s", ids(&p))
	}
	p.Removed(entry("c", 2, "C", 0)) // dequeued
	p.Moved(entry("b", 2, "B", 5))   // a position past the end is clamped
	if ids(&p) != "b" {
		t.Fatalf("after dequeue: %s", ids(&p))
	}
	p.Removed(entry("zzz", 1, "", 0)) // unknown: nothing happens
	p.Clear()
	if p.Len() != 0 || p.Focused() {
		t.Error("not empty after Clear")
	}
}

func TestSelection(t *testing.T) {
	t.Parallel()
	var p Panel
	p.Snapshot([]protocol.QueueEntry{entry("a", 1, "A", 0), entry("b", 1, "B", 1), entry("c", 1, "C", 2)})
	p.Focus(true)
	p.Select(1)
	if e, _ := p.Selected(); e.QueueID != "b" {
		t.Fatalf("selected %s", e.QueueID)
	}
	p.Moved(entry("b", 2, "B", 0))
	if e, _ := p.Selected(); e.QueueID != "b" {
		t.Errorf("the selection did not follow the moved entry: %s", e.QueueID)
	}
	p.Select(10)
	if e, _ := p.Selected(); e.QueueID != "c" {
		t.Errorf("selection not clamped: %s", e.QueueID)
	}
	if n, ok := p.Neighbour(-1); !ok || n.QueueID != "a" {
		t.Errorf("neighbour above: %v %v", n, ok)
	}
}

func TestGolden(t *testing.T) {
	t.Parallel()
	st := styles.Default()
	three := []protocol.QueueEntry{
		entry("a", 1, "Then run the tests.", 0),
		{QueueID: "b", Revision: 1, Prompt: "Lint the package\nand fix what it finds.", Submitter: "scv-bridge", Position: 1},
		entry("c", 1, "Summarize the changes in one paragraph for the commit message.", 2),
	}
	tests := []struct {
		name  string
		width int
		rows  int
		setup func(*Panel)
	}{
		{"empty", 60, 5, func(*Panel) {}},
		{"entries", 60, 5, func(p *Panel) { p.Snapshot(three) }},
		{"focused", 60, 5, func(p *Panel) { p.Snapshot(three); p.Focus(true); p.Select(1) }},
		{"paused_overflow", 40, 2, func(p *Panel) { p.Snapshot(three); p.SetPaused(true) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p Panel
			tt.setup(&p)
			out := p.View(st, tt.width, tt.rows)
			golden.RequireWidth(t, out, tt.width)
			if out != "" && strings.Count(out, "\n")+1 != p.Height(tt.rows) {
				t.Errorf("Height %d does not match the %d rows of View", p.Height(tt.rows), strings.Count(out, "\n")+1)
			}
			golden.RequireStyled(t, out)
		})
	}
}
