package session

import (
	"context"
	"strings"
	"time"

	"github.com/scv-cli/scv/shared/protocol"
)

// Slow subscribers. A turn's events go to every subscriber through its
// bounded queue, and a subscriber that does not keep up makes emission
// wait. Waiting is right for the events that say what happened (a call
// proposed, a result, the end of the turn): they are few per model step
// and the turn may as well pause there. It is wrong while a reply streams:
// the provider's stream would stall with it, and the request's deadline
// would fail the turn of a client that was merely slow.
//
// So the streamed events, assistant.delta and tool.progress, never wait
// for room: when some subscriber has none, they are coalesced per turn
// (the text of consecutive deltas joined into one delta; of consecutive
// progress lines of a call, only the newest kept) and sent, as one event
// with one seq, as soon as there is room again: before the turn's next
// other event, at the latest, or when a retry finds room. Everything is
// still sent in order and no text is lost; the seq stays gapless because
// coalescing happens before numbering, so every subscriber sees the same
// events. Memory stays bounded: a response's text is bounded by the
// provider limits, and the turn's other events wait for room, so a turn
// whose subscribers lag pauses at its next event that is not streamed.

// coalesceRetry is how soon a turn with coalesced events looks for room
// again when nothing else makes it.
const coalesceRetry = 50 * time.Millisecond

// pendingEvent is a coalesced event waiting for room.
type pendingEvent struct {
	ev   protocol.TurnEvent
	text *strings.Builder // the joined text of a delta
}

// coalescing reports whether ev may be coalesced.
func coalescing(ev protocol.TurnEvent) bool {
	switch ev.(type) {
	case *protocol.AssistantDelta, *protocol.ToolProgress:
		return true
	}
	return false
}

// addPendingLocked merges ev into t's pending events. t.pendMu must be
// held.
func (t *turn) addPendingLocked(ev protocol.TurnEvent) {
	n := len(t.pending)
	switch e := ev.(type) {
	case *protocol.AssistantDelta:
		if n > 0 && t.pending[n-1].text != nil {
			t.pending[n-1].text.WriteString(e.Content)
			return
		}
		b := &strings.Builder{}
		b.WriteString(e.Content)
		t.pending = append(t.pending, pendingEvent{ev: e, text: b})
		return
	case *protocol.ToolProgress:
		if n > 0 {
			if last, ok := t.pending[n-1].ev.(*protocol.ToolProgress); ok && last.CallID == e.CallID {
				t.pending[n-1].ev = e // the newest line replaces the older one
				return
			}
		}
	}
	t.pending = append(t.pending, pendingEvent{ev: ev})
}

// size estimates the frame of a pending event, for the room check.
func (p pendingEvent) size() int {
	const envelope = 320
	switch e := p.ev.(type) {
	case *protocol.AssistantDelta:
		return envelope + p.text.Len()
	case *protocol.ToolProgress:
		return envelope + len(e.Line)
	}
	return envelope
}

// event returns the pending event ready to emit.
func (p pendingEvent) event() protocol.TurnEvent {
	if d, ok := p.ev.(*protocol.AssistantDelta); ok {
		d.Content = p.text.String()
	}
	return p.ev
}

// emitStreamed emits a streamed event of t without waiting for room: it
// joins t's pending events, which go out now if every subscriber has room
// and the emit lock is free, and otherwise later.
func (s *Session) emitStreamed(ctx context.Context, t *turn, ev protocol.TurnEvent) error {
	t.pendMu.Lock()
	t.addPendingLocked(ev)
	t.pendMu.Unlock()
	if !s.tryLock() {
		s.retryPending(t)
		return nil
	}
	defer s.unlock()
	return s.flushPendingLocked(ctx, t, false)
}

// emitTurnEvent emits an event of t that is not streamed: after t's
// pending events, waiting for room as long as ctx allows.
func (s *Session) emitTurnEvent(ctx context.Context, t *turn, ev protocol.Sequenced) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if err := s.flushPendingLocked(ctx, t, true); err != nil {
		return err
	}
	return s.emitLocked(ctx, ev)
}

// flushPendingLocked emits t's pending events in order: all of them,
// waiting for room, with wait; otherwise while every subscriber has room,
// leaving the rest for a retry. The emit lock must be held. An event whose
// emission fails is dropped (its turn is ending).
func (s *Session) flushPendingLocked(ctx context.Context, t *turn, wait bool) error {
	for {
		t.pendMu.Lock()
		if len(t.pending) == 0 {
			t.pendMu.Unlock()
			return nil
		}
		p := t.pending[0]
		if !wait && !s.subsHaveRoomLocked(p.size()) {
			t.pendMu.Unlock()
			s.retryPending(t)
			return nil
		}
		t.pending[0] = pendingEvent{}
		t.pending = t.pending[1:]
		if len(t.pending) == 0 {
			t.pending = nil
		}
		t.pendMu.Unlock()
		if err := s.emitLocked(ctx, p.event()); err != nil {
			return err
		}
	}
}

// subsHaveRoomLocked reports whether every subscriber would take a frame of about
// size bytes without waiting. The emit lock must be held.
func (s *Session) subsHaveRoomLocked(size int) bool {
	for _, sub := range s.subs {
		if !sub.Room(size) {
			return false
		}
	}
	return true
}

// retryPending arms t's retry, unless it is armed or t has ended: the
// pending events go out when room comes back even if the turn emits
// nothing more for a while (a model thinking, a quiet tool).
func (s *Session) retryPending(t *turn) {
	t.pendMu.Lock()
	defer t.pendMu.Unlock()
	if t.retryArmed || t.ended || len(t.pending) == 0 {
		return
	}
	t.retryArmed = true
	if t.retry == nil {
		t.retry = time.AfterFunc(coalesceRetry, func() { s.retryFlush(t) })
		return
	}
	t.retry.Reset(coalesceRetry)
}

func (s *Session) retryFlush(t *turn) {
	t.pendMu.Lock()
	t.retryArmed = false
	t.pendMu.Unlock()
	if !s.tryLock() {
		s.retryPending(t)
		return
	}
	defer s.unlock()
	_ = s.flushPendingLocked(t.ctx, t, false)
}

// endPendingLocked settles t's pending events as the turn ends: sent
// (waiting for room, within ctx) unless drop, when they are forgotten as
// a cancelled turn's waiting events are. No retry runs after it. The emit
// lock must be held.
func (s *Session) endPendingLocked(ctx context.Context, t *turn, drop bool) {
	if drop {
		s.dropPending(t)
		return
	}
	t.pendMu.Lock()
	t.ended = true
	if t.retry != nil {
		t.retry.Stop()
		t.retryArmed = false
	}
	t.pendMu.Unlock()
	if err := s.flushPendingLocked(ctx, t, true); err != nil {
		s.mgr.log.Warn("Could not deliver a turn's last streamed text", "session", s.id, "turn", t.id, "err", err)
	}
}

// dropPending forgets t's pending events and ends its retries, for a turn
// whose end cannot be emitted.
func (s *Session) dropPending(t *turn) {
	t.pendMu.Lock()
	defer t.pendMu.Unlock()
	t.ended, t.pending = true, nil
	if t.retry != nil {
		t.retry.Stop()
		t.retryArmed = false
	}
}

func (s *Session) tryLock() bool {
	select {
	case s.emitLock <- struct{}{}:
		return true
	default:
		return false
	}
}
