package wechat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Batch is one getupdates answer.
type Batch struct {
	// Messages are the decoded user messages (the bot's own are dropped).
	Messages []Message
	// Skipped counts messages that did not decode (logged, not delivered).
	Skipped int
	// Cursor is the get_updates_buf to persist once Messages are stored.
	Cursor string
}

// GetUpdates makes one long poll from cursor ("" at first). A poll that
// ends without messages gives an empty Batch with the same cursor.
func (c *Client) GetUpdates(ctx context.Context, cursor string) (Batch, error) {
	pctx, cancel := context.WithTimeout(ctx, c.opts.PollTimeout)
	defer cancel()
	var out struct {
		Msgs   []json.RawMessage `json:"msgs"`
		Cursor string            `json:"get_updates_buf"`
	}
	err := c.post(pctx, "getupdates", "/ilink/bot/getupdates", map[string]any{"get_updates_buf": cursor, "base_info": newBaseInfo()}, &out)
	if err != nil {
		// The client's own timeout is the normal end of an idle poll.
		if ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
			return Batch{Cursor: cursor}, nil
		}
		return Batch{Cursor: cursor}, err
	}
	b := Batch{Cursor: out.Cursor}
	if b.Cursor == "" {
		b.Cursor = cursor
	}
	for _, raw := range out.Msgs {
		m, err := DecodeMessage(raw)
		if err != nil {
			b.Skipped++
			c.log.Warn("wechat: skipped an inbound message that does not decode", "err", err)
			continue
		}
		if m.FromBot {
			continue
		}
		b.Messages = append(b.Messages, m)
	}
	return b, nil
}

// Handler stores a batch durably (messages, deduplicated on message ID,
// and the cursor) before it returns nil; an error stops Poll with the
// cursor not advanced.
type Handler func(ctx context.Context, b Batch) error

// Poll long-polls from cursor until ctx ends or a fatal error, passing
// every non-empty batch to h and advancing only after h returned nil.
// Each batch's context tokens are recorded and each sender's budget is
// renewed only then. Transport and server errors are retried with a
// backoff of 1 s doubling to 1 min; ErrSessionExpired and h's errors are
// returned.
func (c *Client) Poll(ctx context.Context, cursor string, h Handler) error {
	return c.PollCommitted(ctx, cursor, h, nil)
}

// PollCommitted is Poll, calling committed (when not nil) after each
// stored batch's context tokens were recorded and its senders' budgets
// renewed: the moment the core may flush what it held for them and save
// the budget, so no send can slip between the renewal and the flush.
func (c *Client) PollCommitted(ctx context.Context, cursor string, h Handler, committed func(Batch)) error {
	backoff := time.Second
	for {
		b, err := c.GetUpdates(ctx, cursor)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrSessionExpired):
			return err
		case err != nil:
			c.log.Warn("wechat: getupdates failed; retrying", "err", err, "in", backoff)
			if !sleep(ctx, backoff) {
				return ctx.Err()
			}
			backoff = min(2*backoff, time.Minute)
			continue
		}
		backoff = time.Second
		if len(b.Messages) == 0 && b.Skipped == 0 && b.Cursor == cursor {
			continue
		}
		if err := h(ctx, b); err != nil {
			return fmt.Errorf("wechat: storing a batch failed; the cursor stays where it was: %w", err)
		}
		for _, m := range b.Messages {
			c.SetContextToken(m.From, m.ContextToken)
			c.budget.Inbound(m.From)
		}
		if committed != nil {
			committed(b)
		}
		cursor = b.Cursor
	}
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
