package agenttool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/jobs"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
)

// fieldShown bounds a result's error, hint, fallback or note in a report.
const fieldShown = 2 << 10

// reportPrompt is the prompt of a turn that reports finished background
// jobs (jobs.Options.Report).
func (s *Set) reportPrompt(views []jobs.View) string {
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

// seeJob describes j to the model, fitted to the call's output limit, and
// names it settled once it has finished: the model saw its result, so no
// report turn will name it.
func (s *Set) seeJob(env tools.Env, j *jobs.Job) (v jobs.View, out string, cut bool, settled []string) {
	v, done := s.jobs.See(j)
	out, cut = fitView(&v, s.outputLimit(env))
	if done {
		settled = []string{j.ID()}
	}
	return v, out, cut, settled
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
	j, err := s.jobs.Lookup(a.Job)
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
		Summary: fmt.Sprintf("Wait up to %d s for background job %s (%s)", seconds(wait), j.ID(), j.Agent()),
		Run: func(ctx context.Context) (tools.Result, error) {
			if err := j.Await(ctx, wait); err != nil {
				return tools.Result{}, err
			}
			v, out, cut, settled := s.seeJob(env, j)
			return tools.Result{Success: v.Status == delegate.StatusRunning || v.Status == delegate.StatusCompleted, Output: out, Truncated: cut, Settled: settled}, nil
		},
	}, nil
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
	j, err := s.jobs.Lookup(a.Job)
	if err != nil {
		return nil, err
	}
	return &tools.Plan{Risk: protocol.RiskReadOnly, Summary: "Describe background job " + j.ID(), Run: func(context.Context) (tools.Result, error) {
		_, out, cut, settled := s.seeJob(env, j)
		return tools.Result{Success: true, Output: out, Truncated: cut, Settled: settled}, nil
	}}, nil
}

// listJobs describes every remembered job (jobs.Manager.SeeAll); replies
// are shortened so the listing fits the output limit (limit bytes) as
// JSON. It reports whether fitting the JSON shortened more than the
// replies' shares, and the finished jobs it showed (settled: no report
// turn will name them).
func (s *Set) listJobs(limit int) (string, bool, []string) {
	views, settled := s.jobs.SeeAll()
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
		Jobs []jobs.View `json:"jobs"`
	}{Jobs: append([]jobs.View{}, views...)}
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
	j, err := s.jobs.Lookup(a.Job)
	if err != nil {
		return nil, err
	}
	return &tools.Plan{
		Risk:    protocol.RiskProcess,
		Summary: fmt.Sprintf("Cancel background job %s (%s): stop its agent's processes", j.ID(), j.Agent()),
		Run: func(ctx context.Context) (tools.Result, error) {
			v, err := s.jobs.Cancel(ctx, j, cancelSettle)
			if err != nil {
				return tools.Result{}, err
			}
			out, cut := fitView(&v, s.outputLimit(env))
			// Cancelled (or already finished): either way no report turn
			// will name it.
			return tools.Result{Success: true, Output: out, Truncated: cut, Settled: []string{j.ID()}}, nil
		},
	}, nil
}
