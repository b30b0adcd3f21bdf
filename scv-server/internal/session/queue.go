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
	return s.queueOp(ctx, func() (protocol.Sequenced, logWrite, error) {
		i, err := s.findLocked(queueID, revision)
		if err != nil {
			return nil, nil, err
		}
		q := s.queue[i]
		if err := s.queueRoomLocked(0, len(prompt)-len(q.entry.Prompt)); err != nil {
			return nil, nil, err
		}
		q.entry.Prompt = prompt
		q.entry.Revision++
		e := q.entry
		return &protocol.QueueUpdated{SessionHeader: s.header(requestID), Entry: e},
			func(l *sessionstore.Log) error { return l.QueueUpdated(e.QueueID, e.Revision, e.Prompt) }, nil
	})
}

// MoveQueued moves a queued prompt before beforeID, or to the end when
// beforeID is empty.
func (s *Session) MoveQueued(ctx context.Context, requestID, queueID string, revision int64, beforeID string) error {
	return s.queueOp(ctx, func() (protocol.Sequenced, logWrite, error) {
		i, err := s.findLocked(queueID, revision)
		if err != nil {
			return nil, nil, err
		}
		if beforeID == queueID {
			return nil, nil, errorf(protocol.ErrInvalidRequest, "before_queue_id names the entry being moved; name another entry, or omit it to move to the end")
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
				return nil, nil, errorf(protocol.ErrQueueNotFound, "before_queue_id %q is not queued", beforeID)
			}
		}
		s.queue = append(rest[:at:at], append([]*queued{q}, rest[at:]...)...)
		q.entry.Revision++
		s.renumberLocked()
		e := q.entry
		return &protocol.QueueMoved{SessionHeader: s.header(requestID), Entry: e},
			func(l *sessionstore.Log) error { return l.QueueMoved(e.QueueID, e.Revision, beforeID) }, nil
	})
}

// RemoveQueued removes a queued prompt.
func (s *Session) RemoveQueued(ctx context.Context, requestID, queueID string, revision int64) error {
	return s.queueOp(ctx, func() (protocol.Sequenced, logWrite, error) {
		i, err := s.findLocked(queueID, revision)
		if err != nil {
			return nil, nil, err
		}
		q := s.queue[i]
		s.queue = append(s.queue[:i:i], s.queue[i+1:]...)
		s.renumberLocked()
		return &protocol.QueueRemoved{SessionHeader: s.header(requestID), Entry: q.entry},
			func(l *sessionstore.Log) error { return l.QueueRemoved(queueID) }, nil
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

// logWrite is one write of the session's log.
type logWrite func(*sessionstore.Log) error

// queueOp runs op under both locks, records the change it returns and
// emits its event.
func (s *Session) queueOp(ctx context.Context, op func() (protocol.Sequenced, logWrite, error)) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	ev, write, err := op()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.recordQueue(write)
	return s.emitLocked(ctx, ev)
}

// recordQueue records one change of the queue in the session's log, so
// that a resumed session gets its queued prompts back. The emit lock must
// be held (it orders the records as the changes), s.mu not.
func (s *Session) recordQueue(write logWrite) {
	if s.rec == nil {
		return
	}
	s.record("the queue", write)
}

// queueBytesLocked returns the bytes of the queued prompts. s.mu must be
// held.
func (s *Session) queueBytesLocked() int {
	n := 0
	for _, q := range s.queue {
		n += len(q.entry.Prompt)
	}
	return n
}

// queueRoomLocked refuses with queue_full a change that adds entries to the
// queue and grows its prompts by bytes past MaxQueueEntries or
// MaxQueueBytes. s.mu must be held.
func (s *Session) queueRoomLocked(entries, bytes int) error {
	if entries > 0 && len(s.queue)+entries > protocol.MaxQueueEntries {
		return errorf(protocol.ErrQueueFull, "the queue of this session is full: it holds %d prompts, its limit; wait for a queued prompt to run, or remove one with queue.remove",
			len(s.queue))
	}
	if total := s.queueBytesLocked() + bytes; bytes > 0 && total > protocol.MaxQueueBytes {
		return errorf(protocol.ErrQueueFull, "the queued prompts would come to %d bytes, over the queue's limit of %d bytes; wait for a queued prompt to run, remove one with queue.remove, or shorten this prompt",
			total, protocol.MaxQueueBytes)
	}
	return nil
}

// queuedRecord is the log's form of q.
func queuedRecord(q *queued) sessionstore.Queued {
	return sessionstore.Queued{QueueID: q.entry.QueueID, Revision: q.entry.Revision, Prompt: q.entry.Prompt,
		Submitter: q.entry.Submitter, Request: q.requestID}
}
