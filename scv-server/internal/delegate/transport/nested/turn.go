package nested

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/output"
	"github.com/scv-cli/scv/scv-server/internal/oneline"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/protocol"
)

// maxLine bounds one progress line.
const maxLine = 300

// turn is the running call's turn of a nested SCV: the reader hands it
// the events of that turn.
type turn struct {
	req    string              // the turn.start's request id
	id     string              // guarded by live.mu; the turn id once started
	events chan protocol.Event // the turn's events, in order
	quit   chan struct{}       // closed when the call stops listening
	// relays are the approval requests being relayed; relayCtx ends with
	// the turn, which withdraws them, and the turn waits for them.
	relays   sync.WaitGroup
	relayCtx context.Context
}

// owns reports whether ev belongs to t: its turn.started (matched by
// request id, also for a turn the nested SCV queued behind a report
// turn), an error answering its turn.start, and every event of its turn.
// live.mu must be held.
func (t *turn) owns(ev protocol.Event) bool {
	switch e := ev.(type) {
	case *protocol.TurnStarted:
		if t.id == "" && e.RequestID == t.req {
			t.id = e.TurnID
			return true
		}
	case *protocol.Error:
		return e.RequestID == t.req
	case *protocol.QueueEnqueued:
		return e.RequestID == t.req
	}
	if te, ok := ev.(protocol.TurnEvent); ok && t.id != "" {
		return te.Turn().TurnID == t.id
	}
	return false
}

// stream turns a turn's events into progress lines and the result.
type stream struct {
	l        *live
	turn     *turn
	call     delegate.Call
	progress func(string)
	partial  strings.Builder   // assistant text after the last newline
	args     map[string]string // a tool call's line, by call id
	reply    string            // the last non-empty assistant message
}

// line sends one redacted, bounded progress line.
func (s *stream) line(text string) {
	if s.progress == nil {
		return
	}
	if text = output.Redact(oneline.Bound(text, maxLine)); text != "" {
		s.progress(text)
	}
}

// text sends the completed lines of streamed assistant text.
func (s *stream) text(delta string) {
	for {
		i := strings.IndexByte(delta, '\n')
		if i < 0 {
			if s.partial.Len() < 4*maxLine {
				s.partial.WriteString(delta)
			}
			return
		}
		s.partial.WriteString(delta[:i])
		s.line(s.partial.String())
		s.partial.Reset()
		delta = delta[i+1:]
	}
}

// handle takes one event of the turn; it reports the result once the
// turn has ended.
func (s *stream) handle(ev protocol.Event, res *delegate.Result) bool {
	switch e := ev.(type) {
	case *protocol.AssistantDelta:
		s.text(e.Content)
	case *protocol.AssistantCompleted:
		s.line(s.partial.String())
		s.partial.Reset()
		if strings.TrimSpace(e.Content) != "" {
			s.reply = e.Content
		}
	case *protocol.QueueEnqueued:
		s.line("waiting for the nested SCV's own report turn to end")
	case *protocol.ToolProposed:
		s.args[e.CallID] = toolLine(e.Name, e.Arguments)
	case *protocol.ToolStarted:
		s.line(s.args[e.CallID])
	case *protocol.ToolProgress:
		s.line(e.Line)
	case *protocol.ToolCompleted:
		word := "done"
		if !e.Success {
			word = "failed"
		}
		s.line(e.Name + " " + word)
		delete(s.args, e.CallID)
	case *protocol.ApprovalRequested:
		s.turn.relays.Go(func() { s.l.relay(s.turn.relayCtx, s.call, e) })
	case *protocol.TurnCompleted:
		res.Status = delegate.StatusCompleted
		if e.Usage != nil {
			res.Usage = &delegate.Usage{InputTokens: e.Usage.InputTokens, OutputTokens: e.Usage.OutputTokens}
		}
		res.Reply, res.Truncated = output.Bound(strings.TrimSpace(s.reply), s.l.r.opts.OutputLimit)
		return true
	case *protocol.TurnFailed:
		res.Status = delegate.StatusFailed
		res.Error, _ = output.Bound("the nested SCV's turn failed ("+string(e.Code)+"): "+e.Message, 2<<10)
		// Read only what the nested SCV reported as its error, never the
		// reply, for the fallback decision.
		res.Kind = output.Classify(e.Message)
		res.Reply, res.Truncated = output.Bound(s.reply, s.l.r.opts.OutputLimit)
		return true
	case *protocol.TurnCancelled:
		res.Status = delegate.StatusCancelled
		res.Error = "the nested SCV cancelled its turn"
		return true
	case *protocol.Error:
		res.Status = delegate.StatusFailed
		res.Error, _ = output.Bound("the nested SCV refused the turn ("+string(e.Code)+"): "+e.Message, 2<<10)
		return true
	}
	return false
}

// toolLine is the progress line of a nested tool call that starts: its
// name and its main argument (bash's command, a path, a query…), never
// its output.
func toolLine(name string, args json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(args, &m) == nil {
		for _, k := range []string{"command", "path", "pattern", "query", "url", "prompt"} {
			if v, ok := m[k].(string); ok && v != "" {
				return name + " " + v
			}
		}
	}
	return name
}

// relay takes a nested approval request through the calling session's
// approval gate, with the summary prefixed [scv-1 depth N] and the nested
// tool's name, and sends the answer back. With no gate (a nil Approve)
// the request is denied. It runs on a goroutine of its own so the turn
// goes on reading; ctx, which ends with the turn, bounds it.
func (l *live) relay(ctx context.Context, call delegate.Call, ar *protocol.ApprovalRequested) {
	summary := fmt.Sprintf("[%s depth %d] %s: %s", l.conv, l.depth, ar.Name, ar.Summary)
	ok := call.Approve != nil && call.Approve(ctx, ar.Risk, summary)
	_ = l.conn.Send(&protocol.ApprovalResolve{RequestID: "resolve-" + ar.ApprovalID, SessionID: l.session, ApprovalID: ar.ApprovalID, Approved: ok})
}

// runTurn runs call as the next turn of the nested session.
func (l *live) runTurn(ctx context.Context, call delegate.Call, progress func(string), res delegate.Result) delegate.Result {
	relayCtx, withdraw := context.WithCancel(ctx)
	t := &turn{req: "turn-" + strconv.Itoa(call.Turn) + "-" + call.Handle, events: make(chan protocol.Event, 64), quit: make(chan struct{}), relayCtx: relayCtx}
	l.mu.Lock()
	if l.turn != nil {
		l.mu.Unlock()
		withdraw()
		return fail(res, delegate.ErrorNone, fmt.Sprintf("session busy: conversation %s is running a turn; wait for it to end", call.Conversation))
	}
	l.turn = t
	if l.idle != nil {
		l.idle.Stop()
	}
	l.mu.Unlock()
	l.updateRecord(func(rec *records.Record) {
		rec.Turn, rec.IdleSinceUnix, rec.Background = call.Turn, 0, call.Background
	})
	defer func() {
		// Questions still open with the user are withdrawn.
		withdraw()
		t.relays.Wait()
		l.mu.Lock()
		l.turn = nil
		l.mu.Unlock()
		close(t.quit)
		l.updateRecord(func(rec *records.Record) {
			rec.IdleSinceUnix, rec.Background, rec.BackgroundJobs = time.Now().Unix(), false, len(l.jobs)
		})
		l.armIdle()
	}()
	s := &stream{l: l, turn: t, call: call, progress: progress, args: map[string]string{}}
	if err := l.conn.Send(&protocol.TurnStart{RequestID: t.req, SessionID: l.session, Prompt: call.Prompt}); err != nil {
		return l.exitedMidTurn(res)
	}
	timeout := make(<-chan time.Time)
	if call.Timeout > 0 {
		timer := time.NewTimer(call.Timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	for {
		select {
		case ev := <-t.events:
			if s.handle(ev, &res) {
				return l.killedTurn(res)
			}
		case <-l.done:
			if s.drain(t, &res) {
				return l.killedTurn(res)
			}
			return l.exitedMidTurn(res)
		case <-ctx.Done():
			return l.cancel(t, s, res, delegate.StatusCancelled, call)
		case <-timeout:
			return l.cancel(t, s, res, delegate.StatusTimeout, call)
		}
	}
}

// killedTurn is res, or for a turn the nested SCV cancelled itself
// because `scv agents kill` stopped it (it cancels its turn on SIGTERM),
// the cancelled result that says so; that conversation has ended.
func (l *live) killedTurn(res delegate.Result) delegate.Result {
	if res.Status != delegate.StatusCancelled || !l.stoppedByKill() {
		return res
	}
	res.CLISession = ""
	res.Error = fmt.Sprintf("the nested SCV was stopped with `scv agents kill %s`", l.handle)
	return res
}

// drain handles the events the reader handed over before it ended.
func (s *stream) drain(t *turn, res *delegate.Result) bool {
	for {
		select {
		case ev := <-t.events:
			if s.handle(ev, res) {
				return true
			}
		default:
			return false
		}
	}
}

// exitedMidTurn is the result of a turn whose nested SCV exited: the call
// fails with its stderr tail (cancelled when `scv agents kill` stopped
// it), and the conversation ends.
func (l *live) exitedMidTurn(res delegate.Result) delegate.Result {
	<-l.reaped
	l.mu.Lock()
	killed := l.killed
	l.mu.Unlock()
	res.CLISession = ""
	res.StderrTail = l.stderr.String()
	if killed {
		res.Status = delegate.StatusCancelled
		res.Error = fmt.Sprintf("the nested SCV was stopped with `scv agents kill %s`", l.handle)
		return res
	}
	res = fail(res, delegate.ErrorUnavailable, fmt.Sprintf("the nested SCV %s during the turn, so conversation %s has ended", exitStatus(l.proc), l.conv))
	if res.StderrTail != "" {
		res.Error += "; its stderr ends with: " + lastLine(res.StderrTail)
	}
	return res
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return oneline.Bound(s, 512)
}

// cancel sends turn.cancel and waits StopGrace for the turn to settle,
// which leaves the conversation usable (a timed-out turn is resumable);
// otherwise the nested SCV is shut down and the conversation ends.
func (l *live) cancel(t *turn, s *stream, res delegate.Result, status delegate.Status, call delegate.Call) delegate.Result {
	grace := time.NewTimer(StopGrace)
	defer grace.Stop()
	sent := false
	for {
		l.mu.Lock()
		id := t.id
		l.mu.Unlock()
		if id != "" && !sent {
			sent = true
			_ = l.conn.Send(&protocol.TurnCancel{RequestID: t.req + "-cancel", SessionID: l.session, TurnID: id})
		}
		select {
		case ev := <-t.events:
			if s.handle(ev, &res) {
				return settled(res, status, call)
			}
		case <-l.done:
			if s.drain(t, &res) {
				return settled(res, status, call)
			}
			return l.exitedMidTurn(res)
		case <-grace.C:
			l.stop()
			res.Status, res.CLISession = status, ""
			res.Error = fmt.Sprintf("the nested SCV's turn did not settle within %s of turn.cancel, so it was shut down and conversation %s has ended", StopGrace, l.conv)
			return res
		}
	}
}

// settled is the result of a cancelled or timed-out turn that ended in
// time: the conversation goes on.
func settled(res delegate.Result, status delegate.Status, call delegate.Call) delegate.Result {
	res.Status, res.Kind = status, delegate.ErrorNone
	if status == delegate.StatusTimeout {
		res.Error = fmt.Sprintf("the nested SCV did not finish within %s, so its turn was cancelled; the conversation keeps what it did, so call it again with session %s to go on", call.Timeout, call.Conversation)
	} else {
		res.Error = "the call was cancelled and the nested SCV's turn stopped"
	}
	return res
}
