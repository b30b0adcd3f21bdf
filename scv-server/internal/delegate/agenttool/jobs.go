package agenttool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
)

// fieldShown bounds a result's error, hint, fallback or note in a report.
const fieldShown = 2 << 10

// job is one background agent call.
type job struct {
	id      string
	agent   string
	conv    string // the conversation handle, "" for none
	started time.Time
	cancel  context.CancelFunc
	done    chan struct{} // closed when the job has finished

	// Guarded by Set.mu:
	ended    time.Time
	result   delegate.Result
	finished bool
	progress string // the latest progress line
	// seen is set once the model has read the result (agent_wait,
	// agent_status, agent_cancel, or a report turn).
	seen bool
	// stopped is set by agent_cancel: the model asked for the stop, so no
	// report follows.
	stopped bool
}

// roomForJob refuses a background call beyond agent.max_background.
func (s *Set) roomForJob() error {
	s.mu.Lock()
	defer s.unlock()
	return s.roomForJobLocked()
}

func (s *Set) roomForJobLocked() error {
	if s.opts.MaxBackground <= 0 {
		return errors.New("background jobs are off in this session (agent.max_background = 0); call agent without background, which waits for the result")
	}
	if s.running >= s.opts.MaxBackground {
		return fmt.Errorf("%d background jobs are already running, the limit of this session (agent.max_background = %d); wait for one with agent_wait, stop one with agent_cancel, or run this call in the foreground",
			s.running, s.opts.MaxBackground)
	}
	return nil
}

// startJobLocked starts call as a background job on the Set's context.
// s.mu must be held.
func (s *Set) startJobLocked(p *prepared, call delegate.Call) *job {
	s.jobNext++
	ctx, cancel := context.WithCancel(s.ctx)
	j := &job{id: "job-" + strconv.Itoa(s.jobNext), agent: call.Agent, conv: call.Conversation, started: s.opts.Now(), cancel: cancel, done: make(chan struct{})}
	s.jobs[j.id] = j
	s.running++
	if c := s.convs[call.Conversation]; c != nil {
		c.job = j.id
	}
	s.wg.Add(1)
	go func() {
		// Close waits for the run, not for the report request: a host
		// that is closing may hold what ScheduleServerTurn waits for.
		report := func() bool {
			defer s.wg.Done()
			defer cancel()
			res := s.runCall(ctx, p.backend, call, func(line string) {
				s.mu.Lock()
				j.progress = line
				s.unlock()
			})
			return s.finishJob(j, res)
		}()
		if !report {
			return
		}
		// One request per finished job: a request the session drops (such
		// as at session.clear) cannot strand a later job, and a report
		// that finds nothing left to tell is skipped.
		if err := s.opts.Host.ScheduleServerTurn(s.buildReport); err != nil {
			s.log.Warn("Could not schedule the report of a background agent job", "session", s.opts.SessionID, "job", j.id, "err", err)
		}
	}()
	return j
}

// finishJob records a job's result and reports whether to ask the host
// for a report turn: not when the model asked for the stop, the session is
// closing, or the model already saw the result.
func (s *Set) finishJob(j *job, res delegate.Result) bool {
	s.mu.Lock()
	j.result, j.finished, j.ended = res, true, s.opts.Now()
	s.running--
	s.finished = append(s.finished, j)
	if len(s.finished) > rememberFinished {
		old := s.finished[0]
		s.finished = s.finished[1:]
		delete(s.jobs, old.id)
	}
	report := !j.stopped && !s.closed && !j.seen && s.opts.Host != nil
	if report {
		s.unreported = append(s.unreported, j)
	}
	close(j.done)
	s.unlock()
	return report
}

// buildReport collects up to four finished jobs the model has not seen
// into the prompt of a report turn.
func (s *Set) buildReport() (protocol.Origin, string, bool) {
	s.mu.Lock()
	var batch []*job
	rest := s.unreported[:0]
	for _, j := range s.unreported {
		switch {
		case j.seen:
		case len(batch) < reportBatch:
			j.seen = true
			batch = append(batch, j)
		default:
			rest = append(rest, j)
		}
	}
	clear(s.unreported[len(rest):])
	s.unreported = rest
	views := make([]jobView, len(batch))
	for i, j := range batch {
		views[i] = s.viewLocked(j)
	}
	s.unlock()
	if len(batch) == 0 {
		return protocol.Origin{}, "", false
	}
	ids := make([]string, len(batch))
	for i, v := range views {
		ids[i] = v.Job
	}
	return protocol.Origin{Kind: "background", Jobs: ids}, s.reportPrompt(views), true
}

// reportPrompt is the prompt of a report turn.
func (s *Set) reportPrompt(views []jobView) string {
	var b strings.Builder
	if len(views) == 1 {
		b.WriteString("[SCV background report] A background agent job finished. ")
	} else {
		fmt.Fprintf(&b, "[SCV background report] %d background agent jobs finished. ", len(views))
	}
	b.WriteString("The user has not seen these results: tell them what each job did or found, briefly and in your own words, and what, if anything, they should decide next. agent_status shows a job's whole result.")
	share := s.opts.OutputLimit / (2 * len(views))
	for _, v := range views {
		r := v.Result
		conv := "no conversation"
		if r.Session != "" {
			conv = fmt.Sprintf("conversation %s, turn %d (pass session %s to continue it)", r.Session, r.Turn, r.Session)
		}
		fmt.Fprintf(&b, "\n\n## %s\n\nAgent %s, %s. Status: %s after %d s.", v.Job, v.Agent, conv, r.Status, v.ElapsedSeconds)
		for _, f := range []struct{ name, val string }{{"Error", r.Error}, {"Hint", r.Hint}, {"Fallback", r.Fallback}, {"Note", r.Note}} {
			if f.val != "" {
				val, cut := boundText(f.val, fieldShown)
				if cut > 0 {
					val += " […]"
				}
				fmt.Fprintf(&b, "\n%s: %s", f.name, val)
			}
		}
		reply, cut := boundText(r.Reply, share)
		if reply == "" {
			b.WriteString("\nReply: (none)")
			continue
		}
		b.WriteString("\nReply:\n" + reply)
		if cut > 0 || r.Truncated {
			fmt.Fprintf(&b, "\n[reply truncated; agent_status %s shows more]", v.Job)
		}
	}
	return b.String()
}

// jobView is a job as the job tools describe it.
type jobView struct {
	Job            string           `json:"job"`
	Agent          string           `json:"agent"`
	Session        string           `json:"session,omitempty"`
	Status         delegate.Status  `json:"status"`
	ElapsedSeconds int64            `json:"elapsed_seconds"`
	Progress       string           `json:"progress,omitempty"`
	Result         *delegate.Result `json:"result,omitempty"`
	Note           string           `json:"note,omitempty"`
}

// viewLocked describes j; s.mu must be held.
func (s *Set) viewLocked(j *job) jobView {
	v := jobView{Job: j.id, Agent: j.agent, Session: j.conv}
	if !j.finished {
		v.Status = delegate.StatusRunning
		v.ElapsedSeconds = seconds(s.opts.Now().Sub(j.started))
		v.Progress = j.progress
		return v
	}
	r := j.result
	v.Status, v.Result = r.Status, &r
	v.ElapsedSeconds = seconds(j.ended.Sub(j.started))
	return v
}

// lookupJob returns the job named id.
func (s *Set) lookupJob(id string) (*job, error) {
	id = strings.TrimSpace(id)
	s.mu.Lock()
	defer s.unlock()
	j := s.jobs[id]
	if j == nil {
		return nil, fmt.Errorf("there is no job %q in this session (it remembers its running jobs and its %d newest finished ones); agent_status lists them", id, rememberFinished)
	}
	return j, nil
}

type jobArgs struct {
	Job            string `json:"job"`
	TimeoutSeconds *int64 `json:"timeout_seconds"`
}

func decodeJobArgs(tool string, raw json.RawMessage) (jobArgs, error) {
	var a jobArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, fmt.Errorf("the arguments of %s do not decode (%v); send job as a string such as \"job-1\"", tool, err)
	}
	return a, nil
}

func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf(`{"error":%q}`, err.Error())
	}
	return string(b)
}

// waitTool is agent_wait.
type waitTool struct{ s *Set }

func (t *waitTool) Spec() tools.Spec { return t.s.waitSpec() }

func (t *waitTool) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	s := t.s
	a, err := decodeJobArgs(NameWait, raw)
	if err != nil {
		return nil, err
	}
	j, err := s.lookupJob(a.Job)
	if err != nil {
		return nil, err
	}
	wait := s.opts.DefaultTimeout
	if a.TimeoutSeconds != nil {
		n, ceil := *a.TimeoutSeconds, seconds(s.opts.MaxTimeout)
		if n < 1 || n > ceil {
			return nil, fmt.Errorf("timeout_seconds %d is out of range; wait between 1 and %d s (tools.max_timeout_seconds), or leave it out for %d s", n, ceil, seconds(s.opts.DefaultTimeout))
		}
		wait = time.Duration(n) * time.Second
	}
	return &tools.Plan{
		Risk:    protocol.RiskReadOnly,
		Summary: fmt.Sprintf("Wait up to %d s for background job %s (%s)", seconds(wait), j.id, j.agent),
		Run: func(ctx context.Context) (tools.Result, error) {
			if err := j.await(ctx, wait); err != nil {
				return tools.Result{}, err
			}
			s.mu.Lock()
			v := s.viewLocked(j)
			var settled []string
			if j.finished {
				j.seen = true
				settled = []string{j.id}
			}
			s.unlock()
			out, cut := fitView(&v, s.outputLimit(env))
			return tools.Result{Success: v.Status == delegate.StatusRunning || v.Status == delegate.StatusCompleted, Output: out, Truncated: cut, Settled: settled}, nil
		},
	}, nil
}

// await waits until the job ends or d passes, whichever is first; it
// returns ctx's error when the call is cancelled first.
func (j *job) await(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-j.done:
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// statusTool is agent_status.
type statusTool struct{ s *Set }

func (t *statusTool) Spec() tools.Spec { return t.s.statusSpec() }

func (t *statusTool) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	s := t.s
	a, err := decodeJobArgs(NameStatus, raw)
	if err != nil {
		return nil, err
	}
	if blank(a.Job) {
		return &tools.Plan{Risk: protocol.RiskReadOnly, Summary: "List the background agent jobs", Run: func(context.Context) (tools.Result, error) {
			out, cut, settled := s.listJobs(s.outputLimit(env))
			return tools.Result{Success: true, Output: out, Truncated: cut, Settled: settled}, nil
		}}, nil
	}
	j, err := s.lookupJob(a.Job)
	if err != nil {
		return nil, err
	}
	return &tools.Plan{Risk: protocol.RiskReadOnly, Summary: "Describe background job " + j.id, Run: func(context.Context) (tools.Result, error) {
		s.mu.Lock()
		v := s.viewLocked(j)
		var settled []string
		if j.finished {
			j.seen = true
			settled = []string{j.id}
		}
		s.unlock()
		out, cut := fitView(&v, s.outputLimit(env))
		return tools.Result{Success: true, Output: out, Truncated: cut, Settled: settled}, nil
	}}, nil
}

// listJobs describes every remembered job, running ones first in start
// order, then finished ones oldest first; replies are shortened so the
// listing fits the output limit (limit bytes) as JSON. It reports whether
// fitting the JSON shortened more than the replies' shares, and the
// finished jobs it showed (settled: no report turn will name them).
func (s *Set) listJobs(limit int) (string, bool, []string) {
	s.mu.Lock()
	var list []*job
	for i := 1; i <= s.jobNext; i++ {
		if j := s.jobs["job-"+strconv.Itoa(i)]; j != nil && !j.finished {
			list = append(list, j)
		}
	}
	list = append(list, s.finished...)
	views := make([]jobView, len(list))
	var settled []string
	for i, j := range list {
		views[i] = s.viewLocked(j)
		if j.finished {
			j.seen = true
			settled = append(settled, j.id)
		}
	}
	s.unlock()
	if len(views) > 0 {
		share := limit / (2 * len(views))
		for i := range views {
			if r := views[i].Result; r != nil {
				if reply, cut := boundText(r.Reply, share); cut > 0 {
					r.Reply, r.Truncated = reply, true
					views[i].Note = fmt.Sprintf("reply shortened in this list; agent_status %s shows it whole", views[i].Job)
				}
			}
		}
	}
	listing := struct {
		Jobs []jobView `json:"jobs"`
	}{Jobs: append([]jobView{}, views...)}
	// Escaping and the other fields can still take it over: shorten the
	// replies job by job, then the other fields.
	var replies, rest []fitField
	for i := range listing.Jobs {
		fs := viewFields(&listing.Jobs[i])
		if listing.Jobs[i].Result != nil {
			replies, fs = append(replies, fs[0]), fs[1:]
		}
		rest = append(rest, fs...)
	}
	out, cut := fitJSON(&listing, limit, append(replies, rest...))
	return out, cut, settled
}

// cancelTool is agent_cancel.
type cancelTool struct{ s *Set }

func (t *cancelTool) Spec() tools.Spec { return t.s.cancelSpec() }

// cancelSettle is how long agent_cancel waits; a variable for tests.
var cancelSettle = cancelWait

func (t *cancelTool) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	s := t.s
	a, err := decodeJobArgs(NameCancel, raw)
	if err != nil {
		return nil, err
	}
	j, err := s.lookupJob(a.Job)
	if err != nil {
		return nil, err
	}
	return &tools.Plan{
		Risk:    protocol.RiskProcess,
		Summary: fmt.Sprintf("Cancel background job %s (%s): stop its agent's processes", j.id, j.agent),
		Run: func(ctx context.Context) (tools.Result, error) {
			s.mu.Lock()
			already := j.finished
			if !already {
				j.stopped = true
			}
			s.unlock()
			if !already {
				j.cancel()
				if err := j.await(ctx, cancelSettle); err != nil {
					return tools.Result{}, err
				}
			}
			s.mu.Lock()
			v := s.viewLocked(j)
			switch {
			case already:
				v.Note = fmt.Sprintf("%s had already finished (%s) before the cancel; nothing was stopped", j.id, v.Status)
			case !j.finished:
				v.Status = delegate.StatusCancelled
				v.Note = fmt.Sprintf("%s was cancelled but its agent had not stopped after %d s; agent_status %s shows when it has", j.id, seconds(cancelSettle), j.id)
			default:
				v.Status = delegate.StatusCancelled
				if v.Result != nil && v.Result.Status != delegate.StatusCancelled {
					v.Note = fmt.Sprintf("the agent ended (%s) as it was being cancelled", v.Result.Status)
				}
			}
			if j.finished {
				j.seen = true
			}
			s.unlock()
			out, cut := fitView(&v, s.outputLimit(env))
			// Cancelled (or already finished): either way no report turn
			// will name it.
			return tools.Result{Success: true, Output: out, Truncated: cut, Settled: []string{j.id}}, nil
		},
	}, nil
}
