package feishu

import (
	"context"
	"sync"
	"time"
)

// recipientLimiter keeps the sends to one recipient under n per window
// (the platform allows 5 per second to one user or one group). It is a
// sliding window per recipient; idle recipients are forgotten so the map
// stays small.
type recipientLimiter struct {
	n      int
	window time.Duration

	mu   sync.Mutex
	sent map[string][]time.Time // the last n send times, oldest first
}

func newRecipientLimiter(n int, window time.Duration) *recipientLimiter {
	return &recipientLimiter{n: n, window: window, sent: map[string][]time.Time{}}
}

// wait blocks until a send to key fits the limit, and counts it.
func (l *recipientLimiter) wait(ctx context.Context, key string) error {
	for {
		d := l.reserve(key, time.Now())
		if d <= 0 {
			return nil
		}
		if err := sleep(ctx, d); err != nil {
			return err
		}
	}
}

// reserve counts a send at now and returns 0, or returns how long to wait
// before trying again.
func (l *recipientLimiter) reserve(key string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.sent) > 4096 {
		for k, ts := range l.sent {
			if now.Sub(ts[len(ts)-1]) > l.window {
				delete(l.sent, k)
			}
		}
	}
	ts := l.sent[key]
	if len(ts) >= l.n {
		if d := ts[0].Add(l.window).Sub(now); d > 0 {
			return d
		}
		ts = ts[1:]
	}
	l.sent[key] = append(ts, now)
	return 0
}
