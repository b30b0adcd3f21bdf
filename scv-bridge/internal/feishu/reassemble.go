package feishu

import (
	"fmt"
	"time"
)

// maxChunks bounds the chunk count an event may announce.
const maxChunks = 64

// reassembler joins the chunks of events that the platform split (headers
// sum and seq, keyed by message_id), bounded in the number of events
// pending, their size, and how long their chunks wait.
type reassembler struct {
	maxPending int
	maxBytes   int
	ttl        time.Duration
	pending    map[string]*partial
}

type partial struct {
	parts [][]byte
	have  int
	size  int
	first time.Time
}

func newReassembler(maxPending, maxBytes int, ttl time.Duration) *reassembler {
	return &reassembler{maxPending: maxPending, maxBytes: maxBytes, ttl: ttl, pending: map[string]*partial{}}
}

// add stores chunk seq of sum of message id. It returns the whole payload
// when this chunk completes it, nil when chunks are still missing, or an
// error for a chunk that does not fit (bad numbering or too big: the whole
// event is dropped and left for redelivery).
func (r *reassembler) add(id string, sum, seq int, chunk []byte, now time.Time) ([]byte, error) {
	r.expire(now)
	if id == "" || sum < 1 || sum > maxChunks || seq < 0 || seq >= sum {
		return nil, fmt.Errorf("chunk %d of %d of event %q is out of range", seq, sum, id)
	}
	p := r.pending[id]
	if p == nil {
		if len(r.pending) >= r.maxPending {
			r.evictOldest()
		}
		p = &partial{parts: make([][]byte, sum), first: now}
		r.pending[id] = p
	}
	if len(p.parts) != sum {
		delete(r.pending, id)
		return nil, fmt.Errorf("event %q announced %d chunks, then %d", id, len(p.parts), sum)
	}
	if p.parts[seq] == nil {
		p.have++
	}
	p.size += len(chunk) - len(p.parts[seq])
	p.parts[seq] = append([]byte{}, chunk...)
	if p.size > r.maxBytes {
		delete(r.pending, id)
		return nil, fmt.Errorf("event %q is larger than %d bytes", id, r.maxBytes)
	}
	if p.have < sum {
		return nil, nil
	}
	delete(r.pending, id)
	out := make([]byte, 0, p.size)
	for _, c := range p.parts {
		out = append(out, c...)
	}
	return out, nil
}

func (r *reassembler) expire(now time.Time) {
	for id, p := range r.pending {
		if now.Sub(p.first) > r.ttl {
			delete(r.pending, id)
		}
	}
}

func (r *reassembler) evictOldest() {
	var oldest string
	var t time.Time
	for id, p := range r.pending {
		if oldest == "" || p.first.Before(t) {
			oldest, t = id, p.first
		}
	}
	delete(r.pending, oldest)
}

// len is the number of events pending.
func (r *reassembler) len() int { return len(r.pending) }
