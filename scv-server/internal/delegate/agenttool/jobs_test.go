package agenttool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/jobs"
	"github.com/scv-cli/scv/shared/protocol"
)

func TestBackgroundJob(t *testing.T) {
	fx := newFixture(t, []string{"claude", "codex"}, func(o *Options) { o.Prefer = []string{"codex"} })
	f := fx.fakes["codex"]
	f.gate = make(chan struct{})
	f.progress = []string{"$ go build ./...", "edit scv/main.go"}

	// The turn that starts the job ends (its context is cancelled); the
	// job keeps running.
	turn, endTurn := context.WithCancel(context.Background())
	res := fx.callCtx(turn, NameAgent, map[string]any{"prompt": "land the fix", "background": true, "cwd": "proj", "model": "gpt-5.5", "timeout_seconds": 7200})
	endTurn()
	want := `{"job":"job-1","agent":"codex","session":"codex-1","status":"running","background":true}`
	if !res.Success || res.Output != want || !slices.Equal(res.Jobs, []string{"job-1"}) {
		t.Fatalf("start: %+v\nwant %s", res, want)
	}
	c := f.waitStarted(t)
	if c.Model != "gpt-5.5" || c.Timeout != 2*time.Hour || c.Dir != fx.env.Workspace+"/proj" || c.Conversation != "codex-1" {
		t.Fatalf("job call %+v", c)
	}

	// agent_wait with a short timeout: still running, with its latest
	// progress line.
	fx.clock.advance(42 * time.Second)
	w := fx.call(NameWait, map[string]any{"job": "job-1", "timeout_seconds": 1})
	v := view(t, w)
	if v.Status != delegate.StatusRunning || v.Progress != "edit scv/main.go" || v.ElapsedSeconds != 42 || v.Result != nil || !w.Success {
		t.Fatalf("wait while running: %s", w.Output)
	}
	if v := view(t, fx.call(NameStatus, map[string]any{"job": "job-1"})); v.Status != delegate.StatusRunning {
		t.Fatalf("status while running: %+v", v)
	}

	close(f.gate)
	w = fx.call(NameWait, map[string]any{"job": "job-1"})
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(w.Output), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"job", "agent", "status", "elapsed_seconds", "result"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("agent_wait result lacks %s: %s", k, w.Output)
		}
	}
	v = view(t, w)
	if v.Status != delegate.StatusCompleted || v.Result.Reply != "done: land the fix" || v.Result.Session != "codex-1" || v.Result.Turn != 1 || !w.Success {
		t.Fatalf("finished: %s", w.Output)
	}
	// The model saw it through agent_wait: any report is skipped.
	fx.host.WaitScheduled(t, 1)
	if _, _, ok := fx.host.Build(t, 0); ok {
		t.Fatal("a report was built for a job the model already waited for")
	}
	// The conversation continues in the foreground.
	if r := result(t, fx.call(NameAgent, map[string]any{"session": "codex-1", "prompt": "next"})); r.Turn != 2 {
		t.Fatalf("continued: %+v", r)
	}
}

func TestBackgroundLimit(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"dsh"}, func(o *Options) { o.Prefer = []string{"dsh"}; o.MaxBackground = 2 })
	f := fx.fakes["dsh"]
	f.gate = make(chan struct{})
	fx.call(NameAgent, map[string]any{"prompt": "a", "background": true})
	early, err := fx.prepare(NameAgent, map[string]any{"prompt": "checked while one ran", "background": true})
	if err != nil {
		t.Fatal(err)
	}
	fx.call(NameAgent, map[string]any{"prompt": "b", "background": true})
	want := "2 background jobs are already running, the limit of this session (agent.max_background = 2); wait for one with agent_wait, stop one with agent_cancel, or run this call in the foreground"
	if _, err := fx.prepare(NameAgent, map[string]any{"prompt": "c", "background": true}); err == nil || err.Error() != want {
		t.Fatalf("third job: %v", err)
	}
	// Prepared before the limit was reached: refused when it runs.
	if res, err := early.Run(context.Background()); err != nil || res.Success || res.Output != want {
		t.Fatalf("early: %+v %v", res, err)
	}
	// Once one finishes, another can start.
	close(f.gate)
	fx.call(NameWait, map[string]any{"job": "job-1"})
	fx.call(NameAgent, map[string]any{"prompt": "c", "background": true})
	for _, j := range []string{"job-2", "job-3"} {
		fx.call(NameWait, map[string]any{"job": j})
	}
	if _, runs := f.counts(); runs != 3 {
		t.Fatalf("%d runs, want 3", runs)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude"}, func(o *Options) { o.Prefer = []string{"claude"} })
	f := fx.fakes["claude"]
	f.gate = make(chan struct{})
	defer close(f.gate)
	fx.call(NameAgent, map[string]any{"prompt": "a", "background": true})
	f.waitStarted(t)
	p, err := fx.prepare(NameCancel, map[string]any{"job": "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Risk != protocol.RiskProcess || !strings.Contains(p.Summary, "job-1") {
		t.Fatalf("plan %+v", p)
	}
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := view(t, res)
	if v.Status != delegate.StatusCancelled || v.Result == nil || v.Result.Status != delegate.StatusCancelled || v.Note != "" {
		t.Fatalf("cancel: %s", res.Output)
	}
	// No report follows a cancel the model asked for.
	if n := fx.host.Scheduled(); n != 0 {
		t.Fatalf("%d report turns after a cancel", n)
	}
	// A cancelled first turn reported its CLI session: the conversation
	// stays resumable.
	if _, err := fx.prepare(NameAgent, map[string]any{"session": "claude-1", "prompt": "x"}); err != nil {
		t.Fatal(err)
	}
	// Cancelling a finished job describes it with a note.
	v = view(t, fx.call(NameCancel, map[string]any{"job": "job-1"}))
	if v.Status != delegate.StatusCancelled || !strings.Contains(v.Note, "had already finished (cancelled) before the cancel") {
		t.Fatalf("cancel again: %+v", v)
	}
	if _, err := fx.prepare(NameCancel, map[string]any{"job": "job-9"}); err == nil || !strings.HasPrefix(err.Error(), `there is no job "job-9" in this session`) {
		t.Fatalf("unknown job: %v", err)
	}
}

func TestCancelAgentThatDoesNotStop(t *testing.T) {
	// Not parallel: it changes cancelSettle, which every agent_cancel reads.
	defer func(d time.Duration) { cancelSettle = d }(cancelSettle)
	cancelSettle = 50 * time.Millisecond
	fx := newFixture(t, []string{"claude"}, func(o *Options) { o.Prefer = []string{"claude"} })
	f := fx.fakes["claude"]
	f.gate, f.ignoreCancel = make(chan struct{}), true
	fx.call(NameAgent, map[string]any{"prompt": "a", "background": true})
	f.waitStarted(t)
	v := view(t, fx.call(NameCancel, map[string]any{"job": "job-1"}))
	if v.Status != delegate.StatusCancelled || !strings.Contains(v.Note, "had not stopped after 0 s") {
		t.Fatalf("cancel: %+v", v)
	}
	close(f.gate)
	fx.call(NameWait, map[string]any{"job": "job-1"})
	if n := fx.host.Scheduled(); n != 0 {
		t.Fatalf("%d report turns after a cancel", n)
	}
}

func TestRememberSixteenFinished(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"dsh"}, func(o *Options) { o.Prefer = []string{"dsh"}; o.Host = nil })
	for i := 1; i <= 18; i++ {
		fx.call(NameAgent, map[string]any{"prompt": fmt.Sprintf("job %d", i), "background": true})
		fx.call(NameWait, map[string]any{"job": fmt.Sprintf("job-%d", i)})
	}
	var list struct{ Jobs []jobs.View }
	if err := json.Unmarshal([]byte(fx.call(NameStatus, map[string]any{}).Output), &list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range list.Jobs {
		ids = append(ids, j.Job)
	}
	if len(ids) != 16 || ids[0] != "job-3" || ids[15] != "job-18" {
		t.Fatalf("remembered %v", ids)
	}
	if _, err := fx.prepare(NameWait, map[string]any{"job": "job-2"}); err == nil {
		t.Fatal("job-2 is still remembered")
	}
}

func TestStatusList(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude", "dsh"}, func(o *Options) { o.OutputLimit = 4000 })
	fx.env.OutputLimit = 4000
	fx.fakes["dsh"].respond = func(delegate.Call) delegate.Result {
		return delegate.Result{Status: delegate.StatusCompleted, Reply: strings.Repeat("long reply ", 500)}
	}
	fx.call(NameAgent, map[string]any{"agent": "dsh", "prompt": "a", "background": true})
	fx.call(NameWait, map[string]any{"job": "job-1"})
	fx.fakes["claude"].gate = make(chan struct{})
	defer close(fx.fakes["claude"].gate)
	fx.call(NameAgent, map[string]any{"agent": "claude", "prompt": "b", "background": true})
	out := fx.call(NameStatus, map[string]any{"job": " "}).Output
	var list struct{ Jobs []jobs.View }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(list.Jobs) != 2 || list.Jobs[0].Job != "job-2" || list.Jobs[0].Status != delegate.StatusRunning || list.Jobs[1].Job != "job-1" {
		t.Fatalf("list %s", out)
	}
	if r := list.Jobs[1].Result; r == nil || !r.Truncated || len(out) > 4000 || !strings.Contains(list.Jobs[1].Note, "agent_status job-1") {
		t.Fatalf("listing of %d bytes: %s", len(out), out)
	}
	if empty := newFixture(t, []string{"dsh"}, nil).call(NameStatus, map[string]any{}).Output; empty != `{"jobs":[]}` {
		t.Fatalf("empty list %s", empty)
	}
}

func TestReports(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude", "codex"}, func(o *Options) { o.MaxBackground = 6 })
	fx.fakes["codex"].respond = func(c delegate.Call) delegate.Result {
		if strings.Contains(c.Prompt, "fail") {
			return delegate.Result{Status: delegate.StatusFailed, Error: "HTTP 503", Kind: delegate.ErrorUnavailable}
		}
		return delegate.Result{Status: delegate.StatusCompleted, Reply: "reply to " + c.Prompt, CLISession: "thread-" + c.Prompt}
	}
	// The jobs finish one after the other, in order.
	for i := 1; i <= 6; i++ {
		prompt := fmt.Sprintf("p%d", i)
		if i == 3 {
			prompt = "fail please"
		}
		fx.call(NameAgent, map[string]any{"agent": "codex", "prompt": prompt, "background": true})
		fx.waitJob(fmt.Sprintf("job-%d", i))
	}
	fx.host.WaitScheduled(t, 6) // one request per finished job
	if n := fx.set.Outstanding(); n != 6 {
		t.Fatalf("outstanding %d, want 6", n)
	}
	origin, prompt, ok := fx.host.Build(t, 0)
	if !ok || origin.Kind != "background" || len(origin.Jobs) != 4 {
		t.Fatalf("first report: %v %+v", ok, origin)
	}
	if !strings.HasPrefix(prompt, "[SCV background report] 4 background agent jobs finished. ") {
		t.Fatalf("prompt %q", prompt)
	}
	for _, id := range origin.Jobs {
		if !strings.Contains(prompt, "\n## "+id+"\n") {
			t.Errorf("prompt does not name %s", id)
		}
	}
	if !strings.Contains(prompt, "Agent codex, conversation codex-1, turn 1 (pass session codex-1 to continue it). Status: completed") ||
		!strings.Contains(prompt, "Reply:\nreply to p1") {
		t.Errorf("prompt lacks job-1's details:\n%s", prompt)
	}
	// job-3 failed before reporting a session: no conversation, and its
	// error and fallback are named.
	if !strings.Contains(prompt, "Agent codex, no conversation. Status: failed") || !strings.Contains(prompt, "Error: HTTP 503") ||
		!strings.Contains(prompt, "Fallback: This agent could not run") {
		t.Errorf("prompt lacks job-3's details:\n%s", prompt)
	}
	// The model reads job-6 through agent_status before the next report.
	fx.call(NameStatus, map[string]any{"job": "job-6"})
	origin, prompt, ok = fx.host.Build(t, 1)
	if !ok || !slices.Equal(origin.Jobs, []string{"job-5"}) || !strings.HasPrefix(prompt, "[SCV background report] A background agent job finished. ") {
		t.Fatalf("second report: %v %+v %q", ok, origin, prompt)
	}
	for i := 2; i < 6; i++ {
		if _, _, ok := fx.host.Build(t, i); ok {
			t.Fatalf("report %d built with nothing left to report", i)
		}
	}
	if n := fx.set.Outstanding(); n != 0 {
		t.Fatalf("outstanding %d", n)
	}
}

func TestReportBoundsReplies(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"dsh"}, func(o *Options) { o.Prefer = []string{"dsh"}; o.OutputLimit = 1000 })
	fx.fakes["dsh"].respond = func(delegate.Call) delegate.Result {
		return delegate.Result{Status: delegate.StatusCompleted, Reply: strings.Repeat("ü", 5000)}
	}
	fx.call(NameAgent, map[string]any{"prompt": "x", "background": true})
	fx.host.WaitScheduled(t, 1)
	fx.waitJob("job-1")
	_, prompt, ok := fx.host.Build(t, 0)
	if !ok || len(prompt) > 1500 || !strings.Contains(prompt, "[reply truncated; agent_status job-1 shows more]") {
		t.Fatalf("report of %d bytes: %q", len(prompt), prompt)
	}
}

func TestReportHostError(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"dsh"}, func(o *Options) { o.Prefer = []string{"dsh"} })
	fx.host.Err = errors.New("server-started turns need protocol version 3")
	fx.call(NameAgent, map[string]any{"prompt": "x", "background": true})
	fx.host.WaitScheduled(t, 1)
	fx.waitJob("job-1")
	// The result stays available.
	if v := view(t, fx.call(NameStatus, map[string]any{"job": "job-1"})); v.Status != delegate.StatusCompleted {
		t.Fatalf("status %+v", v)
	}
}

func TestCloseCancelsJobs(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude", "codex"}, nil)
	for _, n := range []string{"claude", "codex"} {
		fx.fakes[n].gate = make(chan struct{}) // never released: only cancellation ends them
		fx.call(NameAgent, map[string]any{"agent": n, "prompt": "x", "background": true})
		fx.fakes[n].waitStarted(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	fx.set.Close(ctx)
	for _, id := range []string{"job-1", "job-2"} {
		j := fx.job(id)
		select {
		case <-j.Done():
		default:
			t.Fatalf("%s still running after Close", id)
		}
		if v, _ := fx.set.jobs.See(j); v.Status != delegate.StatusCancelled {
			t.Errorf("%s: %s", id, v.Status)
		}
	}
	if n := fx.host.Scheduled(); n != 0 {
		t.Fatalf("%d reports of jobs the session's end cancelled", n)
	}
	if _, err := fx.prepare(NameAgent, map[string]any{"agent": "claude", "prompt": "x"}); err == nil {
		t.Fatal("a closed set accepted a call")
	}
}

func TestJobToolsRefuse(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"dsh"}, nil)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{NameWait, map[string]any{"job": "job-1"}, `there is no job "job-1" in this session`},
		{NameWait, map[string]any{"job": "job-1", "timeout_seconds": 0}, `there is no job "job-1"`},
		{NameStatus, map[string]any{"job": "codex-1"}, `there is no job "codex-1"`},
		{NameCancel, map[string]any{"job": "job-1"}, `there is no job "job-1"`},
	} {
		if _, err := fx.prepare(tc.tool, tc.args); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s %v: %v", tc.tool, tc.args, err)
		}
	}
	fx.call(NameAgent, map[string]any{"agent": "dsh", "prompt": "x", "background": true})
	if _, err := fx.prepare(NameWait, map[string]any{"job": "job-1", "timeout_seconds": 14401}); err == nil || !strings.Contains(err.Error(), "between 1 and 14400") {
		t.Errorf("wait timeout: %v", err)
	}
	p, err := fx.prepare(NameWait, map[string]any{"job": "job-1"})
	if err != nil || p.Risk != protocol.RiskReadOnly {
		t.Fatalf("wait plan %+v %v", p, err)
	}
	if p, err := fx.prepare(NameStatus, map[string]any{}); err != nil || p.Risk != protocol.RiskReadOnly {
		t.Fatalf("status plan %+v %v", p, err)
	}
}

func TestWaitCancelledTurn(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"dsh"}, func(o *Options) { o.Prefer = []string{"dsh"} })
	f := fx.fakes["dsh"]
	f.gate = make(chan struct{})
	defer close(f.gate)
	fx.call(NameAgent, map[string]any{"prompt": "x", "background": true})
	p, err := fx.prepare(NameWait, map[string]any{"job": "job-1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("wait in a cancelled turn: %v", err)
	}
	// The job itself runs on.
	if v := view(t, fx.call(NameStatus, map[string]any{"job": "job-1"})); v.Status != delegate.StatusRunning {
		t.Fatalf("job %+v", v)
	}
}

func TestScheduleReportsAgain(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"dsh"}, func(o *Options) { o.Prefer = []string{"dsh"} })
	if fx.set.ScheduleReports() {
		t.Fatal("asked with nothing to report")
	}
	fx.call(NameAgent, map[string]any{"prompt": "x", "background": true})
	fx.host.WaitScheduled(t, 1)
	fx.waitJob("job-1")
	// The session dropped that turn (session.clear); asking again brings
	// the report back.
	if !fx.set.ScheduleReports() {
		t.Fatal("did not ask again")
	}
	if origin, _, ok := fx.host.Build(t, 1); !ok || !slices.Equal(origin.Jobs, []string{"job-1"}) {
		t.Fatalf("report %v %+v", ok, origin)
	}
	if fx.set.ScheduleReports() {
		t.Fatal("asked again after the report")
	}
}

// blockingHost's ScheduleServerTurn waits until released, as a session
// whose emit lock is held by the caller of Close would.
type blockingHost struct {
	entered chan struct{}
	release chan struct{}
}

func (h *blockingHost) ScheduleServerTurn(func() (protocol.Origin, string, bool)) error {
	h.entered <- struct{}{}
	<-h.release
	return errors.New("the session is closed")
}

func TestCloseDoesNotWaitForTheHost(t *testing.T) {
	t.Parallel()
	bh := &blockingHost{entered: make(chan struct{}, 1), release: make(chan struct{})}
	fx := newFixture(t, []string{"dsh"}, func(o *Options) { o.Prefer = []string{"dsh"}; o.Host = bh })
	fx.call(NameAgent, map[string]any{"prompt": "x", "background": true})
	select {
	case <-bh.entered:
	case <-time.After(hang):
		t.Fatal("no report was asked for")
	}
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	fx.set.Close(ctx)
	if ctx.Err() != nil {
		t.Fatal("Close waited for the host")
	}
	close(bh.release)
}

func TestBackendPanic(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude", "dsh"}, func(o *Options) { o.Prefer = []string{"claude"} })
	fx.fakes["claude"].respond = func(delegate.Call) delegate.Result { panic("boom") }
	for _, bg := range []bool{false, true} {
		res := fx.call(NameAgent, map[string]any{"prompt": "x", "background": bg})
		var r delegate.Result
		if bg {
			id := res.Jobs[0]
			r = *view(t, fx.call(NameWait, map[string]any{"job": id})).Result
		} else {
			r = result(t, res)
		}
		if r.Status != delegate.StatusFailed || !strings.Contains(r.Error, "internal error (boom)") || r.Fallback != "" || r.Session != "" {
			t.Fatalf("background %v: %+v", bg, r)
		}
	}
}

// TestBackgroundRelayedApprovals: a job has no person to ask, so its
// call carries the unattended answer of the session's policy and
// auto_approve; a foreground call carries none (its backend asks the turn).
func TestBackgroundRelayedApprovals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy         approval.Policy
		auto           bool
		readOnly, proc bool
	}{
		{approval.OnRisk, false, true, false},
		{approval.OnRisk, true, true, true},
		{approval.Never, true, true, false},
		{approval.Auto, false, true, true},
	} {
		fx := newFixture(t, []string{"codex"}, func(o *Options) { o.Policy, o.AutoApprove = tc.policy, tc.auto })
		f := fx.fakes["codex"]
		if res := fx.call(NameAgent, map[string]any{"agent": "codex", "prompt": "land the fix", "background": true}); !res.Success {
			t.Fatalf("start: %+v", res)
		}
		c := f.waitStarted(t)
		if c.Approve == nil {
			t.Fatalf("%s: a background call has no answer for relayed requests", tc.policy)
		}
		if got := c.Approve(t.Context(), protocol.RiskReadOnly, "read a file"); got != tc.readOnly {
			t.Errorf("%s auto %v: read-only request approved %v, want %v", tc.policy, tc.auto, got, tc.readOnly)
		}
		if got := c.Approve(t.Context(), protocol.RiskProcess, "run a command"); got != tc.proc {
			t.Errorf("%s auto %v: process request approved %v, want %v", tc.policy, tc.auto, got, tc.proc)
		}
	}
	fx := newFixture(t, []string{"codex"}, nil)
	fx.call(NameAgent, map[string]any{"agent": "codex", "prompt": "quick look"})
	if c := fx.fakes["codex"].lastRun(t); c.Approve != nil {
		t.Fatal("a foreground call carries the unattended answer")
	}
}

// TestSettledJobs: a call that gives the model a finished job's result
// (agent_wait, agent_status, agent_cancel) names the job as settled, so a
// client waiting for report turns stops waiting for it.
func TestSettledJobs(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"codex"}, nil)
	f := fx.fakes["codex"]
	f.gate = make(chan struct{})
	start := func() string {
		res := fx.call(NameAgent, map[string]any{"agent": "codex", "prompt": "work", "background": true})
		if len(res.Jobs) != 1 {
			t.Fatalf("start: %+v", res)
		}
		f.waitStarted(t)
		return res.Jobs[0]
	}
	one := start()
	if w := fx.call(NameWait, map[string]any{"job": one, "timeout_seconds": 1}); len(w.Settled) != 0 {
		t.Fatalf("a running job was settled: %+v", w)
	}
	close(f.gate)
	if w := fx.call(NameWait, map[string]any{"job": one}); !slices.Equal(w.Settled, []string{one}) {
		t.Fatalf("agent_wait of a finished job: settled %v", w.Settled)
	}
	if st := fx.call(NameStatus, map[string]any{"job": one}); !slices.Equal(st.Settled, []string{one}) {
		t.Fatalf("agent_status of a finished job: settled %v", st.Settled)
	}
	if st := fx.call(NameStatus, map[string]any{}); !slices.Equal(st.Settled, []string{one}) {
		t.Fatalf("agent_status listing: settled %v", st.Settled)
	}
	f.gate = make(chan struct{})
	two := start()
	if c := fx.call(NameCancel, map[string]any{"job": two}); !slices.Equal(c.Settled, []string{two}) {
		t.Fatalf("agent_cancel: settled %v", c.Settled)
	}
}
