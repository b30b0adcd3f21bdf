package logwriter

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/shared/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// gate is a destination that blocks every write until it is opened.
type gate struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	open chan struct{}
	in   chan struct{} // a write has started
}

func newGate() *gate { return &gate{open: make(chan struct{}), in: make(chan struct{}, 1)} }

func (g *gate) Write(p []byte) (int, error) {
	select {
	case g.in <- struct{}{}:
	default:
	}
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

func (g *gate) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.String()
}

func TestWritesArriveInOrder(t *testing.T) {
	t.Parallel()
	var dst testkit.Buffer
	w := New(&dst, 0)
	for i := range 100 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if !w.Close(5 * time.Second) {
		t.Fatal("Close did not drain")
	}
	lines := strings.Split(strings.TrimSuffix(dst.String(), "\n"), "\n")
	if len(lines) != 100 || lines[0] != "line 0" || lines[99] != "line 99" {
		t.Fatalf("got %d lines: %q ... %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

// TestBlockedDestinationNeverBlocksWriters: with a destination that takes
// nothing, writes return at once, the waiting bytes stay bounded, and once
// the destination reads again the drops are reported before what follows.
func TestBlockedDestinationNeverBlocksWriters(t *testing.T) {
	t.Parallel()
	g := newGate()
	w := New(g, 1024)
	w.Write([]byte("first\n"))
	<-g.in // the goroutine is stuck in the destination's write
	line := []byte(strings.Repeat("x", 99) + "\n")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 1000 {
			w.Write(line)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("writes blocked on a destination that does not read")
	}
	if d := w.Dropped(); d < 990 {
		t.Fatalf("dropped %d writes, want the ones past 1 KiB (about 990)", d)
	}
	close(g.open)
	w.Write([]byte("after\n"))
	if !w.Close(5 * time.Second) {
		t.Fatal("Close did not drain")
	}
	out := g.String()
	if !strings.HasPrefix(out, "first\n") || !strings.Contains(out, "log lines were dropped because stderr was not being read") || !strings.HasSuffix(out, "after\n") {
		t.Fatalf("output:\n%s", out)
	}
	if n := strings.Count(out, string(line)); n > 11 {
		t.Fatalf("%d long lines were kept, more than the 1 KiB bound holds", n)
	}
}

func TestFailedDestinationIsDropped(t *testing.T) {
	t.Parallel()
	w := New(failing{}, 0)
	for range 10 {
		if n, err := w.Write([]byte("x\n")); n != 2 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if w.Close(5 * time.Second) {
		t.Fatal("Close reported success after the destination failed")
	}
	if n, err := w.Write([]byte("late\n")); n != 5 || err != nil {
		t.Fatalf("Write after Close = %d, %v", n, err)
	}
}

func TestCloseGivesUpOnAStuckDestination(t *testing.T) {
	t.Parallel()
	g := newGate()
	w := New(g, 0)
	w.Write([]byte("stuck\n"))
	<-g.in
	start := time.Now()
	if w.Close(50 * time.Millisecond) {
		t.Fatal("Close reported success while the destination is stuck")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
	close(g.open) // let the goroutine end, for goleak
	<-w.drained
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, syscall.EPIPE }
