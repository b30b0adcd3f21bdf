// Package approval decides which tool calls need the user's consent and
// keeps the approvals a session is waiting on.
//
// A Policy maps a call's declared risk to a Decision. Pending holds the
// outstanding requests of one session: each has a server-generated UUID
// that is never reused, resolves at most once, and is forgotten when its
// waiter gives up (a cancelled turn), so a late answer is refused.
package approval

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/textcut"
)

// Policy is the tools.approval_policy setting.
type Policy string

// Policies (spec README, decision 3).
const (
	// OnRisk runs read-only calls and asks for every other risk.
	OnRisk Policy = "on-risk"
	// Never runs read-only calls and denies the rest without asking.
	Never Policy = "never"
	// Auto runs every call without asking.
	Auto Policy = "auto"
)

// ParsePolicy validates a policy name.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case OnRisk, Never, Auto:
		return p, nil
	}
	return "", fmt.Errorf("unknown approval policy %q: use on-risk, never or auto", s)
}

// Decision is what happens to a call before it runs.
type Decision int

// Decisions.
const (
	Run Decision = iota
	Ask
	Deny
)

// Decide returns what p does with a call of risk r.
func (p Policy) Decide(r protocol.Risk) Decision {
	if r == protocol.RiskReadOnly || p == Auto {
		return Run
	}
	if p == Never {
		return Deny
	}
	return Ask
}

// Unattended answers a request of risk r that nobody can be asked about,
// such as one a delegated agent relays from a background job (tools.md,
// "Background jobs"): what the policy decides on its own (read-only runs;
// auto runs everything; never denies the rest), else, when the client
// approves every request unasked (autoApprove), yes, else no. It never
// gives more than the same call would get in the foreground.
func (p Policy) Unattended(r protocol.Risk, autoApprove bool) bool {
	switch p.Decide(r) {
	case Run:
		return true
	case Ask:
		return autoApprove
	default:
		return false
	}
}

// ErrNotFound is returned by Resolve for an id that is unknown or already
// resolved; the caller answers approval_not_found.
var ErrNotFound = errors.New("approval not found")

// ErrNoRule is returned by ResolveForSession for a request that proposed no
// rule; the request stays open.
var ErrNoRule = errors.New("the approval request proposed no session rule")

// Pending is a session's outstanding approval requests. The zero value is
// not usable; call NewPending.
type Pending struct {
	mu      sync.Mutex
	waiting map[string]*request // guarded by mu
}

// request is one open approval. An answer may arrive before its waiter
// calls Wait (the client can answer as soon as the request frame is
// written), so Resolve marks it resolved and leaves it for Wait to collect.
type request struct {
	answer   chan bool // buffered, one answer
	resolved bool      // guarded by Pending.mu
	// rule is what approving it for the session grants (protocol v3);
	// nil when it can only be approved once.
	rule *protocol.Rule
	// wider is the broader rule scope "session_wider" grants (v4); nil
	// when there is none.
	wider *protocol.Rule
	// feedback is the user's reason for a denial (v4), guarded by
	// Pending.mu.
	feedback string
}

// NewPending returns an empty set.
func NewPending() *Pending { return &Pending{waiting: map[string]*request{}} }

// Open registers a new request and returns its id. The caller must call
// Wait (or Forget) with it.
func (p *Pending) Open() string { return p.OpenWithRule(nil) }

// OpenWithRule is Open for a request that may be approved for the session:
// rule, when not nil, is what ResolveForSession grants.
func (p *Pending) OpenWithRule(rule *protocol.Rule) string { return p.OpenWithRules(rule, nil) }

// OpenWithRules is OpenWithRule with a wider rule the request may be
// approved with instead (ResolveForSession with wider).
func (p *Pending) OpenWithRules(rule, wider *protocol.Rule) string {
	id := uuid.NewString()
	p.mu.Lock()
	p.waiting[id] = &request{answer: make(chan bool, 1), rule: rule, wider: wider}
	p.mu.Unlock()
	return id
}

// Wait blocks until id is resolved or ctx ends. On ctx's end the request is
// forgotten, so a later Resolve fails.
func (p *Pending) Wait(ctx context.Context, id string) (bool, error) {
	approved, _, err := p.WaitFeedback(ctx, id)
	return approved, err
}

// WaitFeedback is Wait that also returns the user's reason for a denial
// (DenyWithFeedback); empty when none was given.
func (p *Pending) WaitFeedback(ctx context.Context, id string) (bool, string, error) {
	p.mu.Lock()
	r, ok := p.waiting[id]
	p.mu.Unlock()
	if !ok {
		return false, "", ErrNotFound
	}
	select {
	case approved := <-r.answer:
		p.mu.Lock()
		feedback := r.feedback
		p.mu.Unlock()
		p.Forget(id)
		return approved, feedback, nil
	case <-ctx.Done():
		p.Forget(id)
		// An answer may have raced the cancellation; the turn is over either
		// way, so the cancellation wins.
		return false, "", ctx.Err()
	}
}

// MaxFeedbackBytes bounds the reason kept with a denial.
const MaxFeedbackBytes = 4 << 10

// DenyWithFeedback denies id and keeps the user's reason for the waiter,
// cut to MaxFeedbackBytes. It fails as Resolve does.
func (p *Pending) DenyWithFeedback(id, feedback string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.waiting[id]
	if !ok || r.resolved {
		return ErrNotFound
	}
	r.resolved = true
	r.feedback = textcut.Prefix(feedback, MaxFeedbackBytes)
	r.answer <- false // buffered, sent once; never blocks
	return nil
}

// Forget drops id without an answer.
func (p *Pending) Forget(id string) {
	p.mu.Lock()
	delete(p.waiting, id)
	p.mu.Unlock()
}

// Resolve answers id. It fails with ErrNotFound for an unknown id or one
// already resolved or forgotten.
func (p *Pending) Resolve(id string, approved bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.waiting[id]
	if !ok || r.resolved {
		return ErrNotFound
	}
	r.resolved = true
	r.answer <- approved // buffered, sent once; never blocks
	return nil
}

// ResolveForSession approves id and grants its rule: grant is called with
// the rule before the waiter sees the answer, so the rule is in force by
// the time the approved call runs and before the next call is checked. It
// fails with ErrNotFound as Resolve does, and with ErrNoRule, leaving the
// request open, when the request has no rule.
func (p *Pending) ResolveForSession(id string, grant func(protocol.Rule)) error {
	return p.resolveWith(id, false, grant)
}

// ResolveForSessionWider is ResolveForSession granting the request's wider
// rule; ErrNoRule when it has none.
func (p *Pending) ResolveForSessionWider(id string, grant func(protocol.Rule)) error {
	return p.resolveWith(id, true, grant)
}

func (p *Pending) resolveWith(id string, wider bool, grant func(protocol.Rule)) error {
	p.mu.Lock()
	r, ok := p.waiting[id]
	rule := r.ruleFor(wider)
	switch {
	case !ok || r.resolved:
		p.mu.Unlock()
		return ErrNotFound
	case rule == nil:
		p.mu.Unlock()
		return ErrNoRule
	}
	r.resolved = true
	p.mu.Unlock()
	// Granting outside the lock keeps Pending's lock a leaf; resolved is
	// set, so nothing else answers r meanwhile.
	grant(*rule)
	r.answer <- true // buffered, sent once; never blocks
	return nil
}

// Len returns the number of outstanding (unanswered) requests.
func (p *Pending) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.waiting {
		if !r.resolved {
			n++
		}
	}
	return n
}

// ruleFor returns the rule or the wider one; nil for a nil request.
func (r *request) ruleFor(wider bool) *protocol.Rule {
	switch {
	case r == nil:
		return nil
	case wider:
		return r.wider
	}
	return r.rule
}
