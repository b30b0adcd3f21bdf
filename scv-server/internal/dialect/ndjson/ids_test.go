package ndjson

import (
	"strconv"
	"strings"
	"testing"
)

func TestRequestIDsRefuseRepeats(t *testing.T) {
	t.Parallel()
	r := newRequestIDs()
	long := strings.Repeat("x", 1<<20)
	for _, id := range []string{"1", "2", long, "a"} {
		if !r.use(id) {
			t.Fatalf("%.10q refused the first time", id)
		}
	}
	for _, id := range []string{"1", long, "a"} {
		if r.use(id) {
			t.Fatalf("%.10q accepted twice", id)
		}
	}
	if !r.use(long[:len(long)-1] + "y") {
		t.Fatal("an id differing in its last byte was refused")
	}
}

// TestRequestIDsAreBounded: the memory stays bounded; the oldest ids are
// forgotten once RememberedRequestIDs newer ones were used, never a recent
// one.
func TestRequestIDsAreBounded(t *testing.T) {
	t.Parallel()
	r := newRequestIDs()
	n := RememberedRequestIDs + 100
	for i := range n {
		if !r.use(strconv.Itoa(i)) {
			t.Fatalf("id %d refused", i)
		}
	}
	if len(r.ring) != RememberedRequestIDs || len(r.set) != RememberedRequestIDs {
		t.Fatalf("remembers %d / %d ids, want %d", len(r.ring), len(r.set), RememberedRequestIDs)
	}
	for i := n - RememberedRequestIDs; i < n; i++ {
		if r.use(strconv.Itoa(i)) {
			t.Fatalf("recent id %d accepted again", i)
		}
	}
	if !r.use("0") {
		t.Fatal("the oldest id is still remembered")
	}
}
