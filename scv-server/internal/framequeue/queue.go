// Package framequeue is the bounded queue between the code that produces
// encoded server frames and the one goroutine that writes them to the
// client. It is bounded both by frame count and by bytes, so a client that
// stops reading holds back producers instead of growing the server's memory.
//
// Push blocks until there is room, its context ends or the queue is
// closed; nothing is ever dropped. Frames come out in the order their Push
// calls returned. Close stops producers at once but lets the consumer drain
// what was queued.
package framequeue

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed is returned by Push after Close.
var ErrClosed = errors.New("frame queue closed")

// ErrTooLarge is returned by Push for a frame larger than the byte bound.
var ErrTooLarge = errors.New("frame larger than the queue's byte bound")

// Queue is a bounded FIFO of frames.
type Queue struct {
	frames   chan []byte
	maxBytes int64
	// room holds a token when bytes were released since a pusher last
	// looked; a pusher that takes it and finds room left passes it on.
	room chan struct{}
	done chan struct{}
	once sync.Once

	mu    sync.Mutex
	bytes int64 // guarded by mu; bytes of frames pushed and not yet popped
}

// New returns a queue holding at most maxFrames frames and maxBytes bytes.
func New(maxFrames int, maxBytes int64) *Queue {
	return &Queue{
		frames:   make(chan []byte, maxFrames),
		maxBytes: maxBytes,
		room:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
}

// Push appends frame, waiting for room. It fails with ctx.Err() when ctx
// ends first, with ErrClosed once the queue is closed, and at once with
// ErrTooLarge for a frame larger than the byte bound.
func (q *Queue) Push(ctx context.Context, frame []byte) error {
	n := int64(len(frame))
	if n > q.maxBytes {
		return ErrTooLarge
	}
	if err := q.reserve(ctx, n); err != nil {
		return err
	}
	select {
	case q.frames <- frame:
		return nil
	default:
	}
	select {
	case q.frames <- frame:
		return nil
	case <-ctx.Done():
		q.release(n)
		return ctx.Err()
	case <-q.done:
		q.release(n)
		return ErrClosed
	}
}

// reserve waits until n bytes fit and counts them.
func (q *Queue) reserve(ctx context.Context, n int64) (err error) {
	defer func() {
		if err != nil {
			// This waiter may have taken the room token; pass it on so
			// another waiter that fits is not left asleep.
			q.signal()
		}
	}()
	for {
		select {
		case <-q.done:
			return ErrClosed
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		q.mu.Lock()
		if q.bytes+n <= q.maxBytes {
			q.bytes += n
			left := q.bytes < q.maxBytes
			q.mu.Unlock()
			if left {
				q.signal() // another waiter may fit too
			}
			return nil
		}
		q.mu.Unlock()
		select {
		case <-q.room:
		case <-ctx.Done():
			return ctx.Err()
		case <-q.done:
			return ErrClosed
		}
	}
}

func (q *Queue) release(n int64) {
	q.mu.Lock()
	q.bytes -= n
	q.mu.Unlock()
	q.signal()
}

func (q *Queue) signal() {
	select {
	case q.room <- struct{}{}:
	default:
	}
}

// Room reports whether a frame of n bytes would be queued now without
// waiting: true when it fits, and when the queue is closed (Push fails at
// once). It is a hint: another producer may take the room first.
func (q *Queue) Room(n int) bool {
	select {
	case <-q.done:
		return true
	default:
	}
	if len(q.frames) >= cap(q.frames) {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bytes+int64(n) <= q.maxBytes
}

// Pop returns the next frame, waiting until one is queued, ctx ends, or the
// queue is closed and drained. ok is false in the last two cases.
func (q *Queue) Pop(ctx context.Context) (frame []byte, ok bool) {
	if f, ok := q.TryPop(); ok {
		return f, true
	}
	select {
	case f := <-q.frames:
		q.release(int64(len(f)))
		return f, true
	case <-ctx.Done():
		return nil, false
	case <-q.done:
		return q.TryPop()
	}
}

// TryPop returns the next frame if one is queued, without waiting.
func (q *Queue) TryPop() (frame []byte, ok bool) {
	select {
	case f := <-q.frames:
		q.release(int64(len(f)))
		return f, true
	default:
		return nil, false
	}
}

// Close stops producers: waiting and later pushes fail with ErrClosed.
// Queued frames can still be popped. Close is idempotent.
func (q *Queue) Close() { q.once.Do(func() { close(q.done) }) }

// Len returns the number of queued frames.
func (q *Queue) Len() int { return len(q.frames) }
