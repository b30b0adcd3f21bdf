// Package jobs runs the background delegated-agent jobs of one session
// (tools.md, "Background jobs"): at most agent.max_background at once, on
// a context of their own (a turn ending does not stop them, Close does),
// remembering the 16 newest finished ones, and asking the session, through
// Host, for a server-started turn that reports the results the model has
// not seen yet, up to four jobs a turn. What the model is told is the
// owner's: the report turn's prompt comes from Options.Report.
//
// Each job runs in one goroutine owned by the Manager; it ends when its
// run function returns, which it must once the job's context is cancelled
// (Cancel or Close).
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/shared/protocol"
)

// Remembered is how many finished jobs a session remembers.
const Remembered = 16

// reportBatch is how many jobs one report turn names.
const reportBatch = 4

// Host is the session the jobs belong to.
type Host interface {
	// ScheduleServerTurn asks the session for a server-started turn once
	// it is idle and the user's queued prompts have run; build is called
	// when that turn is about to start and returns its origin and prompt,
	// or ok=false to skip it (e.g. the model already saw every result
	// through agent_wait/agent_status). The Manager never holds its own
	// lock while calling it, and build may be called from inside it. It
	// is called from a job's goroutine, possibly while or just after the
	// session closes the Manager, so it must not wait for anything the
	// caller of Close holds; a closed session refuses it.
	ScheduleServerTurn(build func() (origin protocol.Origin, prompt string, ok bool)) error
}

// Options configure a Manager.
type Options struct {
	// Max is agent.max_background: jobs running at once; 0 runs none.
	Max int
	// Host is the session, which starts report turns; nil sends no
	// reports (results stay available through See and SeeAll).
	Host Host
	// Report returns the prompt of a report turn naming views (one to
	// four finished jobs, oldest first).
	Report func(views []View) string
	// SessionID names the session in logs.
	SessionID string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Logger logs what the model cannot act on; nil discards.
	Logger *slog.Logger
}

// View is a job as the job tools describe it.
type View struct {
	Job            string           `json:"job"`
	Agent          string           `json:"agent"`
	Session        string           `json:"session,omitempty"`
	Status         delegate.Status  `json:"status"`
	ElapsedSeconds int64            `json:"elapsed_seconds"`
	Progress       string           `json:"progress,omitempty"`
	Result         *delegate.Result `json:"result,omitempty"`
	Note           string           `json:"note,omitempty"`
}

// Job is one background agent call.
type Job struct {
	id      string
	agent   string
	conv    string // the conversation handle, "" for none
	started time.Time
	cancel  context.CancelFunc
	done    chan struct{} // closed when the job has finished

	// Guarded by Manager.mu:
	ended    time.Time
	result   delegate.Result
	finished bool
	progress string // the latest progress line
	// seen is set once the model has read the result (See, SeeAll,
	// Cancel, or a report turn).
	seen bool
	// stopped is set by Cancel: the model asked for the stop, so no
	// report follows.
	stopped bool
}

// ID returns the job's handle, such as job-1.
func (j *Job) ID() string { return j.id }

// Agent returns the agent the job runs on.
func (j *Job) Agent() string { return j.agent }

// Done returns a channel that is closed when the job has finished.
func (j *Job) Done() <-chan struct{} { return j.done }

// Await waits until the job ends or d passes, whichever is first; it
// returns ctx's error when ctx ends first.
func (j *Job) Await(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-j.Done():
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// Manager is the background jobs of one session.
type Manager struct {
	opts Options
	log  *slog.Logger

	// ctx is the jobs' context: cancelled by Close, not by any turn.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per running job

	mu       sync.Mutex
	closed   bool            // guarded by mu
	jobs     map[string]*Job // guarded by mu; running and remembered jobs
	finished []*Job          // guarded by mu; remembered finished jobs, oldest first
	running  int             // guarded by mu
	next     int             // guarded by mu; the last job number issued
	// unreported are finished jobs waiting for a report turn, oldest
	// first; a job leaves when a report names it or the model sees it.
	unreported []*Job // guarded by mu
}

// New returns a Manager with no jobs.
func New(opts Options) *Manager {
	if opts.Max < 0 {
		opts.Max = 0
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{opts: opts, log: log, ctx: ctx, cancel: cancel, jobs: map[string]*Job{}}
}

// Room refuses a background call beyond agent.max_background.
func (m *Manager) Room() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.roomLocked()
}

func (m *Manager) roomLocked() error {
	if m.opts.Max <= 0 {
		return errors.New("background jobs are off in this session (agent.max_background = 0); call agent without background, which waits for the result")
	}
	if m.running >= m.opts.Max {
		return fmt.Errorf("%d background jobs are already running, the limit of this session (agent.max_background = %d); wait for one with agent_wait, stop one with agent_cancel, or run this call in the foreground",
			m.running, m.opts.Max)
	}
	return nil
}

// Start starts run as a background job of agent (in the conversation
// conv, "" for none) on the Manager's context, or refuses it beyond
// agent.max_background or once Close has begun. run gets the job's
// context and a function taking its progress lines.
func (m *Manager) Start(agent, conv string, run func(ctx context.Context, progress func(string)) delegate.Result) (*Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("this session is closing, so no agent starts; the call was not run")
	}
	if err := m.roomLocked(); err != nil {
		return nil, err
	}
	m.next++
	ctx, cancel := context.WithCancel(m.ctx)
	j := &Job{id: "job-" + strconv.Itoa(m.next), agent: agent, conv: conv, started: m.opts.Now(), cancel: cancel, done: make(chan struct{})}
	m.jobs[j.id] = j
	m.running++
	m.wg.Add(1)
	go func() {
		// Close waits for the run, not for the report request: a host
		// that is closing may hold what ScheduleServerTurn waits for.
		report := func() bool {
			defer m.wg.Done()
			defer cancel()
			res := run(ctx, func(line string) {
				m.mu.Lock()
				j.progress = line
				m.mu.Unlock()
			})
			return m.finish(j, res)
		}()
		if !report {
			return
		}
		// One request per finished job: a request the session drops (such
		// as at session.clear) cannot strand a later job, and a report
		// that finds nothing left to tell is skipped.
		if err := m.opts.Host.ScheduleServerTurn(m.buildReport); err != nil {
			m.log.Warn("Could not schedule the report of a background agent job", "session", m.opts.SessionID, "job", j.id, "err", err)
		}
	}()
	return j, nil
}

// finish records a job's result and reports whether to ask the host for
// a report turn: not when the model asked for the stop, the session is
// closing, or the model already saw the result.
func (m *Manager) finish(j *Job, res delegate.Result) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	j.result, j.finished, j.ended = res, true, m.opts.Now()
	m.running--
	m.finished = append(m.finished, j)
	if len(m.finished) > Remembered {
		old := m.finished[0]
		m.finished = m.finished[1:]
		delete(m.jobs, old.id)
	}
	report := !j.stopped && !m.closed && !j.seen && m.opts.Host != nil
	if report {
		m.unreported = append(m.unreported, j)
	}
	close(j.done)
	return report
}

// buildReport collects up to four finished jobs the model has not seen
// into the prompt of a report turn.
func (m *Manager) buildReport() (protocol.Origin, string, bool) {
	m.mu.Lock()
	var batch []*Job
	rest := m.unreported[:0]
	for _, j := range m.unreported {
		switch {
		case j.seen:
		case len(batch) < reportBatch:
			j.seen = true
			batch = append(batch, j)
		default:
			rest = append(rest, j)
		}
	}
	clear(m.unreported[len(rest):])
	m.unreported = rest
	views := make([]View, len(batch))
	ids := make([]string, len(batch))
	for i, j := range batch {
		views[i] = m.viewLocked(j)
		ids[i] = j.id
	}
	m.mu.Unlock()
	if len(batch) == 0 {
		return protocol.Origin{}, "", false
	}
	return protocol.Origin{Kind: "background", Jobs: ids}, m.opts.Report(views), true
}

// viewLocked describes j; m.mu must be held.
func (m *Manager) viewLocked(j *Job) View {
	v := View{Job: j.id, Agent: j.agent, Session: j.conv}
	if !j.finished {
		v.Status = delegate.StatusRunning
		v.ElapsedSeconds = seconds(m.opts.Now().Sub(j.started))
		v.Progress = j.progress
		return v
	}
	r := j.result
	v.Status, v.Result = r.Status, &r
	v.ElapsedSeconds = seconds(j.ended.Sub(j.started))
	return v
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// Lookup returns the job named id.
func (m *Manager) Lookup(id string) (*Job, error) {
	id = strings.TrimSpace(id)
	m.mu.Lock()
	defer m.mu.Unlock()
	j := m.jobs[id]
	if j == nil {
		return nil, fmt.Errorf("there is no job %q in this session (it remembers its running jobs and its %d newest finished ones); agent_status lists them", id, Remembered)
	}
	return j, nil
}

// See describes j to the model. A finished job is then seen: no report
// turn will name it, and settled says so.
func (m *Manager) See(j *Job) (v View, settled bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v = m.viewLocked(j)
	if j.finished {
		j.seen = true
	}
	return v, j.finished
}

// SeeAll describes every remembered job, running ones first in start
// order, then finished ones oldest first, as See does; settled are the
// finished ones.
func (m *Manager) SeeAll() (views []View, settled []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var list []*Job
	for i := 1; i <= m.next; i++ {
		if j := m.jobs["job-"+strconv.Itoa(i)]; j != nil && !j.finished {
			list = append(list, j)
		}
	}
	list = append(list, m.finished...)
	views = make([]View, len(list))
	for i, j := range list {
		views[i] = m.viewLocked(j)
		if j.finished {
			j.seen = true
			settled = append(settled, j.id)
		}
	}
	return views, settled
}

// Cancel stops j, when it still runs, at the model's request: its context
// is cancelled (which stops its agent's processes) and no report turn
// follows. It waits up to settle for the job to end, then describes it as
// cancelled, with a note when it had already finished, ended otherwise as
// it was being cancelled, or has not stopped yet.
func (m *Manager) Cancel(ctx context.Context, j *Job, settle time.Duration) (View, error) {
	m.mu.Lock()
	already := j.finished
	if !already {
		j.stopped = true
	}
	m.mu.Unlock()
	if !already {
		j.cancel()
		if err := j.Await(ctx, settle); err != nil {
			return View{}, err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v := m.viewLocked(j)
	switch {
	case already:
		v.Note = fmt.Sprintf("%s had already finished (%s) before the cancel; nothing was stopped", j.id, v.Status)
	case !j.finished:
		v.Status = delegate.StatusCancelled
		v.Note = fmt.Sprintf("%s was cancelled but its agent had not stopped after %d s; agent_status %s shows when it has", j.id, seconds(settle), j.id)
	default:
		v.Status = delegate.StatusCancelled
		if v.Result != nil && v.Result.Status != delegate.StatusCancelled {
			v.Note = fmt.Sprintf("the agent ended (%s) as it was being cancelled", v.Result.Status)
		}
	}
	if j.finished {
		j.seen = true
	}
	return v, nil
}

// Outstanding returns how many jobs are running or finished but not yet
// reported to the model, for a client (scv exec) that stays open until
// every job it started has been reported.
func (m *Manager) Outstanding() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.running
	for _, j := range m.unreported {
		if !j.seen {
			n++
		}
	}
	return n
}

// ScheduleReports asks the host for a report turn again when finished
// jobs the model has not seen are waiting, for a session that dropped its
// pending server-started turns (such as at session.clear). It reports
// whether it asked.
func (m *Manager) ScheduleReports() bool {
	m.mu.Lock()
	waiting := false
	for _, j := range m.unreported {
		waiting = waiting || !j.seen
	}
	ask := waiting && !m.closed && m.opts.Host != nil
	m.mu.Unlock()
	if !ask {
		return false
	}
	if err := m.opts.Host.ScheduleServerTurn(m.buildReport); err != nil {
		m.log.Warn("Could not schedule the report of background agent jobs", "session", m.opts.SessionID, "err", err)
		return false
	}
	return true
}

// Close refuses new jobs, cancels every running one (which stops its
// agent's processes), and waits for them until ctx ends. Jobs it cancels
// are not reported.
func (m *Manager) Close(ctx context.Context) {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	done := make(chan struct{})
	go func() {
		m.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		m.log.Warn("Background agent jobs did not stop before the session closed", "session", m.opts.SessionID, "err", ctx.Err())
	}
}
