package session

import (
	"context"
	"strconv"

	"github.com/scv-cli/scv/scv-server/internal/sessionstore"
	"github.com/scv-cli/scv/shared/protocol"
)

// entriesLocked returns the queue in order. s.mu must be held.
func (s *Session) entriesLocked() []protocol.QueueEntry {
	out := make([]protocol.QueueEntry, len(s.queue))
	for i, q := range s.queue {
		out[i] = q.entry
	}
	return out
}

// renumberLocked sets every entry's position. s.mu must be held.
func (s *Session) renumberLocked() {
	for i, q := range s.queue {
		q.entry.Position = i
	}
}

// findLocked returns the index of queueID with the given revision. s.mu
// must be held.
func (s *Session) findLocked(queueID string, revision int64) (int, error) {
	for i, q := range s.queue {
		if q.entry.QueueID != queueID {
			continue
		}
		if q.entry.Revision != revision {
			e := q.entry
			return -1, &Error{Code: protocol.ErrQueueConflict, Entry: &e,
				Message: "the queue entry has changed since revision " + strconv.FormatInt(revision, 10) + "; its current revision is " + strconv.FormatInt(e.Revision, 10) + ", shown in entry"}
		}
		return i, nil
	}
	return -1, errorf(protocol.ErrQueueNotFound, "queue entry %q is not queued (it may have started or been removed)", queueID)
}

// UpdateQueued replaces a queued prompt.
func (s *Session) UpdateQueued(ctx context.Context, requestID, queueID string, revision int64, prompt string) error {
	if err := CheckPrompt(prompt); err != nil {
		return err
	}
	return s.queueOp(ctx, func() (protocol.Sequenced, error) {
		i, err := s.findLocked(queueID, revision)
		if err != nil {
			return nil, err
		}
		q := s.queue[i]
		q.entry.Prompt = prompt
		q.entry.Revision++
		return &protocol.QueueUpdated{SessionHeader: s.header(requestID), Entry: q.entry}, nil
	})
}

// MoveQueued moves a queued prompt before beforeID, or to the end when
// beforeID is empty.
func (s *Session) MoveQueued(ctx context.Context, requestID, queueID string, revision int64, beforeID string) error {
	return s.queueOp(ctx, func() (protocol.Sequenced, error) {
		i, err := s.findLocked(queueID, revision)
		if err != nil {
			return nil, err
		}
		if beforeID == queueID {
			return nil, errorf(protocol.ErrInvalidRequest, "before_queue_id names the entry being moved; name another entry, or omit it to move to the end")
		}
		q := s.queue[i]
		rest := append(append([]*queued(nil), s.queue[:i]...), s.queue[i+1:]...)
		at := len(rest)
		if beforeID != "" {
			at = -1
			for j, x := range rest {
				if x.entry.QueueID == beforeID {
					at = j
					break
				}
			}
			if at < 0 {
				return nil, errorf(protocol.ErrQueueNotFound, "before_queue_id %q is not queued", beforeID)
			}
		}
		s.queue = append(rest[:at:at], append([]*queued{q}, rest[at:]...)...)
		q.entry.Revision++
		s.renumberLocked()
		return &protocol.QueueMoved{SessionHeader: s.header(requestID), Entry: q.entry}, nil
	})
}

// RemoveQueued removes a queued prompt.
func (s *Session) RemoveQueued(ctx context.Context, requestID, queueID string, revision int64) error {
	return s.queueOp(ctx, func() (protocol.Sequenced, error) {
		i, err := s.findLocked(queueID, revision)
		if err != nil {
			return nil, err
		}
		q := s.queue[i]
		s.queue = append(s.queue[:i:i], s.queue[i+1:]...)
		s.renumberLocked()
		return &protocol.QueueRemoved{SessionHeader: s.header(requestID), Entry: q.entry}, nil
	})
}

// Pause stops (or resumes) automatic dequeue and emits session.paused.
// Resuming an idle session starts its next queued prompt.
func (s *Session) Pause(ctx context.Context, requestID string, paused bool) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	s.paused = paused
	s.holdRestored = false
	s.mu.Unlock()
	if err := s.emitLocked(ctx, &protocol.SessionPaused{SessionHeader: s.header(requestID), Paused: paused}); err != nil {
		return err
	}
	if !paused {
		s.dequeueLocked(s.mgr.ctx)
	}
	return nil
}

// Queue returns the queued entries in order.
func (s *Session) Queue() []protocol.QueueEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entriesLocked()
}

func (s *Session) header(requestID string) protocol.SessionHeader {
	return protocol.SessionHeader{RequestID: requestID, SessionID: s.id}
}

// queueOp runs op under both locks and emits its event.
func (s *Session) queueOp(ctx context.Context, op func() (protocol.Sequenced, error)) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	ev, err := op()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.recordQueue()
	return s.emitLocked(ctx, ev)
}

// recordQueue records the whole queue in the session's log, so that a
// resumed session gets its queued prompts back. The emit lock must be
// held, s.mu not.
func (s *Session) recordQueue() {
	if s.rec == nil {
		return
	}
	s.mu.Lock()
	q := make([]sessionstore.Queued, len(s.queue))
	for i, e := range s.queue {
		q[i] = sessionstore.Queued{QueueID: e.entry.QueueID, Revision: e.entry.Revision, Prompt: e.entry.Prompt,
			Submitter: e.entry.Submitter, Request: e.requestID}
	}
	s.mu.Unlock()
	s.record("the queue", func(l *sessionstore.Log) error { return l.QueueChanged(q) })
}
