package wechat

import (
	"fmt"
	"sync"
	"time"
)

// Class says what a send is for; it decides how much of the budget the
// send may use.
type Class int

// Send classes, from the least to the most entitled.
const (
	// ClassProgress is an intermediate item of a running turn.
	ClassProgress Class = iota
	// ClassReport is a background report (a job finished).
	ClassReport
	// ClassNotice is the one short notice that reports are held.
	ClassNotice
	// ClassFinal is a turn's final answer.
	ClassFinal
)

// Budget defaults (docs/channels.md, "The send budget").
const (
	DefaultSendBudget = 8
	MinThrottle       = time.Hour
	maxThrottle       = 24 * time.Hour
)

// PeerBudget is one conversation's use of the budget since the peer's last
// message.
type PeerBudget struct {
	Used    int  `json:"used"`
	Noticed bool `json:"noticed,omitempty"`
}

// BudgetState is what the core persists so that a restart neither forgets
// sends already made nor a penalty in progress.
type BudgetState struct {
	ThrottledUntil time.Time             `json:"throttled_until,omitzero"`
	Strikes        int                   `json:"strikes,omitempty"`
	Peers          map[string]PeerBudget `json:"peers,omitempty"`
}

// Budget enforces the send budget of one account. WeChat refuses sends
// (ret=-2) after about ten per inbound message and lengthens the penalty
// at every attempt made during it, so: sends are counted per conversation
// since the peer's last message; of the limit (8), progress and reports
// may use limit-2, the notice that reports are held one more, and the
// final answer the last; on ret=-2 no send is attempted for at least an
// hour, doubling at each repeated refusal up to a day. Safe for
// concurrent use; sends to one conversation must still be serialised, as
// Grant and Spend are two steps.
type Budget struct {
	mu      sync.Mutex
	limit   int
	backoff time.Duration
	now     func() time.Time
	st      BudgetState
}

// NewBudget returns a budget of limit sends (DefaultSendBudget when 0; at
// least 3) and a first backoff (MinThrottle when shorter).
func NewBudget(limit int, backoff time.Duration) *Budget {
	if limit == 0 {
		limit = DefaultSendBudget
	}
	limit = max(limit, 3)
	backoff = max(backoff, MinThrottle)
	return &Budget{limit: limit, backoff: backoff, now: time.Now, st: BudgetState{Peers: map[string]PeerBudget{}}}
}

// Limit is the number of sends per inbound message.
func (b *Budget) Limit() int { return b.limit }

func (b *Budget) ceiling(c Class) int {
	switch c {
	case ClassFinal:
		return b.limit
	case ClassNotice:
		return b.limit - 1
	}
	return b.limit - 2
}

// Inbound renews peer's budget: the peer wrote to the bot.
func (b *Budget) Inbound(peer string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.st.Peers, peer)
}

// Grant says how many of want sends of class c to peer may be made now
// (0 to want). It returns ErrThrottled, wrapped with the end of the
// penalty, while the account is throttled. A second notice since the
// peer's last message is never granted.
func (b *Budget) Grant(peer string, c Class, want int) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if until := b.st.ThrottledUntil; b.now().Before(until) {
		return 0, fmt.Errorf("%w until %s", ErrThrottled, until.UTC().Format(time.RFC3339))
	}
	p := b.st.Peers[peer]
	if c == ClassNotice && p.Noticed {
		return 0, nil
	}
	return max(0, min(want, b.ceiling(c)-p.Used)), nil
}

// Spend records n sends of class c to peer that the platform accepted.
func (b *Budget) Spend(peer string, c Class, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.st.Peers[peer]
	p.Used += n
	if c == ClassNotice {
		p.Noticed = true
	}
	b.st.Peers[peer] = p
	b.st.Strikes = 0
}

// Throttle records a ret=-2 and returns the end of the penalty.
func (b *Budget) Throttle() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.backoff
	for i := 0; i < b.st.Strikes && d < maxThrottle; i++ {
		d *= 2
	}
	b.st.Strikes++
	b.st.ThrottledUntil = b.now().Add(min(d, maxThrottle))
	return b.st.ThrottledUntil
}

// ThrottledUntil is the end of the penalty; zero or past when none.
func (b *Budget) ThrottledUntil() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.ThrottledUntil
}

// Throttled reports whether the account is in its penalty, and its end.
func (b *Budget) Throttled() (time.Time, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.ThrottledUntil, b.now().Before(b.st.ThrottledUntil)
}

// Remaining is how many sends of class c peer may still get.
func (b *Budget) Remaining(peer string, c Class) int {
	n, err := b.Grant(peer, c, b.limit)
	if err != nil {
		return 0
	}
	return n
}

// State returns a copy of the state to persist.
func (b *Budget) State() BudgetState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.st
	s.Peers = make(map[string]PeerBudget, len(b.st.Peers))
	for k, v := range b.st.Peers {
		s.Peers[k] = v
	}
	return s
}

// Restore replaces the state with a persisted one.
func (b *Budget) Restore(s BudgetState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.st = s
	b.st.Peers = make(map[string]PeerBudget, len(s.Peers))
	for k, v := range s.Peers {
		b.st.Peers[k] = v
	}
}
