package feishu

import (
	"testing"
	"time"
)

func TestReassembleOutOfOrder(t *testing.T) {
	t.Parallel()
	r := newReassembler(4, 100, 5*time.Second)
	now := time.Now()
	for i, seq := range []int{2, 0} {
		if out, err := r.add("m", 3, seq, []byte{byte('a' + seq)}, now); out != nil || err != nil {
			t.Fatalf("chunk %d: %q, %v", i, out, err)
		}
	}
	// A repeated chunk replaces the first copy.
	if out, _ := r.add("m", 3, 0, []byte("a"), now); out != nil {
		t.Fatal("complete too early")
	}
	out, err := r.add("m", 3, 1, []byte("b"), now)
	if string(out) != "abc" || err != nil || r.len() != 0 {
		t.Fatalf("%q, %v, %d pending", out, err, r.len())
	}
}

func TestReassembleBounds(t *testing.T) {
	t.Parallel()
	now := time.Now()
	r := newReassembler(2, 10, time.Second)
	for _, c := range []struct {
		id       string
		sum, seq int
	}{{"", 2, 0}, {"m", 0, 0}, {"m", 2, 2}, {"m", 2, -1}, {"m", maxChunks + 1, 0}} {
		if _, err := r.add(c.id, c.sum, c.seq, []byte("x"), now); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	// Too big: the event is dropped.
	_, _ = r.add("big", 2, 0, make([]byte, 8), now)
	if _, err := r.add("big", 2, 1, make([]byte, 8), now); err == nil || r.len() != 0 {
		t.Fatalf("an event over the size bound: %v, %d pending", err, r.len())
	}
	// A changed chunk count drops the event.
	_, _ = r.add("x", 2, 0, []byte("a"), now)
	if _, err := r.add("x", 3, 1, []byte("b"), now); err == nil || r.len() != 0 {
		t.Fatal("a changed chunk count was accepted")
	}
	// At most two pending: the oldest goes.
	_, _ = r.add("a", 2, 0, []byte("a"), now)
	_, _ = r.add("b", 2, 0, []byte("b"), now.Add(time.Millisecond))
	_, _ = r.add("c", 2, 0, []byte("c"), now.Add(2*time.Millisecond))
	if r.len() != 2 || r.pending["a"] != nil {
		t.Fatalf("pending: %v", r.pending)
	}
	// Chunks wait at most the timeout.
	if out, _ := r.add("b", 2, 1, []byte("B"), now.Add(2*time.Second)); out != nil || r.len() != 1 {
		t.Fatalf("an expired event completed: %q", out)
	}
}
