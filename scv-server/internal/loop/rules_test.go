package loop

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
)

// approvingSink records events and approves every approval request (an
// answer may come before the loop waits for it).
type approvingSink struct {
	approvals *approval.Pending
	mu        sync.Mutex
	events    []protocol.TurnEvent
}

func (s *approvingSink) Emit(_ context.Context, ev protocol.TurnEvent) error {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	if req, ok := ev.(*protocol.ApprovalRequested); ok {
		return s.approvals.Resolve(req.ApprovalID, true)
	}
	return nil
}

// TestGateWithRules: the policy decides first; a granted rule only
// replaces an Ask, and then tool.started names it; v1/v2 sessions (Rules
// nil) neither match nor propose rules.
func TestGateWithRules(t *testing.T) {
	t.Parallel()
	granted := protocol.Rule{Tool: "bash", Key: "bash:go test", Description: "bash commands that start with `go test`"}
	has := func(keys []string) (protocol.Rule, bool) {
		for _, k := range keys {
			if k == granted.Key {
				return granted, true
			}
		}
		return protocol.Rule{}, false
	}
	proposedGoBuild := &protocol.Rule{Tool: "bash", Key: "bash:go build", Description: "bash commands that start with `go build`"}
	tests := []struct {
		name        string
		policy      approval.Policy
		autoApprove bool
		rules       func([]string) (protocol.Rule, bool)
		risk        protocol.Risk
		rule        *tools.Rule
		keys        []string
		// want: the kinds of events, the rule tool.started names, the rule
		// approval.requested proposes.
		kinds     string
		startedBy *protocol.Rule
		proposed  *protocol.Rule
		denied    bool
	}{
		{name: "a matching rule runs the call unasked", policy: approval.OnRisk, rules: has, risk: protocol.RiskProcess,
			keys: []string{"bash:go test", "bash:go"}, kinds: "tool.started", startedBy: &granted},
		{name: "no matching rule asks and proposes", policy: approval.OnRisk, rules: has, risk: protocol.RiskProcess,
			rule: &tools.Rule{Key: "bash:go build", Description: proposedGoBuild.Description}, keys: []string{"bash:go build", "bash:go"},
			kinds: "approval.requested tool.started", proposed: proposedGoBuild},
		{name: "never denies whatever the rules", policy: approval.Never, rules: has, risk: protocol.RiskProcess,
			keys: []string{"bash:go test"}, kinds: "", denied: true},
		{name: "auto runs without naming a rule", policy: approval.Auto, rules: has, risk: protocol.RiskProcess,
			keys: []string{"bash:go test"}, kinds: "tool.started"},
		{name: "auto_approve runs without naming a rule", policy: approval.OnRisk, autoApprove: true, rules: has, risk: protocol.RiskProcess,
			keys: []string{"bash:go test"}, kinds: "tool.started"},
		{name: "read-only calls need no rule", policy: approval.OnRisk, rules: has, risk: protocol.RiskReadOnly,
			keys: []string{"bash:go test"}, kinds: "tool.started"},
		{name: "no keys: asks even with rules", policy: approval.OnRisk, rules: has, risk: protocol.RiskProcess,
			kinds: "approval.requested tool.started"},
		{name: "v1/v2: no matching, no proposal", policy: approval.OnRisk, risk: protocol.RiskProcess,
			rule: &tools.Rule{Key: "bash:go test"}, keys: []string{"bash:go test"}, kinds: "approval.requested tool.started"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pending := approval.NewPending()
			sink := &approvingSink{approvals: pending}
			l := newLoop(Config{Policy: tc.policy, AutoApprove: tc.autoApprove, Approvals: pending, Rules: tc.rules}, sink)
			call := provider.ToolCall{ID: "c1", Name: "bash"}
			ran := false
			plan := &tools.Plan{Risk: tc.risk, Summary: "Run", Rule: tc.rule, Keys: tc.keys, Run: func(context.Context) (tools.Result, error) {
				ran = true
				return tools.Result{Success: true, Output: "ok"}, nil
			}}
			rep := &reporter{ctx: context.Background(), sink: sink, call: call}
			res, _, _, err := l.gateAndRun(context.Background(), call, plan, rep)
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			var startedBy, proposed *protocol.Rule
			for _, ev := range sink.events {
				kinds = append(kinds, ev.Kind())
				switch ev := ev.(type) {
				case *protocol.ToolStarted:
					startedBy = ev.Rule
				case *protocol.ApprovalRequested:
					proposed = ev.Rule
				}
			}
			if got := strings.Join(kinds, " "); got != tc.kinds {
				t.Fatalf("events %q, want %q", got, tc.kinds)
			}
			if !sameRule(startedBy, tc.startedBy) || !sameRule(proposed, tc.proposed) {
				t.Fatalf("tool.started rule %+v, approval.requested rule %+v; want %+v and %+v", startedBy, proposed, tc.startedBy, tc.proposed)
			}
			if tc.denied {
				if ran || res.Success || !strings.Contains(res.Output, "denied") {
					t.Fatalf("ran %v, result %+v; want a denial", ran, res)
				}
			} else if !ran || !res.Success {
				t.Fatalf("ran %v, result %+v", ran, res)
			}
		})
	}
}

func sameRule(a, b *protocol.Rule) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
