package session

import (
	"context"
	"errors"
	"fmt"

	"github.com/scv-cli/scv/scv-server/internal/loop"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/protocol"
)

// messageBytes is what a message weighs against the history's byte bound.
func messageBytes(m provider.Message) int64 {
	n := int64(len(m.Content))
	for _, c := range m.ToolCalls {
		n += int64(len(c.ID) + len(c.Name) + len(c.Arguments))
	}
	for _, r := range m.Reasoning {
		n += int64(len(r))
	}
	return n
}

func historyBytes(msgs []provider.Message) int64 {
	var n int64
	for _, m := range msgs {
		n += messageBytes(m)
	}
	return n
}

// bound keeps the history within its byte and item bounds. It returns the
// outcome (a turn that cannot fit on its own fails with history_limit and
// keeps only its prompt), the history to commit, and the session.trimmed
// event when older turns were dropped.
func (s *Session) bound(t *turn, out loop.Outcome) (loop.Outcome, []provider.Message, *protocol.SessionTrimmed) {
	maxBytes := s.mgr.opts.MaxHistoryBytes
	if maxBytes <= 0 {
		maxBytes = protocol.DefaultMaxTranscriptBytes
	}
	maxItems := s.mgr.opts.MaxHistoryItems
	if maxItems <= 0 {
		maxItems = protocol.DefaultMaxTranscriptItems
	}
	s.mu.Lock()
	base := s.history
	s.mu.Unlock()
	if out.Compacted {
		base = out.History
	}
	var failure *loop.Failure
	if errors.As(out.Err, &failure) && failure.Code == protocol.FailContextLimit && len(out.Messages) == 1 {
		// The prompt never reached the model: keeping it would make every
		// later request too large as well.
		out.Messages = nil
	}
	if turnBytes := historyBytes(out.Messages); len(out.Messages) > 0 && (turnBytes > maxBytes || len(out.Messages) > maxItems) {
		out.Err = &loop.Failure{Code: protocol.FailHistoryLimit, Message: fmt.Sprintf(
			"this turn produced %d messages of %d bytes, more than the session's history holds (%d messages, %d bytes); its messages were dropped, so ask for smaller steps",
			len(out.Messages), turnBytes, maxItems, maxBytes)}
		out.Messages = []provider.Message{out.Messages[0], {Role: provider.RoleAssistant,
			Content: "(This turn's messages were dropped: they did not fit in the session's history.)"}}
	}
	history := make([]provider.Message, 0, len(base)+len(out.Messages))
	history = append(append(history, base...), out.Messages...)
	total := historyBytes(history)
	if total <= maxBytes && len(history) <= maxItems {
		return out, history, nil
	}
	// Drop the oldest whole turns until the rest fits; the newest turn
	// always stays.
	removed := 0
	starts := turnStarts(history)
	keepFrom := len(history) - len(out.Messages)
	for _, i := range starts[1:] {
		if i > keepFrom {
			break
		}
		removed = i
		if historyBytes(history[i:]) <= maxBytes && len(history)-i <= maxItems {
			break
		}
	}
	history = append([]provider.Message(nil), history[removed:]...)
	return out, history, &protocol.SessionTrimmed{
		SessionHeader:   protocol.SessionHeader{RequestID: t.requestID, SessionID: s.id},
		RemovedMessages: int64(removed),
		HistoryBytes:    historyBytes(history),
	}
}

// turnStarts returns the indices of the user messages: where turns start.
func turnStarts(msgs []provider.Message) []int {
	var starts []int
	for i, m := range msgs {
		if m.Role == provider.RoleUser {
			starts = append(starts, i)
		}
	}
	return starts
}

// Compact summarizes the idle session's older history now (session.compact,
// v3). It runs as a turn of its own, answered by turn.started, then
// context.compacted, then the terminal event, all carrying requestID; the
// turn makes no model step of its own beyond the summary.
func (s *Session) Compact(ctx context.Context, requestID string) error {
	if err := s.lockIdle(ctx, "session.compact"); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	can := loop.CanCompact(s.history)
	s.mu.Unlock()
	if !can {
		return errorf(protocol.ErrInvalidRequest, "nothing to compact yet: the last turn is always kept, and there is no older history")
	}
	return s.launchTurnLocked(ctx, requestID, nil, func(ctx context.Context, cfg loop.Config, history []provider.Message, sink loop.Sink) loop.Outcome {
		return loop.Compact(ctx, cfg, history, sink)
	})
}
