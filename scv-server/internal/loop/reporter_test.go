package loop

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/protocol"
)

type lineSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *lineSink) Emit(_ context.Context, ev protocol.TurnEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, ev.(*protocol.ToolProgress).Line)
	return nil
}

func (s *lineSink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

func TestReporterForwardsPendingLinesTwiceASecond(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		sink := &lineSink{}
		r := &reporter{ctx: context.Background(), sink: sink, call: provider.ToolCall{ID: "c", Name: "wait"}}
		r.report("before start") // not running yet: dropped
		r.start()
		r.report("a") // first line: at once
		r.report("b") // too soon: pending
		r.report("c") // replaces b
		if got := sink.got(); !slices.Equal(got, []string{"a"}) {
			t.Fatalf("lines %q, want only a so far", got)
		}
		time.Sleep(progressInterval)
		synctest.Wait()
		if got := sink.got(); !slices.Equal(got, []string{"a", "c"}) {
			t.Fatalf("after the interval: %q, want a, c", got)
		}
		r.report("d") // too soon again: pending until stop
		r.stop()
		r.report("e") // after stop: dropped
		time.Sleep(2 * progressInterval)
		synctest.Wait()
		if got := sink.got(); !slices.Equal(got, []string{"a", "c", "d"}) {
			t.Fatalf("lines %q, want a, c, d", got)
		}
	})
}

func TestReporterSpacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink := &lineSink{}
		r := &reporter{ctx: context.Background(), sink: sink}
		r.start()
		start := time.Now()
		var at []time.Duration
		for i := range 20 {
			r.report("x")
			if n := len(sink.got()); n > len(at) {
				at = append(at, time.Since(start))
			}
			_ = i
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if n := len(sink.got()); n > len(at) {
				at = append(at, time.Since(start))
			}
		}
		r.stop()
		for i := 1; i < len(at); i++ {
			if at[i]-at[i-1] < progressInterval {
				t.Fatalf("lines at %v: closer than %v", at, progressInterval)
			}
		}
		if len(at) < 3 {
			t.Fatalf("only %d lines in 2 s", len(at))
		}
	})
}
