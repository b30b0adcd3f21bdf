// Package framequeue is the bounded queue between the code that produces
// encoded server frames and the one goroutine that writes them to the
// client. It is bounded both by frame count and by bytes, so a client that
// stops reading holds back producers instead of growing the server's memory.
//
// Push blocks until there is room or its context ends; nothing is ever
// dropped. Frames come out in the order their Push calls returned.
package framequeue

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sync/semaphore"
)

// ErrClosed is returned by Push after Close.
var ErrClosed = errors.New("frame queue closed")

// Queue is a bounded FIFO of frames.
type Queue struct {
	frames   chan []byte
	bytes    *semaphore.Weighted
	maxBytes int64
	done     chan struct{}
	once     sync.Once
}

// New returns a queue holding at most maxFrames frames and maxBytes bytes.
func New(maxFrames int, maxBytes int64) *Queue {
	return &Queue{
		frames:   make(chan []byte, maxFrames),
		bytes:    semaphore.NewWeighted(maxBytes),
		maxBytes: maxBytes,
		done:     make(chan struct{}),
	}
}

// Push appends frame, waiting for room. It fails with ctx.Err() when ctx
// ends first, with ErrClosed after Close, and at once for a frame larger
// than the byte bound.
func (q *Queue) Push(ctx context.Context, frame []byte) error {
	n := int64(len(frame))
	if n > q.maxBytes {
		return errors.New("frame larger than the queue's byte bound")
	}
	select {
	case <-q.done:
		return ErrClosed
	default:
	}
	if err := q.bytes.Acquire(ctx, n); err != nil {
		return err
	}
	select {
	case q.frames <- frame:
		return nil
	case <-ctx.Done():
		q.bytes.Release(n)
		return ctx.Err()
	case <-q.done:
		q.bytes.Release(n)
		return ErrClosed
	}
}

// Pop returns the next frame, waiting until one is queued, ctx ends, or the
// queue is closed and drained. ok is false in the last two cases.
func (q *Queue) Pop(ctx context.Context) (frame []byte, ok bool) {
	select {
	case f := <-q.frames:
		q.bytes.Release(int64(len(f)))
		return f, true
	default:
	}
	select {
	case f := <-q.frames:
		q.bytes.Release(int64(len(f)))
		return f, true
	case <-ctx.Done():
		return nil, false
	case <-q.done:
		// Drain what was queued before Close.
		select {
		case f := <-q.frames:
			q.bytes.Release(int64(len(f)))
			return f, true
		default:
			return nil, false
		}
	}
}

// Close stops new pushes and wakes pushes waiting for a frame slot (a push
// waiting for bytes wakes when its context ends); queued frames can still be
// popped. Close is idempotent.
func (q *Queue) Close() { q.once.Do(func() { close(q.done) }) }

// Len returns the number of queued frames.
func (q *Queue) Len() int { return len(q.frames) }
