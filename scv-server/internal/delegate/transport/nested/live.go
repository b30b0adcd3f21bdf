package nested

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/output"
	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/proctag"
	"github.com/scv-cli/scv/shared/protocol"
)

// live is one running nested SCV: its process, its connection, the
// nested session, and what `scv agents ps` shows of it.
type live struct {
	r       *Runner
	conv    string // the conversation's handle, such as scv-1
	handle  string // the delegation handle: record name and process tag
	depth   int    // the nested session's delegation depth
	proc    *client.Process
	conn    *client.Conn
	session string // the nested session's id
	stderr  *tail

	done    chan struct{} // closed when the reader has ended
	reaped  chan struct{} // closed when the watcher has collected the process
	stopped sync.Once

	mu        sync.Mutex
	turn      *turn           // guarded by mu; the running call's turn
	jobs      map[string]bool // guarded by mu; the nested SCV's jobs that count
	reporting map[string][]string
	rec       records.Record // guarded by mu
	recorded  bool           // guarded by mu
	idle      *time.Timer    // guarded by mu
	ended     bool           // guarded by mu; the record is gone for good
	killed    bool           // guarded by mu; `scv agents kill` stopped it
}

// tail is a stderr tail safe for the writer os/exec starts.
type tail struct {
	mu sync.Mutex
	t  output.Tail
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.t.Write(b)
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimRight(t.t.String(), "\n")
}

// start starts the nested SCV of a new conversation and opens its session.
func (r *Runner) start(ctx context.Context, call delegate.Call) (*live, delegate.ErrorKind, error) {
	l, err := r.Plan(call)
	if err != nil {
		if errors.Is(err, delegate.ErrUnavailable) {
			return nil, delegate.ErrorUnavailable, errors.New(strings.TrimPrefix(err.Error(), delegate.ErrUnavailable.Error()+": "))
		}
		return nil, delegate.ErrorNone, err
	}
	if err := adapter.EnsureDirs(r.opts.Home); err != nil {
		return nil, delegate.ErrorNone, fmt.Errorf("cannot prepare the private home of the nested SCV: %v", err)
	}
	home, err := adapter.Home(r.opts.Home)
	if err != nil {
		return nil, delegate.ErrorNone, err
	}
	env, err := r.env(call, home)
	if err != nil {
		return nil, delegate.ErrorNone, fmt.Errorf("cannot build the environment of the nested SCV: %v", err)
	}
	lv := &live{r: r, conv: call.Conversation, handle: call.Handle, depth: call.Depth + 1,
		stderr: &tail{t: output.Tail{Max: StderrTail}}, done: make(chan struct{}), reaped: make(chan struct{}),
		jobs: map[string]bool{}, reporting: map[string][]string{}}
	proc, err := client.Start(client.Command{Path: l.Executable, Args: l.Args, Dir: l.Dir, Env: env, Stderr: lv.stderr,
		Starter: func(cmd *exec.Cmd) error { return procgroup.StartService(cmd, call.Handle) }})
	if err != nil {
		return nil, delegate.ErrorUnavailable, fmt.Errorf("SCV could not be started (%s): %v", l.Executable, err)
	}
	lv.proc = proc
	lv.conn = client.NewConn(proc.Stream(), 0)
	go lv.watch()
	lv.record(call)
	if err := lv.handshake(ctx, call); err != nil {
		lv.stop()
		if tail := lv.stderr.String(); tail != "" {
			err = fmt.Errorf("%w; its stderr ends with: %s", err, tail)
		}
		return nil, delegate.ErrorUnavailable, err
	}
	go lv.read()
	return lv, delegate.ErrorNone, nil
}

// handshake sends initialize and session.start in one write and reads
// their answers, bounded by the start timeout and ctx. It runs before the
// reader starts, so it reads the connection itself; the process exiting
// ends the read.
func (l *live) handshake(ctx context.Context, call delegate.Call) error {
	hello := client.HelloAt(ProtocolVersion, "init", "scv-nested")
	depth := l.depth
	start := &protocol.SessionStart{RequestID: "start", Cwd: call.Dir, Model: call.Model, DelegationDepth: &depth}
	if err := l.conn.Send(hello, start); err != nil {
		return fmt.Errorf("the nested SCV did not take its handshake: %v", err)
	}
	type answer struct {
		session string
		err     error
	}
	got := make(chan answer, 1)
	go func() {
		var a answer
		a.session, a.err = l.readHandshake(hello)
		got <- a
	}()
	timer := time.NewTimer(l.r.opts.StartTimeout)
	defer timer.Stop()
	select {
	case a := <-got:
		l.session = a.session
		return a.err
	case <-ctx.Done():
		l.stop() // ends the read
		<-got
		return errors.New("the call ended while the nested SCV was starting")
	case <-timer.C:
		l.stop()
		<-got
		return fmt.Errorf("the nested SCV did not open its session within %s", l.r.opts.StartTimeout)
	}
}

func (l *live) readHandshake(hello *protocol.Initialize) (string, error) {
	for {
		f, err := l.conn.Read()
		if err != nil {
			<-l.reaped
			return "", fmt.Errorf("the nested SCV exited before its session opened (%s)", exitStatus(l.proc))
		}
		switch ev := f.Event.(type) {
		case *protocol.Initialized:
			if _, err := client.Negotiated(hello, ev); err != nil {
				return "", err
			}
		case *protocol.SessionStarted:
			if err := records.CheckName("nested session id", ev.SessionID); err != nil {
				return "", fmt.Errorf("the nested SCV answered with an unusable session id: %v", err)
			}
			return ev.SessionID, nil
		case *protocol.Error:
			return "", fmt.Errorf("the nested SCV refused to start its session: %s", ev.Message)
		}
	}
}

// exitStatus says how the process ended.
func exitStatus(p *client.Process) string {
	var ee *client.ExitError
	if errors.As(p.ExitError(), &ee) {
		return ee.Status()
	}
	return "exited with status 0"
}

// watch waits on the process from the start: when it exits, by itself or
// killed, it is collected at once, the rest of its tree (every process
// carrying its tag) is stopped, its pipes are closed (which ends the
// reader) and its record removed.
func (l *live) watch() {
	defer close(l.reaped)
	<-l.proc.Exited()
	procgroup.Release(l.proc.Pid())
	_ = l.proc.Stop(context.Background(), 0)
	if _, survivors := proctag.Stop(l.handle, StopGrace); survivors > 0 {
		l.r.log.Warn("processes of a nested SCV survived the sweep", "handle", l.handle, "survivors", survivors)
	}
	killed := l.killRequested()
	l.mu.Lock()
	l.killed = killed
	l.mu.Unlock()
	l.forgetRecord()
	l.r.drop(l)
}

// exited reports whether the process has exited.
func (l *live) exited() bool {
	select {
	case <-l.proc.Exited():
		return true
	default:
		return false
	}
}

// stop shuts the nested SCV down: its stdin closes (the server exits on
// end of input), it gets StopGrace, then its group and everything tagged
// with it are killed. It returns once the process was collected and the
// reader has ended.
func (l *live) stop() {
	l.stopped.Do(func() {
		l.mu.Lock()
		if l.idle != nil {
			l.idle.Stop()
		}
		l.mu.Unlock()
		_ = l.proc.Stop(context.Background(), StopGrace)
	})
	<-l.reaped
	if l.session != "" {
		<-l.done
	}
}

// read decodes the nested SCV's events until its output ends, handing
// those of the running call's turn to that call and handling the rest
// itself.
func (l *live) read() {
	defer close(l.done)
	for {
		f, err := l.conn.Read()
		if err != nil {
			return
		}
		if f.Event != nil {
			l.dispatch(f.Event)
		}
	}
}

// dispatch counts the nested SCV's jobs from ev and delivers ev: to the
// running call when it belongs to its turn, else to the between-calls
// handling, which denies approval requests (no call is there to carry
// them to a person).
func (l *live) dispatch(ev protocol.Event) {
	l.mu.Lock()
	changed := l.countJobsLocked(ev)
	t := l.turn
	mine := t != nil && t.owns(ev)
	idle := t == nil
	l.mu.Unlock()
	if mine {
		select {
		case t.events <- ev:
		case <-t.quit:
		}
		return
	}
	if ar, ok := ev.(*protocol.ApprovalRequested); ok {
		_ = l.conn.Send(&protocol.ApprovalResolve{RequestID: "deny-" + ar.ApprovalID, SessionID: l.session, ApprovalID: ar.ApprovalID, Approved: false})
	}
	if changed && idle {
		l.updateRecord(func(rec *records.Record) { rec.BackgroundJobs = len(l.jobs) })
		l.armIdle()
	}
}

// countJobsLocked follows the nested SCV's background jobs by handle and
// status alone: a job counts from the call that started it
// (tool.completed.jobs) until the nested model has seen its result, through
// a later call that settled it (settled_jobs) or a report turn, which
// counts until it ends. It reports whether the count changed. l.mu must be
// held.
func (l *live) countJobsLocked(ev protocol.Event) bool {
	before := len(l.jobs)
	switch e := ev.(type) {
	case *protocol.ToolCompleted:
		for _, j := range e.Jobs {
			l.jobs[j] = true
		}
		for _, j := range e.SettledJobs {
			delete(l.jobs, j)
		}
		return len(l.jobs) != before
	case *protocol.TurnStarted:
		if e.Origin != nil && len(e.Origin.Jobs) > 0 {
			l.reporting[e.TurnID] = e.Origin.Jobs
			for _, j := range e.Origin.Jobs {
				l.jobs[j] = true
			}
		}
	case *protocol.TurnCompleted:
		l.endReportLocked(e.TurnID)
	case *protocol.TurnFailed:
		l.endReportLocked(e.TurnID)
	case *protocol.TurnCancelled:
		l.endReportLocked(e.TurnID)
	}
	return len(l.jobs) != before
}

func (l *live) endReportLocked(turnID string) {
	for _, j := range l.reporting[turnID] {
		delete(l.jobs, j)
	}
	delete(l.reporting, turnID)
}

func (l *live) jobCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.jobs)
}

// armIdle (re)starts the idle timer of a nested SCV between calls: idle
// for the conversation idle time with no job counting, it is shut down and
// its conversation ends.
func (l *live) armIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.idle != nil {
		l.idle.Stop()
	}
	if l.turn != nil || len(l.jobs) > 0 {
		return
	}
	l.idle = time.AfterFunc(l.r.opts.Idle, func() {
		l.mu.Lock()
		busy := l.turn != nil || len(l.jobs) > 0
		l.mu.Unlock()
		if !busy {
			l.r.Forget(l.session)
		}
	})
}

// record writes the delegation record once the process has started.
func (l *live) record(call delegate.Call) {
	owner, err := records.Self()
	if err != nil {
		l.r.log.Warn("delegation record without owner identity", "handle", l.handle, "err", err)
	}
	proc, err := records.ProcessOf(l.proc.Pid())
	if err != nil {
		proc = records.Process{PID: l.proc.Pid()}
	}
	l.mu.Lock()
	l.rec = records.Record{Handle: l.handle, Agent: delegate.SCV, Session: call.SessionID, Cwd: call.Dir, Depth: l.depth,
		AgentProcess: proc, Owner: owner, StartedUnix: time.Now().Unix(), Conversation: call.Conversation, Turn: call.Turn,
		Background: call.Background}
	l.mu.Unlock()
	l.updateRecord(func(*records.Record) {})
}

// updateRecord changes the record with fn, called with l.mu held, and
// writes it, unless the nested SCV has ended.
func (l *live) updateRecord(fn func(*records.Record)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	if rec, err := records.Read(l.r.opts.Home, l.handle); err == nil && rec.KillRequestedUnix != 0 {
		// `scv agents kill` marked it and is stopping it: the mark must
		// stay for the watcher to read.
		return
	}
	fn(&l.rec)
	if err := records.Write(l.r.opts.Home, l.rec); err != nil {
		l.r.log.Warn("cannot write the delegation record", "handle", l.handle, "err", err)
		return
	}
	l.recorded = true
}

// killRequested reports whether `scv agents kill` asked for the stop.
func (l *live) killRequested() bool {
	rec, err := records.Read(l.r.opts.Home, l.handle)
	return err == nil && rec.KillRequestedUnix != 0
}

// stoppedByKill reports whether `scv agents kill` stopped the nested SCV:
// its record carries the mark, or, once the watcher has removed it, the
// watcher read it.
func (l *live) stoppedByKill() bool {
	if l.killRequested() {
		return true
	}
	if !l.exited() {
		return false
	}
	<-l.reaped
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.killed
}

// forgetRecord removes the record for good.
func (l *live) forgetRecord() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return
	}
	l.ended = true
	if !l.recorded {
		return
	}
	if err := records.Remove(l.r.opts.Home, l.handle); err != nil {
		l.r.log.Warn("cannot remove the delegation record", "handle", l.handle, "err", err)
	}
}
