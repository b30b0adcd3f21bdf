package approval

import (
	"context"
	"errors"
	"testing"

	"github.com/scv-cli/scv/shared/protocol"
)

func TestResolveForSession(t *testing.T) {
	t.Parallel()
	rule := &protocol.Rule{Tool: "bash", Key: "bash:go test", Description: "bash commands that start with `go test`"}
	tests := []struct {
		name  string
		rule  *protocol.Rule
		setup func(p *Pending, id string)
		want  error
	}{
		{name: "grants the rule, then approves", rule: rule},
		{name: "no rule: refused, the request stays open", want: ErrNoRule},
		{name: "already resolved", rule: rule, want: ErrNotFound,
			setup: func(p *Pending, id string) { _ = p.Resolve(id, false) }},
		{name: "forgotten", rule: rule, want: ErrNotFound,
			setup: func(p *Pending, id string) { p.Forget(id) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPending()
			id := p.OpenWithRule(tc.rule)
			if tc.setup != nil {
				tc.setup(p, id)
			}
			var granted []protocol.Rule
			err := p.ResolveForSession(id, func(r protocol.Rule) {
				// The waiter has no answer yet while the rule is granted.
				if p.Len() != 0 {
					t.Errorf("Len = %d while granting, want 0 (resolved)", p.Len())
				}
				granted = append(granted, r)
			})
			if !errors.Is(err, tc.want) {
				t.Fatalf("ResolveForSession = %v, want %v", err, tc.want)
			}
			if tc.want != nil {
				if len(granted) != 0 {
					t.Fatalf("granted %+v on a refusal", granted)
				}
				if tc.want == ErrNoRule {
					// Still open: a plain answer goes through.
					if p.Len() != 1 {
						t.Fatalf("Len = %d, want the request still open", p.Len())
					}
					if err := p.Resolve(id, true); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			if len(granted) != 1 || granted[0] != *tc.rule {
				t.Fatalf("granted %+v, want %+v", granted, *tc.rule)
			}
			ok, err := p.Wait(context.Background(), id)
			if err != nil || !ok {
				t.Fatalf("Wait = %v, %v; want approved", ok, err)
			}
			if err := p.ResolveForSession(id, func(protocol.Rule) { t.Fatal("granted twice") }); !errors.Is(err, ErrNotFound) {
				t.Fatalf("second resolve = %v, want ErrNotFound", err)
			}
		})
	}
}
