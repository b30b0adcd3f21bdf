package session

import (
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/protocol"
)

func delta(seq uint64, text string) *protocol.AssistantDelta {
	d := &protocol.AssistantDelta{Content: text}
	d.SetSeq(seq)
	return d
}

func TestRingAfter(t *testing.T) {
	t.Parallel()
	var r ring
	for i := uint64(1); i <= 10; i++ {
		r.add(delta(i, "x"))
	}
	got, truncated := r.after(7, 10)
	if truncated || len(got) != 3 || got[0].SeqNum() != 8 || got[2].SeqNum() != 10 {
		t.Fatalf("after(7) = %d events from %d, truncated %v", len(got), got[0].SeqNum(), truncated)
	}
	if got, truncated := r.after(10, 10); truncated || len(got) != 0 {
		t.Fatalf("after(last) = %d, %v", len(got), truncated)
	}
	if got, truncated := r.after(0, 10); truncated || len(got) != 10 {
		t.Fatalf("after(0) = %d, %v", len(got), truncated)
	}
}

func TestRingBounds(t *testing.T) {
	t.Parallel()
	var r ring
	for i := uint64(1); i <= RingEvents+100; i++ {
		r.add(delta(i, "x"))
	}
	if h := r.held(); len(h) != RingEvents || h[0].SeqNum() != 101 {
		t.Fatalf("ring holds %d events from seq %d, want %d from 101", len(h), h[0].SeqNum(), RingEvents)
	}
	got, truncated := r.after(50, RingEvents+100)
	if !truncated || got[0].SeqNum() != 101 {
		t.Fatalf("after a dropped seq: truncated %v, first %d", truncated, got[0].SeqNum())
	}
	// Bytes: a few large events push the old ones out, but the newest
	// always stays, however large.
	big := strings.Repeat("y", RingBytes/3)
	for i := uint64(2000); i < 2004; i++ {
		r.add(delta(i, big))
	}
	if h := r.held(); r.bytes > RingBytes || len(h) < 1 || h[len(h)-1].SeqNum() != 2003 {
		t.Fatalf("ring of %d bytes, %d events", r.bytes, len(h))
	}
	huge := strings.Repeat("z", 2*RingBytes)
	r.add(delta(3000, huge))
	if h := r.held(); len(h) != 1 || h[0].SeqNum() != 3000 {
		t.Fatalf("after a huge event: %d events", len(h))
	}
}

// BenchmarkRingAdd measures what a v4 session pays per event for its ring.
func BenchmarkRingAdd(b *testing.B) {
	var r ring
	ev := delta(1, "some streamed text of a typical size")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ev.Seq = uint64(i)
		r.add(ev)
	}
}
