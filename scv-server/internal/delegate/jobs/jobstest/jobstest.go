// Package jobstest is a fake jobs.Host for tests: it keeps the report
// turns it is asked for, so a test can wait for them and build them.
package jobstest

import (
	"sync"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/protocol"
)

// hang bounds WaitScheduled; it only guards against a hang.
const hang = 30 * time.Second

// Host is a fake jobs.Host. Err, when set before the jobs run, is what
// ScheduleServerTurn returns (the request is kept either way).
type Host struct {
	Err error

	mu     sync.Mutex
	builds []func() (protocol.Origin, string, bool)
	kick   chan struct{}
}

// New returns a Host that has been asked for nothing.
func New() *Host { return &Host{kick: make(chan struct{}, 1)} }

// ScheduleServerTurn implements jobs.Host.
func (h *Host) ScheduleServerTurn(build func() (protocol.Origin, string, bool)) error {
	h.mu.Lock()
	h.builds = append(h.builds, build)
	err := h.Err // read where a test that saw the request may set it next
	h.mu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default: // a wake-up is pending already
	}
	return err
}

// Scheduled returns how many report turns were asked for.
func (h *Host) Scheduled() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.builds)
}

// WaitScheduled waits until n report turns have been asked for: a job
// asks after it has finished, from its own goroutine.
func (h *Host) WaitScheduled(t testing.TB, n int) {
	t.Helper()
	deadline := time.After(hang)
	for h.Scheduled() < n {
		select {
		case <-h.kick:
		case <-deadline:
			t.Fatalf("%d report turns were asked for, want %d", h.Scheduled(), n)
		}
	}
}

// Build builds the i-th report turn asked for, as the session does when
// it is about to start it.
func (h *Host) Build(t testing.TB, i int) (protocol.Origin, string, bool) {
	t.Helper()
	h.mu.Lock()
	if i >= len(h.builds) {
		h.mu.Unlock()
		t.Fatalf("report turn %d was not asked for (%d were)", i, h.Scheduled())
	}
	b := h.builds[i]
	h.mu.Unlock()
	return b()
}
