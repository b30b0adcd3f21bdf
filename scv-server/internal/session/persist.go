package session

// Persistence: each session writes its log (package sessionstore) as it
// goes, and Manager.Start with StartOptions.Resume continues a stored one.
// A log that cannot be written never stops a turn: the failure is logged as
// a warning and the session goes on (the log stops recording at the first
// failed write, keeping a valid prefix).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/loop"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/sessionstore"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/statefile"
)

// Bounds of session.list.
const (
	DefaultListLimit = 20
	MaxListLimit     = 200
)

// recorder is a session's log and what resuming restored.
type recorder struct {
	log     *sessionstore.Log
	resumed bool

	mu     sync.Mutex
	replay []protocol.ReplayItem // guarded by mu; until the dialect takes it
}

// turnRecord is what the log has of one turn.
type turnRecord struct {
	mu      sync.Mutex
	started bool               // guarded by mu; the turn record is written
	logged  []provider.Message // guarded by mu; the turn's messages recorded
	// results holds the success of each call by id, from its
	// tool.completed, until its result message is recorded.
	results map[string]bool // guarded by mu
}

func newStore(stateDir string) *sessionstore.Store {
	if stateDir == "" {
		return nil
	}
	return sessionstore.New(stateDir)
}

// persist gives a new session its log: a fresh one, or, with resume, the
// stored session resume, whose id, history and usage the session takes.
// The session must not be registered yet; on success a resumed id stays
// reserved in m.opening until Start registers it.
func (m *Manager) persist(s *Session, resume string) error {
	if resume == "" {
		if m.store == nil {
			return nil
		}
		log, err := m.store.Create(sessionstore.Meta{ID: s.id, Cwd: s.cwd, Model: s.model, Created: time.Now()})
		if err != nil {
			m.log.Warn("The session cannot be stored, so it will not be resumable; it runs anyway", "session", s.id, "err", err)
			return nil
		}
		s.rec = &recorder{log: log}
		m.mu.Lock()
		m.opening[s.id] = true
		m.mu.Unlock()
		return nil
	}
	if !sessionstore.ValidID(resume) {
		return errorf(protocol.ErrInvalidRequest, "resume %q is not a session id: send the session_id of a stored session, as session.list gives it", resume)
	}
	if m.store == nil {
		return errorf(protocol.ErrSessionNotFound, "this server stores no sessions (it has no state directory), so session %s cannot be resumed", resume)
	}
	m.mu.Lock()
	if _, open := m.sessions[resume]; open || m.opening[resume] {
		m.mu.Unlock()
		return errorf(protocol.ErrInvalidRequest, "session %s is already open in this server; send its turns to it, or resume it from another server after this one ends", resume)
	}
	m.opening[resume] = true
	m.mu.Unlock()
	release := func() {
		m.mu.Lock()
		delete(m.opening, resume)
		m.mu.Unlock()
	}

	log, stored, err := m.store.Open(resume)
	var corrupt *sessionstore.CorruptError
	var notRegular *statefile.NotRegularError
	switch {
	case err == nil:
	case errors.Is(err, sessionstore.ErrNotFound):
		release()
		return errorf(protocol.ErrSessionNotFound, "no stored session has id %s; session.list lists the stored sessions of a workspace", resume)
	case errors.Is(err, sessionstore.ErrBusy):
		release()
		return errorf(protocol.ErrInvalidRequest, "session %s is open in another scv-server process; end that one first", resume)
	case errors.As(err, &corrupt):
		release()
		return errorf(protocol.ErrInvalidRequest, "session %s cannot be resumed: its log is corrupt (%v); it was left as it is", resume, err)
	case errors.As(err, &notRegular):
		release()
		return errorf(protocol.ErrInvalidRequest, "session %s cannot be resumed: %v; it was left as it is", resume, err)
	default:
		release()
		return errorf(protocol.ErrInternal, "session %s cannot be resumed: %v", resume, err)
	}
	if stored.Cwd != s.cwd {
		_ = log.Close()
		release()
		return errorf(protocol.ErrInvalidRequest, "session %s belongs to the workspace %s, not %s; resume it with that cwd", resume, stored.Cwd, s.cwd)
	}
	if err := log.Resume(s.model); err != nil {
		m.log.Warn("The resumed session's log cannot be written; the session goes on, but what follows will not be stored", "session", resume, "err", err)
	}
	if stored.Interrupted != "" {
		m.log.Info("Resumed a session whose last turn was interrupted", "session", resume, "turn", stored.Interrupted)
	}
	s.id = resume
	s.history = stored.History
	s.usage = stored.Usage
	s.rules = withAllow(stored.Rules, s.allow, stored.Revoked)
	kept, bytes := 0, 0
	for _, q := range stored.Queue {
		// Earlier servers had no bound: what a bounded queue cannot hold
		// is dropped (and the log says so) rather than make the session
		// unusable; a queue.snapshot must fit in a frame.
		if kept == protocol.MaxQueueEntries || bytes+len(q.Prompt) > protocol.MaxQueueBytes {
			m.log.Warn("A restored queued prompt is dropped: the queue is over its bounds", "session", resume,
				"queue_id", q.QueueID, "max_entries", protocol.MaxQueueEntries, "max_bytes", protocol.MaxQueueBytes)
			if err := log.QueueRemoved(q.QueueID); err != nil && !errors.Is(err, sessionstore.ErrStopped) {
				m.log.Warn("Could not record a dropped queued prompt", "session", resume, "err", err)
			}
			continue
		}
		s.queue = append(s.queue, &queued{requestID: q.Request, entry: protocol.QueueEntry{
			QueueID: q.QueueID, Revision: q.Revision, Prompt: q.Prompt, Submitter: q.Submitter, Position: kept}})
		kept++
		bytes += len(q.Prompt)
	}
	if len(s.queue) > 0 {
		// Not run on their own: the user may not want them any more.
		s.paused, s.restoredPaused, s.holdRestored = true, true, true
	}
	s.rec = &recorder{log: log, resumed: true, replay: stored.Replay}
	return nil
}

// List returns the stored sessions of the workspace cwd, newest first: at
// most limit (0: DefaultListLimit; more than MaxListLimit is read as
// MaxListLimit).
func (m *Manager) List(cwd string, limit int) ([]protocol.SessionSummary, error) {
	canonical, err := canonicalWorkspace(cwd)
	if err != nil {
		return nil, err
	}
	switch {
	case limit < 0:
		return nil, errorf(protocol.ErrInvalidRequest, "limit must be 0 or more (0 means %d)", DefaultListLimit)
	case limit == 0:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	if m.store == nil {
		return []protocol.SessionSummary{}, nil
	}
	out, err := m.store.List(canonical, limit)
	if err != nil {
		return nil, fmt.Errorf("listing the sessions of %s: %w", canonical, err)
	}
	return out, nil
}

// Resumed reports whether the session continues a stored one.
func (s *Session) Resumed() bool { return s.rec != nil && s.rec.resumed }

// TakeReplay returns the transcript of a resumed session, once; later
// calls (and sessions that were not resumed) get nil.
func (s *Session) TakeReplay() []protocol.ReplayItem {
	if s.rec == nil {
		return nil
	}
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	items := s.rec.replay
	s.rec.replay = nil
	return items
}

// record runs one write of the log, warning when it fails. After the first
// failure the log stops recording, and later writes are silent.
func (s *Session) record(what string, write func(*sessionstore.Log) error) {
	if err := write(s.rec.log); err != nil && !errors.Is(err, sessionstore.ErrStopped) {
		s.mgr.log.Warn("Could not write the session log; the session goes on, but it may not resume past this point",
			"session", s.id, "writing", what, "err", err)
	}
}

// recordTurn prepares t to be recorded: the loop reports each message it
// adds through cfg.OnMessages.
func (s *Session) recordTurn(t *turn, cfg *loop.Config) {
	if s.rec == nil {
		return
	}
	t.rec = &turnRecord{results: map[string]bool{}}
	cfg.OnMessages = func(msgs []provider.Message) { s.recordMessages(t, msgs) }
}

// noteEvent remembers the success of a finished call for its result.
func (s *Session) noteEvent(t *turn, ev protocol.TurnEvent) {
	tc, ok := ev.(*protocol.ToolCompleted)
	if !ok || t.rec == nil {
		return
	}
	t.rec.mu.Lock()
	t.rec.results[tc.CallID] = tc.Success
	t.rec.mu.Unlock()
}

func (s *Session) recordMessages(t *turn, msgs []provider.Message) {
	tr := t.rec
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, m := range msgs {
		s.recordMessageLocked(t, m)
	}
}

// recordMessageLocked records one message of t; t.rec.mu is held.
func (s *Session) recordMessageLocked(t *turn, m provider.Message) {
	tr := t.rec
	s.startRecordLocked(t, m)
	failed := false
	if m.Role == provider.RoleTool {
		ok, seen := tr.results[m.ToolCallID]
		delete(tr.results, m.ToolCallID)
		failed = !seen || !ok
	}
	tr.logged = append(tr.logged, m)
	s.record("a message", func(l *sessionstore.Log) error { return l.Message(t.id, m, failed) })
}

// startRecordLocked writes the turn record before the turn's first
// message; first is that message (its prompt titles a new session).
func (s *Session) startRecordLocked(t *turn, first provider.Message) {
	if t.rec.started {
		return
	}
	t.rec.started = true
	prompt := ""
	if first.Role == provider.RoleUser {
		prompt = first.Content
	}
	s.record("a turn start", func(l *sessionstore.Log) error { return l.TurnStarted(t.id, t.requestID, t.origin, prompt) })
}

// recordEnd records the end of t, durably, before its terminal event.
// committed is the history the session keeps after the turn (nil: the
// history before it plus out.Messages); where it differs from what the log
// holds (the history before the turn plus the messages recorded during
// it), as after a compaction or a trim, the difference is recorded first.
func (s *Session) recordEnd(t *turn, out loop.Outcome, committed []provider.Message) {
	if s.rec == nil || t.rec == nil {
		return
	}
	tr := t.rec
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s.mu.Lock()
	base := s.history
	s.mu.Unlock()
	// Messages the loop did not report (none, while every message goes
	// through agent's add) are recorded now.
	if n := len(tr.logged); n < len(out.Messages) && (n == 0 || sameMessage(tr.logged[n-1], out.Messages[n-1])) {
		for _, m := range out.Messages[n:] {
			s.recordMessageLocked(t, m)
		}
	}
	if committed == nil {
		committed = append(append(make([]provider.Message, 0, len(base)+len(out.Messages)), base...), out.Messages...)
	}
	s.startRecordLocked(t, provider.Message{})
	if from, removed, msgs, ok := splice(base, tr.logged, committed); ok {
		s.record("a history change", func(l *sessionstore.Log) error { return l.Replaced(from, removed, msgs) })
	}
	end := sessionstore.End{Outcome: sessionstore.OutcomeCompleted, Steps: out.Steps, Usage: out.Usage}
	var failure *loop.Failure
	switch {
	case out.Err == nil:
	case errors.As(out.Err, &failure):
		end.Outcome, end.Code, end.Message = sessionstore.OutcomeFailed, string(failure.Code), failure.Message
	default:
		end.Outcome = sessionstore.OutcomeCancelled
	}
	s.record("a turn end", func(l *sessionstore.Log) error { return l.TurnEnded(t.id, end) })
}

// recordClear records session.clear.
func (s *Session) recordClear() {
	if s.rec == nil {
		return
	}
	s.record("a clear", func(l *sessionstore.Log) error { return l.Cleared() })
}

// closeLog closes the session's log; the manager calls it once no turn
// runs.
func (s *Session) closeLog() {
	if s.rec == nil {
		return
	}
	if err := s.rec.log.Close(); err != nil {
		s.mgr.log.Warn("Could not close the session log", "session", s.id, "err", err)
	}
}

// splice compares the recorded history, base followed by turn, with want.
// When they differ it returns the smallest replacement that turns one into
// the other: the removed messages at from are replaced by msgs.
func splice(base, turn, want []provider.Message) (from, removed int, msgs []provider.Message, differ bool) {
	n := len(base) + len(turn)
	at := func(i int) provider.Message {
		if i < len(base) {
			return base[i]
		}
		return turn[i-len(base)]
	}
	p := 0
	for p < n && p < len(want) && sameMessage(at(p), want[p]) {
		p++
	}
	if p == n && p == len(want) {
		return 0, 0, nil, false
	}
	q := 0
	for q < n-p && q < len(want)-p && sameMessage(at(n-1-q), want[len(want)-1-q]) {
		q++
	}
	return p, n - p - q, want[p : len(want)-q], true
}

func sameMessage(a, b provider.Message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.ToolCallID != b.ToolCallID || len(a.ToolCalls) != len(b.ToolCalls) ||
		!slices.EqualFunc(a.Reasoning, b.Reasoning, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) }) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i] != b.ToolCalls[i] {
			return false
		}
	}
	return true
}

// withAllow is a resumed session's rules: those it granted, then the
// configuration's it does not hold and did not revoke.
func withAllow(granted, allow []protocol.Rule, revoked []string) []protocol.Rule {
	out := slices.Clone(granted)
	for _, r := range allow {
		if !slices.Contains(revoked, r.Key) && !slices.ContainsFunc(out, func(g protocol.Rule) bool { return g.Key == r.Key }) {
			out = append(out, r)
		}
	}
	return out
}
