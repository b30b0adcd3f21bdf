package jobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/jobs/jobstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hang bounds every wait; it only guards against a hang.
const hang = 30 * time.Second

// report names the jobs of a report turn, as the prompt.
func report(views []View) string {
	var ids []string
	for _, v := range views {
		ids = append(ids, v.Job+":"+string(v.Status))
	}
	return strings.Join(ids, " ")
}

func newManager(t *testing.T, max int, h Host) *Manager {
	t.Helper()
	m := New(Options{Max: max, Host: h, Report: report, SessionID: "s1"})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		m.Close(ctx)
	})
	return m
}

// finished returns a run that ends at once with status.
func finished(status delegate.Status) func(context.Context, func(string)) delegate.Result {
	return func(context.Context, func(string)) delegate.Result {
		return delegate.Result{Agent: "codex", Status: status, Reply: "done"}
	}
}

// blocked returns a run that reports progress and ends when release is
// closed (completed) or its context ends (cancelled).
func blocked(release <-chan struct{}) func(context.Context, func(string)) delegate.Result {
	return func(ctx context.Context, progress func(string)) delegate.Result {
		progress("$ make test")
		select {
		case <-release:
			return delegate.Result{Agent: "codex", Status: delegate.StatusCompleted}
		case <-ctx.Done():
			return delegate.Result{Agent: "codex", Status: delegate.StatusCancelled}
		}
	}
}

func wait(t *testing.T, j *Job) {
	t.Helper()
	select {
	case <-j.Done():
	case <-time.After(hang):
		t.Fatalf("%s did not finish", j.ID())
	}
}

func TestLimit(t *testing.T) {
	t.Parallel()
	if err := newManager(t, 0, nil).Room(); err == nil || !strings.HasPrefix(err.Error(), "background jobs are off in this session (agent.max_background = 0)") {
		t.Fatalf("Max 0: %v", err)
	}
	m := newManager(t, 2, nil)
	release := make(chan struct{})
	for i := 1; i <= 2; i++ {
		j, err := m.Start("codex", "", blocked(release))
		if err != nil || j.ID() != fmt.Sprintf("job-%d", i) || j.Agent() != "codex" {
			t.Fatalf("Start %d: %v %v", i, j, err)
		}
	}
	want := "2 background jobs are already running, the limit of this session (agent.max_background = 2)"
	if _, err := m.Start("codex", "", blocked(release)); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("third Start: %v", err)
	}
	if err := m.Room(); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Room: %v", err)
	}
	close(release)
	for _, id := range []string{"job-1", "job-2"} {
		j, err := m.Lookup(" " + id + " ")
		if err != nil {
			t.Fatal(err)
		}
		wait(t, j)
	}
	if err := m.Room(); err != nil {
		t.Fatalf("Room after the jobs ended: %v", err)
	}
}

func TestSee(t *testing.T) {
	t.Parallel()
	h := jobstest.New()
	m := newManager(t, 4, h)
	release := make(chan struct{})
	j, _ := m.Start("codex", "codex-1", blocked(release))
	// The progress line arrives from the job's goroutine.
	deadline := time.Now().Add(hang)
	for {
		v, settled := m.See(j)
		if settled || v.Status != delegate.StatusRunning || v.Session != "codex-1" {
			t.Fatalf("running job %+v, settled %v", v, settled)
		}
		if v.Progress == "$ make test" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no progress line")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	wait(t, j)
	v, settled := m.See(j)
	if !settled || v.Status != delegate.StatusCompleted || v.Result == nil || v.Result.Status != delegate.StatusCompleted {
		t.Fatalf("finished job %+v, settled %v", v, settled)
	}
	// Seen before any report turn: the report finds nothing to tell.
	if n := m.Outstanding(); n != 0 {
		t.Fatalf("outstanding %d", n)
	}
	h.WaitScheduled(t, 1)
	if _, _, ok := h.Build(t, 0); ok {
		t.Fatal("a report names a job the model saw")
	}
}

func TestRememberSixteen(t *testing.T) {
	t.Parallel()
	m := newManager(t, 1, nil)
	for range Remembered + 2 {
		j, err := m.Start("codex", "", finished(delegate.StatusCompleted))
		if err != nil {
			t.Fatal(err)
		}
		wait(t, j)
	}
	views, settled := m.SeeAll()
	if len(views) != Remembered || views[0].Job != "job-3" || len(settled) != Remembered {
		t.Fatalf("%d views from %s, %d settled", len(views), views[0].Job, len(settled))
	}
	if _, err := m.Lookup("job-2"); err == nil || !strings.Contains(err.Error(), "its 16 newest finished ones") {
		t.Fatalf("Lookup of a forgotten job: %v", err)
	}
}

func TestSeeAllOrder(t *testing.T) {
	t.Parallel()
	m := newManager(t, 4, nil)
	release := make(chan struct{})
	defer close(release)
	done, _ := m.Start("codex", "", finished(delegate.StatusFailed))
	wait(t, done)
	m.Start("claude", "", blocked(release))
	views, settled := m.SeeAll()
	if len(views) != 2 || views[0].Job != "job-2" || views[0].Status != delegate.StatusRunning || views[1].Job != "job-1" || views[1].Status != delegate.StatusFailed {
		t.Fatalf("views %+v", views)
	}
	if !slices.Equal(settled, []string{"job-1"}) {
		t.Fatalf("settled %v", settled)
	}
}

func TestReports(t *testing.T) {
	t.Parallel()
	h := jobstest.New()
	m := newManager(t, 6, h)
	for range 6 {
		j, _ := m.Start("codex", "", finished(delegate.StatusCompleted))
		wait(t, j)
	}
	h.WaitScheduled(t, 6) // one request per finished job
	if n := m.Outstanding(); n != 6 {
		t.Fatalf("outstanding %d", n)
	}
	origin, prompt, ok := h.Build(t, 0)
	if !ok || origin.Kind != "background" || !slices.Equal(origin.Jobs, []string{"job-1", "job-2", "job-3", "job-4"}) ||
		prompt != "job-1:completed job-2:completed job-3:completed job-4:completed" {
		t.Fatalf("first report %v %+v %q", ok, origin, prompt)
	}
	// The model sees job-6 before the next report.
	j6, _ := m.Lookup("job-6")
	m.See(j6)
	if origin, _, ok := h.Build(t, 1); !ok || !slices.Equal(origin.Jobs, []string{"job-5"}) {
		t.Fatalf("second report %v %+v", ok, origin)
	}
	for i := 2; i < 6; i++ {
		if _, _, ok := h.Build(t, i); ok {
			t.Fatalf("report %d built with nothing left", i)
		}
	}
	if m.ScheduleReports() {
		t.Fatal("asked again with nothing left to report")
	}
}

func TestScheduleReportsAgain(t *testing.T) {
	t.Parallel()
	h := jobstest.New()
	m := newManager(t, 4, h)
	j, _ := m.Start("codex", "", finished(delegate.StatusCompleted))
	wait(t, j)
	h.WaitScheduled(t, 1)
	// The session dropped the first request (session.clear): ask again.
	if !m.ScheduleReports() {
		t.Fatal("did not ask again")
	}
	h.Err = errors.New("closed")
	if m.ScheduleReports() {
		t.Fatal("a refused request counts as asked")
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	h := jobstest.New()
	m := newManager(t, 4, h)
	release := make(chan struct{})
	j, _ := m.Start("codex", "", blocked(release))
	v, err := m.Cancel(context.Background(), j, hang)
	if err != nil || v.Status != delegate.StatusCancelled || v.Note != "" || v.Result == nil {
		t.Fatalf("Cancel: %+v %v", v, err)
	}
	if h.Scheduled() != 0 || m.Outstanding() != 0 {
		t.Fatal("a job the model cancelled is reported")
	}
	// An agent that ends otherwise as it is cancelled says so.
	ends := func(ctx context.Context, _ func(string)) delegate.Result {
		<-ctx.Done()
		return delegate.Result{Status: delegate.StatusFailed}
	}
	j2, _ := m.Start("codex", "", ends)
	if v, _ := m.Cancel(context.Background(), j2, hang); v.Status != delegate.StatusCancelled || v.Note != "the agent ended (failed) as it was being cancelled" {
		t.Fatalf("Cancel: %+v", v)
	}
	// A job that does not stop within settle.
	stuck := make(chan struct{})
	j3, _ := m.Start("codex", "", func(context.Context, func(string)) delegate.Result {
		<-stuck
		return delegate.Result{Status: delegate.StatusCompleted}
	})
	v, _ = m.Cancel(context.Background(), j3, 10*time.Millisecond)
	if v.Status != delegate.StatusCancelled || v.Note != "job-3 was cancelled but its agent had not stopped after 0 s; agent_status job-3 shows when it has" {
		t.Fatalf("Cancel of a stuck job: %+v", v)
	}
	close(stuck)
	wait(t, j3)
	// Already finished: nothing was stopped.
	if v, _ := m.Cancel(context.Background(), j, hang); v.Note != "job-1 had already finished (cancelled) before the cancel; nothing was stopped" {
		t.Fatalf("Cancel of a finished job: %+v", v)
	}
}

func TestCloseCancelsAndDoesNotReport(t *testing.T) {
	t.Parallel()
	h := jobstest.New()
	m := New(Options{Max: 4, Host: h, Report: report})
	release := make(chan struct{})
	defer close(release)
	j, _ := m.Start("codex", "", blocked(release))
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	m.Close(ctx)
	select {
	case <-j.Done():
	default:
		t.Fatal("a job runs on after Close")
	}
	if v, _ := m.See(j); v.Status != delegate.StatusCancelled {
		t.Fatalf("job %+v", v)
	}
	if h.Scheduled() != 0 {
		t.Fatal("a job Close cancelled is reported")
	}
	if _, err := m.Start("codex", "", blocked(release)); err == nil || !strings.Contains(err.Error(), "closing") {
		t.Fatalf("Start after Close: %v", err)
	}
}

func TestAwait(t *testing.T) {
	t.Parallel()
	m := newManager(t, 1, nil)
	release := make(chan struct{})
	j, _ := m.Start("codex", "", blocked(release))
	if err := j.Await(context.Background(), 10*time.Millisecond); err != nil {
		t.Fatalf("Await timed out with %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := j.Await(ctx, hang); !errors.Is(err, context.Canceled) {
		t.Fatalf("Await on a cancelled context: %v", err)
	}
	close(release)
	if err := j.Await(context.Background(), hang); err != nil {
		t.Fatal(err)
	}
	wait(t, j)
}
