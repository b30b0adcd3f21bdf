package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DeferError, returned by a SendFunc, says the platform takes no send
// before Until (a penalty, not a failure): the row stays pending without
// an attempt counted, its conversation waits, and the next pass comes at
// Until unless kicked. Rest, when set, is what is left of a row partly
// sent (the row is marked sent and Rest queued; see Reschedule).
type DeferError struct {
	Until time.Time
	Rest  json.RawMessage
	Err   error
}

func (e *DeferError) Error() string {
	return fmt.Sprintf("not sending before %s: %v", e.Until.UTC().Format(time.RFC3339), e.Err)
}

func (e *DeferError) Unwrap() error { return e.Err }

// HoldError, returned by a SendFunc, says the row (or its Rest, when part
// of it was sent) waits in the held state until the platform allows
// sending again (Flush or Release).
type HoldError struct {
	Rest json.RawMessage
	Err  error
}

func (e *HoldError) Error() string { return "held: " + e.Err.Error() }

func (e *HoldError) Unwrap() error { return e.Err }

// SendFunc sends one row through the platform, with o.ID as the
// idempotency key, and returns the platform's message id.
type SendFunc func(ctx context.Context, o Outbound) (string, error)

// Deliverer sends the outbox's pending rows, in order per conversation.
// A crash after the platform accepted a row but before MarkSent leaves
// the row pending; it is sent again with the same key, and the platform
// shows it once.
type Deliverer struct {
	Store *Store
	Send  SendFunc
	// Retryable says whether a failed send may succeed later (default:
	// every error but context cancellation is retried).
	Retryable func(error) bool
	// MaxAttempts bounds the failed sends of one row before it is dead
	// (default 8).
	MaxAttempts int
	// Backoff is the wait after a pass with a failure (default 2 s).
	Backoff time.Duration
	// Log receives refusals and failures (default slog.Default()).
	Log *slog.Logger
	// OnFinal, when set, is called after a row was marked sent or dead
	// (the adapter removes what the row held on disk, a file's copy).
	OnFinal func(o Outbound, st State)

	wake  chan struct{}
	until time.Time // the earliest end of a deferral seen by the last pass
}

// NewDeliverer returns a Deliverer for st sending through send.
func NewDeliverer(st *Store, send SendFunc) *Deliverer {
	return &Deliverer{Store: st, Send: send, wake: make(chan struct{}, 1)}
}

// Kick asks Run for a pass now (after an Enqueue or a Release). It never
// blocks: a pass already asked for covers this one.
func (d *Deliverer) Kick() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends: a pass at start (rows left by a crash),
// then one after each Kick, and one after Backoff while rows are failing.
func (d *Deliverer) Run(ctx context.Context) error {
	for {
		failed, err := d.Pass(ctx)
		if err != nil && ctx.Err() == nil {
			d.log().Error("outbox pass failed", "err", err)
			failed = true
		}
		if !d.wait(ctx, failed) {
			return ctx.Err()
		}
	}
}

// wait blocks until a Kick, the backoff after a failed pass, or the end of
// ctx (false).
func (d *Deliverer) wait(ctx context.Context, failed bool) bool {
	var retry <-chan time.Time
	if failed {
		t := time.NewTimer(d.backoff())
		defer t.Stop()
		retry = t.C
	} else if !d.until.IsZero() {
		t := time.NewTimer(time.Until(d.until))
		defer t.Stop()
		retry = t.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-d.wake:
	case <-retry:
	}
	return true
}

func (d *Deliverer) backoff() time.Duration {
	if d.Backoff > 0 {
		return d.Backoff
	}
	return 2 * time.Second
}

func (d *Deliverer) log() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}

// Pass sends every pending row once, oldest first; after a retryable
// failure the conversation's later rows wait, so a conversation's
// messages never arrive out of order. It reports whether a row failed.
func (d *Deliverer) Pass(ctx context.Context) (bool, error) {
	rows, err := d.Store.Rows(Pending)
	if err != nil {
		return false, err
	}
	blocked := map[string]bool{}
	failed := false
	d.until = time.Time{}
	for _, o := range rows {
		if ctx.Err() != nil {
			return failed, ctx.Err()
		}
		if blocked[o.Conversation] {
			continue
		}
		pid, err := d.Send(ctx, o)
		if err == nil {
			if err := d.Store.MarkSent(o.ID, pid); err != nil {
				return failed, err
			}
			d.final(o, Sent)
			continue
		}
		if ctx.Err() != nil {
			return failed, ctx.Err()
		}
		var de *DeferError
		var he *HoldError
		switch {
		case errors.As(err, &de):
			blocked[o.Conversation] = true
			if d.until.IsZero() || de.Until.Before(d.until) {
				d.until = de.Until
			}
			if de.Rest != nil {
				if _, err := d.Store.Reschedule(o.ID, de.Rest, Pending); err != nil {
					return failed, err
				}
			}
			continue
		case errors.As(err, &he):
			d.log().Info("outbox: a message is held until the platform allows sending", "id", o.ID, "reason", he.Err)
			if _, err := d.Store.Reschedule(o.ID, he.Rest, Held); err != nil {
				return failed, err
			}
			continue
		}
		if err := d.fail(o, err); err != nil {
			return failed, err
		}
		failed, blocked[o.Conversation] = true, true
	}
	return failed, nil
}

func (d *Deliverer) retryable(err error) bool {
	if d.Retryable != nil {
		return d.Retryable(err)
	}
	return !errors.Is(err, context.Canceled)
}

// fail records a failed send: dead when it cannot succeed or has used its
// attempts, pending otherwise.
func (d *Deliverer) fail(o Outbound, cause error) error {
	limit := d.MaxAttempts
	if limit <= 0 {
		limit = 8
	}
	if !d.retryable(cause) || o.Attempts+1 >= limit {
		d.log().Warn("outbox: a message could not be delivered and was given up",
			"id", o.ID, "conversation", o.Conversation, "attempts", o.Attempts+1, "err", cause)
		if err := d.Store.MarkDead(o.ID, fmt.Errorf("after %d attempts: %w", o.Attempts+1, cause)); err != nil {
			return err
		}
		d.final(o, Dead)
		return nil
	}
	d.log().Info("outbox: send failed, will retry", "id", o.ID, "attempts", o.Attempts+1, "err", cause)
	return d.Store.MarkFailed(o.ID, cause)
}

func (d *Deliverer) final(o Outbound, st State) {
	if d.OnFinal != nil {
		d.OnFinal(o, st)
	}
}
