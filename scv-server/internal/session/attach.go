package session

// Several clients on one session (protocol v4, the daemon): attaching with
// a replay of recent events, the pending approvals every client can
// answer, approval.resolved, and the end of sessions nobody holds.
//
// A session started by a v4 client keeps a ring of its recent events; a
// client that attaches (or re-attaches after it was detached) with
// after_seq gets the events after that seq from the ring, in order, before
// the live ones, so every client sees the same events with the same seq.

import (
	"context"
	"slices"
	"time"

	"github.com/scv-cli/scv/shared/protocol"
)

// Bounds of a session's ring of recent events.
const (
	RingEvents = 1024
	RingBytes  = 4 << 20
)

// ring holds the recent events of a session, oldest first, bounded by
// count and by an estimate of their encoded size. Dropped events are
// skipped by head and copied away only once head has passed RingEvents, so
// adding is amortized O(1). Guarded by the emit lock.
type ring struct {
	evs   []protocol.Sequenced // evs[head:] are held
	sizes []int
	head  int
	bytes int
}

func (r *ring) add(ev protocol.Sequenced) {
	n := eventSize(ev)
	r.evs = append(r.evs, ev)
	r.sizes = append(r.sizes, n)
	r.bytes += n
	for len(r.evs)-r.head > RingEvents || (r.bytes > RingBytes && len(r.evs)-r.head > 1) {
		r.bytes -= r.sizes[r.head]
		r.evs[r.head] = nil // let the event go
		r.head++
	}
	if r.head >= RingEvents {
		m := copy(r.evs, r.evs[r.head:])
		copy(r.sizes, r.sizes[r.head:])
		clear(r.evs[m:])
		r.evs, r.sizes, r.head = r.evs[:m], r.sizes[:m], 0
	}
}

// held returns the events the ring holds, oldest first.
func (r *ring) held() []protocol.Sequenced { return r.evs[r.head:] }

// after returns the events with a seq after seq, and whether some of the
// events after seq up to last are no longer in the ring.
func (r *ring) after(seq, last uint64) ([]protocol.Sequenced, bool) {
	if seq >= last {
		return nil, false
	}
	evs := r.held()
	i, _ := slices.BinarySearchFunc(evs, seq+1, func(ev protocol.Sequenced, want uint64) int {
		switch {
		case ev.SeqNum() < want:
			return -1
		case ev.SeqNum() > want:
			return 1
		}
		return 0
	})
	out := slices.Clone(evs[i:])
	truncated := len(out) == 0 || out[0].SeqNum() != seq+1
	return out, truncated
}

// eventSize estimates an event's encoded size: the envelope plus its
// variable text.
func eventSize(ev protocol.Sequenced) int {
	const envelope = 160
	switch e := ev.(type) {
	case *protocol.AssistantDelta:
		return envelope + len(e.Content)
	case *protocol.AssistantCompleted:
		return envelope + len(e.Content)
	case *protocol.ToolProposed:
		return envelope + len(e.Name) + len(e.Arguments)
	case *protocol.ToolCompleted:
		return envelope + len(e.Output)
	case *protocol.ToolProgress:
		return envelope + len(e.Line)
	case *protocol.ApprovalRequested:
		return envelope + len(e.Summary) + len(e.Cwd) + 128
	case *protocol.TurnFailed:
		return envelope + len(e.Message)
	case *protocol.TurnRetrying:
		return envelope + len(e.Message)
	case *protocol.QueueSnapshot:
		n := envelope
		for _, q := range e.Entries {
			n += 96 + len(q.Prompt)
		}
		return n
	case *protocol.QueueEnqueued:
		return envelope + len(e.Entry.Prompt)
	case *protocol.QueueUpdated:
		return envelope + len(e.Entry.Prompt)
	}
	return envelope
}

// remember keeps ev in the ring and follows the pending approvals. The
// emit lock must be held.
func (s *Session) rememberLocked(ev protocol.Sequenced) {
	if s.ring == nil {
		return
	}
	s.ring.add(ev)
	switch e := ev.(type) {
	case *protocol.ApprovalRequested:
		s.pendingApprovals = append(s.pendingApprovals, e)
	case *protocol.ApprovalResolved:
		s.pendingApprovals = slices.DeleteFunc(s.pendingApprovals, func(p *protocol.ApprovalRequested) bool { return p.ApprovalID == e.ApprovalID })
	default:
		if protocol.IsTerminal(ev) {
			s.pendingApprovals = nil
		}
	}
}

// AttachState is a session's state for session.attached, and the events
// to replay after it.
type AttachState struct {
	LastSeq          uint64
	TurnID           string
	Queue            []protocol.QueueEntry
	Paused           bool
	PendingApprovals []protocol.ApprovalRequested
	Replay           []protocol.Sequenced
	ReplayTruncated  bool
	// Clients counts the subscribers, the new one included.
	Clients int
}

// Attach subscribes sub, calling send with the session's state and the
// events after afterSeq (none when afterSeq is nil) while it holds the
// emit lock: whatever send queues to sub comes before every live event.
// The returned function detaches sub.
func (s *Session) Attach(ctx context.Context, sub Subscriber, afterSeq *uint64, send func(AttachState) error) (unsubscribe func(), err error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.unlock()
	if s.ended {
		return nil, errorf(protocol.ErrSessionNotFound, "session %q has ended; resume it with session.start and resume", s.id)
	}
	st := AttachState{LastSeq: s.seq, Clients: len(s.subs) + 1}
	s.mu.Lock()
	if s.active != nil {
		st.TurnID = s.active.id
	}
	st.Queue = s.entriesLocked()
	st.Paused = s.paused
	s.mu.Unlock()
	for _, p := range s.pendingApprovals {
		st.PendingApprovals = append(st.PendingApprovals, *p)
	}
	switch {
	case afterSeq != nil && *afterSeq > s.seq:
		// The session numbers its events anew after a daemon restart
		// (the session was resumed): the client's view is of the
		// session before; it rebuilds from this state.
		st.ReplayTruncated = true
	case afterSeq != nil:
		if s.ring != nil {
			st.Replay, st.ReplayTruncated = s.ring.after(*afterSeq, s.seq)
		} else {
			st.ReplayTruncated = *afterSeq < s.seq
		}
	}
	if err := send(st); err != nil {
		return nil, err
	}
	s.subs = append(s.subs, sub)
	s.nsubs.Add(1)
	s.touch()
	return s.unsubscriber(sub), nil
}

// unsubscriber returns the function that detaches sub; it waits for an
// emission in progress.
func (s *Session) unsubscriber(sub Subscriber) func() {
	return func() {
		s.emitLock <- struct{}{}
		for i, x := range s.subs {
			if x == sub {
				s.subs = append(s.subs[:i:i], s.subs[i+1:]...)
				s.nsubs.Add(-1)
				break
			}
		}
		s.touch()
		s.unlock()
	}
}

// Clients returns how many subscribers the session has.
func (s *Session) Clients() int { return int(s.nsubs.Load()) }

// touch notes that the session was used now, for the idle end.
func (s *Session) touch() { s.lastUsed.Store(time.Now().UnixNano()) }

// ResolveApprovalBy answers an approval request like ResolveApproval and,
// in a v4 session, tells every client with approval.resolved, before the
// call's next event: the first answer wins, and a later one gets
// approval_not_found. by names the answering client.
func (s *Session) ResolveApprovalBy(ctx context.Context, approvalID string, approved bool, scope, by string) error {
	return s.resolveBy(ctx, approvalID, approved, scope, by, func() error { return s.ResolveApproval(approvalID, approved, scope) })
}

// DenyWithFeedbackBy denies an approval request with the user's reason,
// which the model reads in the denied call's result, and tells every
// client as ResolveApprovalBy does (v4 sessions).
func (s *Session) DenyWithFeedbackBy(ctx context.Context, approvalID, feedback, by string) error {
	return s.resolveBy(ctx, approvalID, false, protocol.ScopeOnce, by, func() error { return s.denyWithFeedback(approvalID, feedback) })
}

// resolveBy answers an approval request with resolve and, in a v4
// session, emits approval.resolved to every client.
func (s *Session) resolveBy(ctx context.Context, approvalID string, approved bool, scope, by string, resolve func() error) error {
	if s.version < protocol.Version4 {
		return resolve()
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	var req *protocol.ApprovalRequested
	for _, p := range s.pendingApprovals {
		if p.ApprovalID == approvalID {
			req = p
		}
	}
	if err := resolve(); err != nil {
		return err
	}
	if scope == "" {
		scope = protocol.ScopeOnce
	}
	ev := &protocol.ApprovalResolved{ApprovalID: approvalID, Approved: approved, Scope: scope, By: by}
	ev.SessionID = s.id
	if req != nil {
		ev.RequestID, ev.TurnID = req.RequestID, req.TurnID
	}
	return s.emitLocked(ctx, ev)
}

// LiveSession describes the session for session.list and daemon.status.
func (s *Session) LiveSession() protocol.LiveSession {
	ls := protocol.LiveSession{SessionID: s.id, Cwd: s.cwd, Model: s.model, Clients: s.Clients(), PendingApprovals: s.approvals.Len()}
	s.mu.Lock()
	if s.active != nil {
		ls.TurnID = s.active.id
	}
	ls.Queued = len(s.queue)
	ls.Paused = s.paused
	s.mu.Unlock()
	return ls
}

// Live lists the open sessions, in workspace cwd when it is not empty
// (canonicalized like session.start's), ordered by id.
func (m *Manager) Live(cwd string) ([]protocol.LiveSession, error) {
	if cwd != "" {
		c, err := canonicalWorkspace(cwd)
		if err != nil {
			return nil, err
		}
		cwd = c
	}
	m.mu.Lock()
	sessions := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		if cwd == "" || s.cwd == cwd {
			sessions = append(sessions, s)
		}
	}
	m.mu.Unlock()
	out := make([]protocol.LiveSession, 0, len(sessions))
	for _, s := range sessions {
		out = append(out, s.LiveSession())
	}
	slices.SortFunc(out, func(a, b protocol.LiveSession) int {
		switch {
		case a.SessionID < b.SessionID:
			return -1
		case a.SessionID > b.SessionID:
			return 1
		}
		return 0
	})
	return out, nil
}

// idle reports whether the session has been unused for at least d: no
// subscriber, no turn running or queued, no server turn waiting, and no
// background work its extension counts.
func (s *Session) idle(now time.Time, d time.Duration) bool {
	if s.nsubs.Load() > 0 || now.Sub(time.Unix(0, s.lastUsed.Load())) < d {
		return false
	}
	if s.busy != nil && s.busy() {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active == nil && len(s.queue) == 0 && len(s.serverTurns) == 0
}

// EndIdle ends the sessions idle for at least d (see idle) and returns
// their ids. An ended session is closed like at shutdown: its extension
// stops, its log is closed, and it can be resumed from its stored log.
func (m *Manager) EndIdle(d time.Duration) []string {
	now := time.Now()
	m.mu.Lock()
	var idle []*Session
	for _, s := range m.sessions {
		if s.idle(now, d) {
			idle = append(idle, s)
		}
	}
	m.mu.Unlock()
	var ended []string
	for _, s := range idle {
		if !s.tryLock() {
			continue // an emission runs: not idle after all
		}
		// Checked again under the emit lock, which Attach takes: no
		// client can attach in between.
		if !s.idle(now, d) || s.ended {
			s.unlock()
			continue
		}
		s.ended = true
		s.unlock()
		m.mu.Lock()
		delete(m.sessions, s.id)
		m.mu.Unlock()
		if s.closeExt != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			s.closeExt(ctx)
			cancel()
		}
		_ = s.root.Close()
		s.closeLog()
		m.log.Info("Ended an idle session", "session", s.id, "idle_for", d)
		ended = append(ended, s.id)
	}
	return ended
}
