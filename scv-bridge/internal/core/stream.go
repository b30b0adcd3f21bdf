package core

import (
	"context"
	"sync"
)

// Streamer shows replies while the model writes them (Feishu: a CardKit
// card). The final text still goes through the outbox: its row carries
// the live reply's ID (Reply.Stream), and the adapter's sender finishes
// the live reply with it, so a crash loses nothing.
type Streamer interface {
	// Begin starts a live reply to replyTo in conversation. An error means
	// no live reply this time: the answer is sent as usual.
	Begin(ctx context.Context, conversation, replyTo string) (LiveReply, error)
}

// LiveReply is one reply shown while it is written.
type LiveReply interface {
	// ID names it in the outbox row of its final text.
	ID() string
	// Show shows text, the answer so far. It may wait (the platform
	// allows a few updates a second) and may skip a frame; it is called
	// from one goroutine at a time.
	Show(ctx context.Context, text string)
	// Abort ends it, keeping what it shows, with the note added, without
	// an outbox row (a stopped turn).
	Abort(ctx context.Context, note string)
}

// StreamingSession is a Session that reports the answer while it is
// written; the core uses it when the Config has a Streamer.
type StreamingSession interface {
	Session
	// TurnStream is Turn, calling delta with the text of the current
	// model response so far each time it grows. delta must not block.
	TurnStream(ctx context.Context, prompt string, delta func(text string)) (string, error)
}

// relay carries a turn's growing text to a live reply on a goroutine of
// its own, so the connection's reader never waits for the platform: the
// latest text wins, older frames are dropped. The end of the turn does not
// cancel a platform call under way (a card half made would be lost): stop
// waits for it.
type relay struct {
	cv      *conv
	replyTo string

	mu     sync.Mutex
	latest string
	live   LiveReply
	wake   chan struct{}
	quit   chan struct{}
	done   chan struct{}
}

// startRelay starts a relay whose platform calls end with ctx (the
// core's, not the turn's).
func (cv *conv) startRelay(ctx context.Context, replyTo string) *relay {
	r := &relay{cv: cv, replyTo: replyTo, wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go r.run(ctx)
	return r
}

// delta is the session's delta callback.
func (r *relay) delta(text string) {
	r.mu.Lock()
	r.latest = text
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *relay) run(ctx context.Context) {
	defer close(r.done)
	shown := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.quit:
			return
		case <-r.wake:
		}
		r.mu.Lock()
		text := r.latest
		r.mu.Unlock()
		if text == shown || text == "" {
			continue
		}
		if r.live == nil {
			live, err := r.cv.core.cfg.Streamer.Begin(ctx, r.cv.id, r.replyTo)
			if err != nil {
				if ctx.Err() == nil {
					r.cv.core.cfg.Log.Warn("the reply cannot be shown while it is written; it is sent when done",
						"conversation", r.cv.id, "err", err)
				}
				return // without a live reply there is nothing to feed
			}
			r.mu.Lock()
			r.live = live
			r.mu.Unlock()
		}
		r.live.Show(ctx, text)
		shown = text
	}
}

// stop ends the relay and returns its live reply (nil when none began).
func (r *relay) stop() LiveReply {
	if r == nil {
		return nil
	}
	close(r.quit)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live
}
