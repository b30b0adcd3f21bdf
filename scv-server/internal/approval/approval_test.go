package approval

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.uber.org/goleak"

	"github.com/scv-cli/scv/shared/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const hangGuard = 10 * time.Second

func TestParsePolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Policy
		wantErr bool
	}{
		{"on-risk", OnRisk, false},
		{"never", Never, false},
		{"auto", Auto, false},
		{"", "", true},
		{"On-Risk", "", true},
		{"AUTO", "", true},
		{"on_risk", "", true},
		{"onrisk", "", true},
		{" auto", "", true},
		{"auto ", "", true},
		{"always", "", true},
		{"yolo", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParsePolicy(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParsePolicy(%q) = %q, want an error", tc.in, got)
				}
				msg := err.Error()
				for _, w := range []string{"on-risk", "never", "auto"} {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not name the valid policy %q", msg, w)
					}
				}
				if !strings.Contains(msg, `"`+tc.in+`"`) {
					t.Errorf("error %q does not quote the bad value %q", msg, tc.in)
				}
				if got != "" {
					t.Errorf("ParsePolicy(%q) returned %q with its error", tc.in, got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParsePolicy(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	want := map[Policy]map[protocol.Risk]Decision{
		OnRisk: {
			protocol.RiskReadOnly:   Run,
			protocol.RiskFilesystem: Ask,
			protocol.RiskProcess:    Ask,
			protocol.RiskDelegate:   Ask,
			protocol.RiskNetwork:    Ask,
		},
		Never: {
			protocol.RiskReadOnly:   Run,
			protocol.RiskFilesystem: Deny,
			protocol.RiskProcess:    Deny,
			protocol.RiskDelegate:   Deny,
			protocol.RiskNetwork:    Deny,
		},
		Auto: {
			protocol.RiskReadOnly:   Run,
			protocol.RiskFilesystem: Run,
			protocol.RiskProcess:    Run,
			protocol.RiskDelegate:   Run,
			protocol.RiskNetwork:    Run,
		},
	}
	if len(protocol.Risks) == 0 {
		t.Fatal("protocol.Risks is empty")
	}
	for _, p := range []Policy{OnRisk, Never, Auto} {
		for _, r := range protocol.Risks {
			t.Run(string(p)+"/"+string(r), func(t *testing.T) {
				w, ok := want[p][r]
				if !ok {
					// A risk added to the protocol later: only read_only
					// runs without asking, except under auto.
					w = map[Policy]Decision{OnRisk: Ask, Never: Deny, Auto: Run}[p]
				}
				if got := p.Decide(r); got != w {
					t.Fatalf("%s.Decide(%s) = %v, want %v", p, r, got, w)
				}
			})
		}
	}
	// Every risk of the table is a protocol risk.
	known := map[protocol.Risk]bool{}
	for _, r := range protocol.Risks {
		known[r] = true
	}
	for r := range want[OnRisk] {
		if !known[r] {
			t.Errorf("risk %q is not in protocol.Risks", r)
		}
	}
}

func TestOpenDistinctUUIDs(t *testing.T) {
	t.Parallel()
	p := NewPending()
	const n = 2000
	seen := make(map[string]bool, n)
	for i := 0; i < n; i++ {
		id := p.Open()
		u, err := uuid.Parse(id)
		if err != nil {
			t.Fatalf("Open() = %q, not a UUID: %v", id, err)
		}
		if u.String() != id {
			t.Fatalf("Open() = %q, not in canonical form %q", id, u.String())
		}
		if seen[id] {
			t.Fatalf("Open() reused id %q", id)
		}
		seen[id] = true
		// Resolve and forget half of them: a freed id is never handed out
		// again either.
		if i%2 == 0 {
			if err := p.Resolve(id, true); err != nil {
				t.Fatal(err)
			}
			p.Forget(id)
		}
	}
	if got := p.Len(); got != n/2 {
		t.Fatalf("Len = %d, want %d", got, n/2)
	}
}

func TestOpenConcurrent(t *testing.T) {
	t.Parallel()
	p := NewPending()
	const workers, each = 8, 200
	ids := make(chan string, workers*each)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				ids <- p.Open()
			}
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
	}
	if p.Len() != workers*each {
		t.Fatalf("Len = %d, want %d", p.Len(), workers*each)
	}
}

func TestResolveThenWait(t *testing.T) {
	t.Parallel()
	for _, approved := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "denied"}[approved], func(t *testing.T) {
			p := NewPending()
			id := p.Open()
			if err := p.Resolve(id, approved); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if p.Len() != 0 {
				t.Fatalf("Len after Resolve = %d, want 0", p.Len())
			}
			// The answer arrived before the waiter: Wait still gets it.
			got, err := p.Wait(context.Background(), id)
			if err != nil {
				t.Fatalf("Wait after Resolve: %v", err)
			}
			if got != approved {
				t.Fatalf("Wait = %v, want %v", got, approved)
			}
			if err := p.Resolve(id, !approved); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Resolve after Wait = %v, want ErrNotFound", err)
			}
		})
	}
}

func TestWaitThenResolve(t *testing.T) {
	t.Parallel()
	for _, approved := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "denied"}[approved], func(t *testing.T) {
			p := NewPending()
			id := p.Open()
			type result struct {
				ok  bool
				err error
			}
			ch := make(chan result, 1)
			go func() {
				ok, err := p.Wait(context.Background(), id)
				ch <- result{ok, err}
			}()
			select {
			case r := <-ch:
				t.Fatalf("Wait returned %v, %v before Resolve", r.ok, r.err)
			default:
			}
			if err := p.Resolve(id, approved); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			select {
			case r := <-ch:
				if r.err != nil || r.ok != approved {
					t.Fatalf("Wait = %v, %v; want %v, nil", r.ok, r.err, approved)
				}
			case <-time.After(hangGuard):
				t.Fatal("Wait did not return after Resolve")
			}
			if p.Len() != 0 {
				t.Fatalf("Len = %d, want 0", p.Len())
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, p *Pending) string // returns the id to resolve
	}{
		{"unknown id", func(t *testing.T, p *Pending) string { p.Open(); return uuid.NewString() }},
		{"empty id", func(t *testing.T, p *Pending) string { p.Open(); return "" }},
		{"not a uuid", func(t *testing.T, p *Pending) string { return "approval-1" }},
		{"resolved twice", func(t *testing.T, p *Pending) string {
			id := p.Open()
			if err := p.Resolve(id, true); err != nil {
				t.Fatal(err)
			}
			return id
		}},
		{"resolved then waited", func(t *testing.T, p *Pending) string {
			id := p.Open()
			if err := p.Resolve(id, false); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Wait(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			return id
		}},
		{"forgotten", func(t *testing.T, p *Pending) string {
			id := p.Open()
			p.Forget(id)
			return id
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPending()
			id := tc.setup(t, p)
			for _, approved := range []bool{true, false} {
				if err := p.Resolve(id, approved); !errors.Is(err, ErrNotFound) {
					t.Fatalf("Resolve(%q, %v) = %v, want ErrNotFound", id, approved, err)
				}
			}
		})
	}
}

func TestWaitCancelled(t *testing.T) {
	t.Parallel()
	t.Run("already cancelled", func(t *testing.T) {
		p := NewPending()
		id := p.Open()
		other := p.Open()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ok, err := p.Wait(ctx, id)
		if !errors.Is(err, context.Canceled) || ok {
			t.Fatalf("Wait = %v, %v; want false, context.Canceled", ok, err)
		}
		if err := p.Resolve(id, true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Resolve after a cancelled Wait = %v, want ErrNotFound", err)
		}
		if p.Len() != 1 {
			t.Fatalf("Len = %d, want 1 (the other request)", p.Len())
		}
		// Other requests are untouched.
		if err := p.Resolve(other, true); err != nil {
			t.Fatalf("Resolve(other): %v", err)
		}
	})
	t.Run("cancelled while waiting", func(t *testing.T) {
		p := NewPending()
		id := p.Open()
		ctx, cancel := context.WithCancel(context.Background())
		ch := make(chan error, 1)
		go func() {
			_, err := p.Wait(ctx, id)
			ch <- err
		}()
		select {
		case err := <-ch:
			t.Fatalf("Wait returned %v before cancel", err)
		default:
		}
		cancel()
		select {
		case err := <-ch:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait = %v, want context.Canceled", err)
			}
		case <-time.After(hangGuard):
			t.Fatal("Wait did not return after cancel")
		}
		if err := p.Resolve(id, true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("late Resolve = %v, want ErrNotFound", err)
		}
		if p.Len() != 0 {
			t.Fatalf("Len = %d, want 0", p.Len())
		}
	})
	t.Run("deadline", func(t *testing.T) {
		p := NewPending()
		id := p.Open()
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if _, err := p.Wait(ctx, id); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Wait = %v, want context.DeadlineExceeded", err)
		}
		if err := p.Resolve(id, true); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Resolve after deadline = %v, want ErrNotFound", err)
		}
	})
}

func TestWaitUnknown(t *testing.T) {
	t.Parallel()
	p := NewPending()
	for _, id := range []string{"", uuid.NewString()} {
		if _, err := p.Wait(context.Background(), id); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Wait(%q) = %v, want ErrNotFound", id, err)
		}
	}
	forgotten := p.Open()
	p.Forget(forgotten)
	if _, err := p.Wait(context.Background(), forgotten); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Wait(forgotten) = %v, want ErrNotFound", err)
	}
}

func TestLen(t *testing.T) {
	t.Parallel()
	p := NewPending()
	if p.Len() != 0 {
		t.Fatalf("new Pending: Len = %d", p.Len())
	}
	a, b, c := p.Open(), p.Open(), p.Open()
	steps := []struct {
		name string
		do   func()
		want int
	}{
		{"after three opens", func() {}, 3},
		{"resolve a", func() { _ = p.Resolve(a, true) }, 2},
		{"resolve a again (refused)", func() { _ = p.Resolve(a, true) }, 2},
		{"wait a", func() { _, _ = p.Wait(context.Background(), a) }, 2},
		{"forget b", func() { p.Forget(b) }, 1},
		{"forget b again", func() { p.Forget(b) }, 1},
		{"forget unknown", func() { p.Forget("nope") }, 1},
		{"resolve c", func() { _ = p.Resolve(c, false) }, 0},
		{"open d", func() { p.Open() }, 1},
	}
	for _, s := range steps {
		s.do()
		if got := p.Len(); got != s.want {
			t.Fatalf("%s: Len = %d, want %d", s.name, got, s.want)
		}
	}
}

// TestConcurrentResolve races many resolvers for one request: exactly one
// wins, and the waiter sees that one's answer.
func TestConcurrentResolve(t *testing.T) {
	t.Parallel()
	for round := 0; round < 50; round++ {
		p := NewPending()
		id := p.Open()
		const resolvers = 8
		wins := make(chan bool, resolvers)
		var wg sync.WaitGroup
		for i := 0; i < resolvers; i++ {
			wg.Add(1)
			go func(approved bool) {
				defer wg.Done()
				if err := p.Resolve(id, approved); err == nil {
					wins <- approved
				} else if !errors.Is(err, ErrNotFound) {
					t.Errorf("Resolve: %v", err)
				}
			}(i%2 == 0)
		}
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		got, err := p.Wait(ctx, id)
		cancel()
		wg.Wait()
		close(wins)
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
		var winners []bool
		for w := range wins {
			winners = append(winners, w)
		}
		if len(winners) != 1 {
			t.Fatalf("%d resolvers succeeded, want exactly 1", len(winners))
		}
		if got != winners[0] {
			t.Fatalf("Wait = %v, the winning Resolve said %v", got, winners[0])
		}
	}
}

func TestUnattended(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    Policy
		r    protocol.Risk
		auto bool
		want bool
	}{
		{OnRisk, protocol.RiskReadOnly, false, true},
		{OnRisk, protocol.RiskProcess, false, false},
		{OnRisk, protocol.RiskProcess, true, true},
		{Never, protocol.RiskReadOnly, false, true},
		{Never, protocol.RiskFilesystem, false, false},
		{Never, protocol.RiskFilesystem, true, false}, // never more than the foreground
		{Auto, protocol.RiskDelegate, false, true},
	} {
		if got := tc.p.Unattended(tc.r, tc.auto); got != tc.want {
			t.Errorf("%s.Unattended(%s, auto %v) = %v, want %v", tc.p, tc.r, tc.auto, got, tc.want)
		}
	}
}

// TestDenyWithFeedback: the waiter gets the denial and the reason, cut to
// MaxFeedbackBytes; a second answer is refused.
func TestDenyWithFeedback(t *testing.T) {
	t.Parallel()
	p := NewPending()
	id := p.Open()
	long := strings.Repeat("é", MaxFeedbackBytes)
	if err := p.DenyWithFeedback(id, long); err != nil {
		t.Fatal(err)
	}
	if err := p.Resolve(id, true); err == nil {
		t.Error("a second answer was accepted")
	}
	ok, fb, err := p.WaitFeedback(context.Background(), id)
	if err != nil || ok || len(fb) > MaxFeedbackBytes || !strings.HasPrefix(long, fb) || fb == "" {
		t.Fatalf("WaitFeedback = %v, %d bytes, %v", ok, len(fb), err)
	}
	if err := p.DenyWithFeedback("nope", "x"); err == nil {
		t.Error("feedback for an unknown request was accepted")
	}
}
