package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"golang.org/x/sync/errgroup"
)

// ClientName is the client name scv exec declares in initialize.
const ClientName = "scv-exec"

// Run runs one turn as described by opts and returns nil when it completed.
//
// It owns three things and releases all of them before it returns: the
// server process (stopped, and killed if it will not exit), the goroutine
// reading the server's stdout, and the goroutine asking approvals on the
// terminal. The reader ends when Stop closes the pipe; the asker ends when
// the run's context is cancelled.
func Run(ctx context.Context, opts *Options) (err error) {
	terminal := opts.IsTerminal != nil && opts.IsTerminal()
	if opts.Prompt == "-" && terminal {
		// Otherwise a person sees scv hang, waiting for an EOF.
		fmt.Fprintln(opts.IO.ErrOut, "scv: reading the prompt from the terminal; end it with Ctrl-D")
	}
	prompt, err := readPrompt(opts.Prompt, opts.IO.In)
	if err != nil {
		return err
	}
	dir, err := workspace(opts.Dir)
	if err != nil {
		return err
	}
	// Subscribe before the server starts so an early Ctrl-C is ours too.
	sigs, stopSignals := opts.Signals()
	defer stopSignals()

	child, err := connect(opts)
	if err != nil {
		return err
	}
	// The server of the run's own got the real stderr above; the run's
	// own output goes through a buffered stdout from here on.
	out := newOutBuffer(opts.IO.Out)
	defer func() {
		// In --json mode stdout is the output: losing its end is an error.
		if ferr := out.Close(); ferr != nil && err == nil && opts.JSON {
			err = ferr
		}
	}()
	opts = opts.withOutput(out)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)

	r := &run{
		opts:     opts,
		prompt:   prompt,
		dir:      dir,
		requests: map[string]string{},
		jobs:     map[string]bool{},
		view:     &textView{out: opts.IO.Out, errOut: opts.IO.ErrOut, text: !opts.JSON},
		// Protocol 4 also for a server of its own: session.started's
		// configuration warnings and turn.retrying reach the user.
		version: protocol.Version4,
	}
	if child.daemon {
		// Protocol 4 gives the run session.attach (--continue of an open
		// session, re-attaching after a restart) and its session a ring
		// to catch up from.
		r.version, r.instance = protocol.Version4, child.instance
		r.idPrefix = fmt.Sprintf("scv-exec-%d-", os.Getpid())
	}
	frames := r.read(g, gctx, client.NewConn(child.stream, 0))
	if terminal {
		r.asker = newAsker(opts.IO.In, opts.IO.ErrOut)
		g.Go(func() error { return r.asker.run(gctx) })
	}

	loopErr := r.loop(frames, sigs)
	for child.daemon && errors.Is(loopErr, ErrServerExited) {
		// The reader has ended (its channel closed): the old connection
		// can go before a new one takes its place.
		child.release()
		next, nextFrames, err := r.reattach(ctx, g, gctx, child.home, sigs)
		if next == nil {
			if err != nil {
				loopErr = err
			}
			break
		}
		child = next
		loopErr = r.events(nextFrames, sigs)
	}
	r.view.endLine()
	r.closePrompt()
	// The turn is over: its last text goes out now, not after the
	// server's shutdown.
	_ = out.Flush()
	if r.killNow {
		child.kill()
	}
	cancel()
	stopErr := child.stop(durationOr(opts.ShutdownTimeout, DefaultShutdownTimeout))
	_ = g.Wait() // the reader and asker report through the loop, never here
	child.release()
	if child.daemon && errors.Is(loopErr, ErrServerExited) {
		return r.daemonGone()
	}
	return r.finish(loopErr, stopErr)
}

// read starts the goroutine that reads conn's frames for the loop, owned
// by g, and makes conn the run's connection.
func (r *run) read(g *errgroup.Group, ctx context.Context, conn *client.Conn) <-chan frame {
	r.conn = conn
	frames := make(chan frame)
	g.Go(func() error { return readFrames(ctx, conn, frames) })
	return frames
}

// ErrDaemonClosed is wrapped by the error of a run whose daemon
// connection ended before its turn did.
var ErrDaemonClosed = errors.New("the daemon closed the connection before the turn ended")

// daemonGone is the outcome of a run whose daemon connection ended first
// and that could not follow its session into a restarted daemon: a stop,
// a crash, or a restart that did not come back in time. The session is not lost with the
// connection, so the error says where it is.
func (r *run) daemonGone() error {
	if r.sessionID == "" {
		return fmt.Errorf("%w (it stopped or restarted; `scv status` says whether it runs)", ErrDaemonClosed)
	}
	return fmt.Errorf("%w (it stopped, crashed, or did not come back from a restart in time); session %s stays stored with its prompt (`scv status` lists it while a daemon keeps it open)", ErrDaemonClosed, r.sessionID)
}

// frame is one line from the server: its bytes, and its event when the type
// is one this client knows (nil otherwise), or a reading error.
type frame struct {
	raw []byte
	ev  protocol.Event
	err error
}

// readFrames sends every frame of conn to out until EOF or a read error,
// then closes out. Frames of an unknown type are passed on with a nil
// event: a newer server may send events this client does not know, and
// --json still prints them. Once ctx is done, or a frame was bad, it stops
// delivering but keeps reading, so a server still writing is never blocked
// on a full pipe and can exit; Stop closing the pipe ends it at the latest.
func readFrames(ctx context.Context, conn *client.Conn, out chan<- frame) error {
	defer close(out)
	deliver := true
	for {
		cf, err := conn.Read()
		if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
			return nil
		}
		if err != nil {
			if deliver {
				select {
				case out <- frame{err: fmt.Errorf("reading from scv-server: %w", err)}:
				case <-ctx.Done():
				}
			}
			return nil
		}
		if !deliver {
			continue
		}
		var f frame
		var tooLarge *protocol.ErrFrameTooLarge
		switch {
		case errors.As(cf.Err, &tooLarge):
			f.err = fmt.Errorf("scv-server sent a frame over the limit: %w", cf.Err)
		case cf.Unknown:
			f.raw = cf.Raw
		case cf.Err != nil:
			f.raw, f.err = cf.Raw, fmt.Errorf("scv-server sent a malformed frame: %w", cf.Err)
		default:
			f.raw, f.ev = cf.Raw, cf.Event
		}
		select {
		case out <- f:
		case <-ctx.Done():
			deliver = false
		}
		if f.err != nil {
			deliver = false
		}
	}
}

// run is the client state of one exec run. Only the loop goroutine touches
// it.
type run struct {
	opts   *Options
	conn   *client.Conn
	prompt string
	dir    string
	view   *textView
	asker  *asker // nil without a terminal

	lastID int
	// idPrefix makes the run's request ids its own in a session other
	// clients share (the daemon): turn.started names the request that
	// started the turn, and another client's "3" is not ours.
	idPrefix string
	requests map[string]string // request_id -> client message type

	// version is the protocol version the run speaks: 4 in the daemon.
	version int
	// instance is the daemon instance whose numbering lastSeq is in.
	instance string
	lastSeq  uint64
	// replayEnd is the last replayed seq after a re-attach to a restarted
	// daemon, until the run has seen it (reattach.go, replayDone).
	replayEnd uint64

	sessionID   string
	turnReqID   string // request_id of our turn.start
	queuedID    string // its queue entry while it waits in the queue
	turnID      string
	interrupted bool
	cancelSent  bool
	killNow     bool

	// jobs are the background jobs our turns started that no report turn
	// has named yet; the run stays open until they are reported.
	jobs map[string]bool
	// userOutcome is the outcome of the user's turn once it completed while
	// jobs were still unreported.
	userOutcome error
	waitingJobs bool

	pending      []*protocol.ApprovalRequested // waiting for the asker
	asking       bool                          // a question is on the terminal
	promptClosed bool                          // its line was ended unanswered
}

// loop drives the run until the turn ends, the server goes away, or the user
// interrupts it.
func (r *run) loop(frames <-chan frame, sigs <-chan os.Signal) error {
	// initialize and session.start need no answer from each other, so they
	// go in one write: one round trip fewer before the turn starts. With
	// --continue, session.list goes first and its answer names the session
	// to resume.
	var open protocol.ClientMessage = r.sessionStart("")
	if r.opts.Continue {
		open = &protocol.SessionList{RequestID: r.id(protocol.TypeSessionList), Cwd: r.dir, Limit: 1}
	}
	if err := r.send(client.HelloAt(r.version, r.id(protocol.TypeInitialize), ClientName), open); err != nil {
		return err
	}
	return r.events(frames, sigs)
}

// sessionStart is the run's session.start, resuming the stored session
// resume when it is not "". In the daemon (protocol 4) it carries
// --approval-policy, which a server of the run's own takes as a flag.
func (r *run) sessionStart(resume string) *protocol.SessionStart {
	m := &protocol.SessionStart{RequestID: r.id(protocol.TypeSessionStart), Cwd: r.dir, Resume: resume}
	if r.version >= protocol.Version4 {
		m.ApprovalPolicy = r.opts.ApprovalPolicy
	}
	return m
}

// events drives the run on frames until the turn ends, the connection
// ends, or the user interrupts it.
func (r *run) events(frames <-chan frame, sigs <-chan os.Signal) error {
	var answers <-chan answer
	if r.asker != nil {
		answers = r.asker.answers
	}
	var cancelDeadline <-chan time.Time
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return ErrServerExited
			}
			if f.err != nil {
				return f.err
			}
			if done, err := r.handle(f); done || err != nil {
				return err
			}
			if err := r.replayDone(); err != nil {
				return err
			}
		case a := <-answers:
			r.asking = false
			if err := r.send(&protocol.ApprovalResolve{
				RequestID:  r.id(protocol.TypeApprovalResolve),
				SessionID:  r.sessionID,
				ApprovalID: a.req.ApprovalID,
				Approved:   a.approved,
			}); err != nil {
				return err
			}
			r.askNext()
		case <-sigs:
			if r.interrupted {
				r.killNow = true
				return &cli.InterruptedError{Msg: "interrupted again: stopped scv-server without waiting for the cancel"}
			}
			r.interrupted = true
			if r.turnReqID == "" {
				// No turn yet: closing the server's stdin is all it takes.
				return &cli.InterruptedError{Msg: "interrupted before the turn started"}
			}
			timeout := durationOr(r.opts.CancelTimeout, DefaultCancelTimeout)
			t := time.NewTimer(timeout)
			defer t.Stop()
			cancelDeadline = t.C
			r.view.endLine()
			r.closePrompt()
			fmt.Fprintln(r.opts.IO.ErrOut, "scv: cancelling the turn; interrupt again to stop at once")
			if err := r.cancelTurn(); err != nil {
				return err
			}
		case <-cancelDeadline:
			r.killNow = true
			return &cli.InterruptedError{Msg: fmt.Sprintf("scv-server did not confirm the cancel within %s; stopped it",
				durationOr(r.opts.CancelTimeout, DefaultCancelTimeout))}
		}
	}
}

// handle applies one frame. done reports that the run is over, with err
// its outcome.
func (r *run) handle(f frame) (done bool, err error) {
	if r.opts.JSON {
		if _, err := r.opts.IO.Out.Write(append(f.raw, '\n')); err != nil {
			return true, err
		}
	}
	if sq, ok := f.ev.(protocol.Sequenced); ok && sq.Session() == r.sessionID {
		r.lastSeq = sq.SeqNum()
	}
	switch ev := f.ev.(type) {
	case *protocol.SessionListed:
		return false, r.continueSession(ev)
	case *protocol.SessionAttached:
		if r.sessionID != "" || r.requests[ev.RequestID] != protocol.TypeSessionAttach {
			return false, nil
		}
		return false, r.started(ev.SessionID)
	case *protocol.QueueEnqueued:
		if ev.RequestID == r.turnReqID && r.turnReqID != "" {
			r.queuedID = ev.Entry.QueueID
		}
	case *protocol.SessionStarted:
		if r.sessionID != "" {
			return false, nil
		}
		for _, w := range ev.Warnings {
			r.view.warn(w)
		}
		return false, r.started(ev.SessionID)
	case *protocol.TurnRetrying:
		if r.mine(ev.TurnHeader) {
			r.view.retrying(ev)
		}
	case *protocol.TurnStarted:
		if r.turnID == "" && ev.RequestID == r.turnReqID {
			r.turnID = ev.TurnID
			if r.interrupted {
				return false, r.cancelTurn()
			}
		}
		if r.waitingJobs && ev.Origin != nil && ev.Origin.Kind == protocol.OriginBackground && r.reports(ev.Origin.Jobs) {
			// A report of our jobs: show it like our own turn.
			r.turnID = ev.TurnID
			r.cancelSent = false
			r.view.endLine()
			fmt.Fprintf(r.opts.IO.ErrOut, "scv: background report (%s)\n", strings.Join(ev.Origin.Jobs, ", "))
		}
	case *protocol.AssistantDelta:
		if r.mine(ev.TurnHeader) {
			r.view.delta(ev.Content)
		}
	case *protocol.AssistantCompleted:
		if r.mine(ev.TurnHeader) {
			r.view.completed(ev.Content)
		}
	case *protocol.ToolProposed:
		if r.mine(ev.TurnHeader) {
			r.view.toolProposed(ev.Name, ev.Arguments)
		}
	case *protocol.ToolCompleted:
		if r.mine(ev.TurnHeader) {
			r.view.toolCompleted(ev.Success, ev.Output)
			for _, j := range ev.Jobs {
				r.jobs[j] = true
			}
			for _, j := range ev.SettledJobs {
				// The model read its result: no report turn will name it.
				delete(r.jobs, j)
			}
		}
	case *protocol.ApprovalRequested:
		return false, r.approval(ev)
	case *protocol.TurnCompleted:
		if r.mine(ev.TurnHeader) {
			return r.turnDone(ev.Origin)
		}
	case *protocol.TurnCancelled:
		if r.mine(ev.TurnHeader) {
			return true, r.outcome(&cli.InterruptedError{Msg: "the turn was cancelled"})
		}
	case *protocol.TurnFailed:
		if r.mine(ev.TurnHeader) {
			return true, r.outcome(&TurnFailedError{Code: ev.Code, Message: ev.Message})
		}
	case *protocol.Error:
		req := r.requests[ev.RequestID]
		if !ev.Fatal && (req == protocol.TypeApprovalResolve || req == protocol.TypeTurnCancel) {
			// A late answer or cancel racing the end of the turn; the
			// terminal event still decides the outcome.
			r.view.endLine()
			fmt.Fprintf(r.opts.IO.ErrOut, "scv: warning: %v\n", &ServerError{Request: req, Code: ev.Code, Message: ev.Message})
			return false, nil
		}
		return true, &ServerError{Request: req, Code: ev.Code, Message: ev.Message}
	}
	return false, nil
}

// turnDone ends the run when the turn just completed leaves no background
// job unreported; otherwise the run waits for the server's report turns
// (tools.md: scv exec stays open until every job it started has been
// reported). A cancelled or failed turn ends the run at once, and closing
// the session then cancels the jobs.
func (r *run) turnDone(origin *protocol.Origin) (bool, error) {
	if origin != nil {
		for _, j := range origin.Jobs {
			delete(r.jobs, j)
		}
	}
	if !r.waitingJobs {
		r.userOutcome = r.outcome(nil)
	}
	if len(r.jobs) == 0 || r.interrupted {
		r.view.endLine()
		return true, r.userOutcome
	}
	r.waitingJobs = true
	r.turnID = "" // until a report turn starts
	r.view.endLine()
	fmt.Fprintf(r.opts.IO.ErrOut, "scv: waiting for %d background job(s) to report: %s\n", len(r.jobs), strings.Join(slices.Sorted(maps.Keys(r.jobs)), ", "))
	return false, nil
}

// started sends the run's prompt to the session it started, resumed or
// attached to.
func (r *run) started(sessionID string) error {
	r.sessionID = sessionID
	r.turnReqID = r.id(protocol.TypeTurnStart)
	return r.send(&protocol.TurnStart{RequestID: r.turnReqID, SessionID: r.sessionID, Prompt: r.prompt})
}

// reports says whether a report turn names one of our jobs.
func (r *run) reports(jobs []string) bool {
	for _, j := range jobs {
		if r.jobs[j] {
			return true
		}
	}
	return false
}

// continueSession answers session.list for --continue: resume the newest
// session, or start a new one when the workspace has none. In the daemon
// the newest session may be open there (session.listed's live): the run
// attaches to it instead, since an open session cannot be resumed twice.
// The replay that follows a resume is not printed (--json prints it like
// every frame).
func (r *run) continueSession(ev *protocol.SessionListed) error {
	if !r.opts.Continue || r.sessionID != "" || r.requests[ev.RequestID] != protocol.TypeSessionList {
		return nil
	}
	if len(ev.Sessions) == 0 {
		fmt.Fprintln(r.opts.IO.ErrOut, "scv: no earlier session in this workspace; starting a new one")
		return r.send(r.sessionStart(""))
	}
	last := ev.Sessions[0]
	if slices.ContainsFunc(ev.Live, func(l protocol.LiveSession) bool { return l.SessionID == last.SessionID }) {
		if r.opts.ApprovalPolicy != "" {
			return fmt.Errorf("session %s is open in the daemon under its own approval policy, which --approval-policy may not change for the other clients it may have: continue it without --approval-policy", last.SessionID)
		}
		fmt.Fprintf(r.opts.IO.ErrOut, "scv: continuing the session of %s (%s), open in the daemon: %s\n", last.UpdatedAt, cmdutil.Turns(last.Turns), last.Title)
		return r.send(&protocol.SessionAttach{RequestID: r.id(protocol.TypeSessionAttach), SessionID: last.SessionID})
	}
	fmt.Fprintf(r.opts.IO.ErrOut, "scv: continuing the session of %s (%s): %s\n", last.UpdatedAt, cmdutil.Turns(last.Turns), last.Title)
	return r.send(r.sessionStart(last.SessionID))
}

// mine reports whether a turn event belongs to the turn this run started,
// not to one the server started on its own.
func (r *run) mine(h protocol.TurnHeader) bool {
	return r.turnID != "" && h.TurnID == r.turnID
}

// outcome is the result of the turn's terminal event: an interrupt decides
// it whatever the server says, so Ctrl-C always exits 130.
func (r *run) outcome(err error) error {
	r.view.endLine()
	if r.interrupted {
		return &cli.InterruptedError{Msg: "the turn was cancelled"}
	}
	return err
}

func (r *run) approval(ev *protocol.ApprovalRequested) error {
	if !r.mine(ev.TurnHeader) {
		return nil
	}
	if r.asker == nil {
		r.view.endLine()
		fmt.Fprintf(r.opts.IO.ErrOut, "scv: denied %q: it needs approval and there is no terminal to ask (stdin is not a terminal); for trusted automation, --approval-policy auto runs every call unasked\n", ev.Summary)
		return r.send(&protocol.ApprovalResolve{
			RequestID:  r.id(protocol.TypeApprovalResolve),
			SessionID:  r.sessionID,
			ApprovalID: ev.ApprovalID,
			Approved:   false,
		})
	}
	r.pending = append(r.pending, ev)
	r.askNext()
	return nil
}

// askNext hands the next pending approval to the asker when it is idle. The
// asker's request channel has room for one, so this never blocks.
func (r *run) askNext() {
	if r.asking || len(r.pending) == 0 {
		return
	}
	r.view.endLine()
	r.asker.reqs <- r.pending[0]
	r.pending = r.pending[1:]
	r.asking = true
	r.promptClosed = false
}

// closePrompt ends the line of a question left unanswered (the user pressed
// Ctrl-C at it, or the turn ended under it), so the next message starts on
// its own line.
func (r *run) closePrompt() {
	if r.asking && !r.promptClosed {
		fmt.Fprintln(r.opts.IO.ErrOut)
		r.promptClosed = true
	}
}

func (r *run) cancelTurn() error {
	if r.turnID == "" || r.cancelSent {
		return nil // sent when turn.started arrives
	}
	r.cancelSent = true
	return r.send(&protocol.TurnCancel{RequestID: r.id(protocol.TypeTurnCancel), SessionID: r.sessionID, TurnID: r.turnID})
}

// id returns a new request_id and remembers which message type it is for,
// so an error event can name the request it refuses.
func (r *run) id(kind string) string {
	r.lastID++
	id := r.idPrefix + strconv.Itoa(r.lastID)
	r.requests[id] = kind
	return id
}

// send writes msgs to the server in one write. A write error means the
// server is gone; its exit status, read later, says why.
func (r *run) send(msgs ...protocol.ClientMessage) error {
	err := r.conn.Send(msgs...)
	var werr *client.WriteError
	if errors.As(err, &werr) {
		return ErrServerExited
	}
	return err
}

// finish combines the loop's outcome with how the server exited.
func (r *run) finish(loopErr, stopErr error) error {
	if errors.Is(loopErr, ErrServerExited) {
		var ee *client.ExitError
		if errors.As(stopErr, &ee) && ee.ConfigError() {
			// The server said what is wrong with the configuration on
			// the stderr we share: one message, not two.
			return cli.Reported(fmt.Errorf("%w (%s)", ErrServerExited, describeExit(stopErr)))
		}
		return fmt.Errorf("%w (%s)", ErrServerExited, describeExit(stopErr))
	}
	if errors.Is(stopErr, client.ErrKilled) && !r.killNow {
		fmt.Fprintf(r.opts.IO.ErrOut, "scv: warning: scv-server %v\n", stopErr)
	}
	return loopErr
}

// describeExit says how the server process ended.
func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// workspace returns the absolute workspace directory for dir ("" is the
// current directory). The server wants an absolute path, and checking it
// here gives a clear error before any process starts.
func workspace(dir string) (string, error) { return paths.ResolveWorkspace(dir, false) }

func durationOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
