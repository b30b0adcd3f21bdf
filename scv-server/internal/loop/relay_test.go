package loop

import (
	"context"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestRelay: a request a running call relays (a nested SCV's) goes
// through the session's gate: the policy and auto_approve decide as for
// the session's own calls, an ask is approval.requested under the
// relaying call's id and name with the relayed risk and summary, and
// without a gate, or once ctx has ended, the answer is no.
func TestRelay(t *testing.T) {
	t.Parallel()
	call := provider.ToolCall{ID: "c1", Name: "agent"}
	for _, tc := range []struct {
		name        string
		policy      approval.Policy
		autoApprove bool
		risk        protocol.Risk
		want        bool
		kinds       string
	}{
		{"on-risk asks, approved", approval.OnRisk, false, protocol.RiskProcess, true, "approval.requested"},
		{"read-only runs unasked", approval.OnRisk, false, protocol.RiskReadOnly, true, ""},
		{"never denies unasked", approval.Never, false, protocol.RiskProcess, false, ""},
		{"auto_approve runs unasked", approval.OnRisk, true, protocol.RiskProcess, true, ""},
	} {
		pending := approval.NewPending()
		sink := &approvingSink{approvals: pending}
		l := newLoop(Config{Policy: tc.policy, AutoApprove: tc.autoApprove, Approvals: pending}, sink)
		if got := l.relay(call)(context.Background(), tc.risk, "[scv-1 depth 1] bash: go test"); got != tc.want {
			t.Fatalf("%s: relay = %v, want %v", tc.name, got, tc.want)
		}
		var kinds []string
		for _, ev := range sink.events {
			kinds = append(kinds, ev.Kind())
			if ar, ok := ev.(*protocol.ApprovalRequested); ok && (ar.CallID != "c1" || ar.Name != "agent" || ar.Risk != tc.risk ||
				ar.Summary != "[scv-1 depth 1] bash: go test" || ar.Rule != nil) {
				t.Fatalf("%s: approval.requested = %+v", tc.name, ar)
			}
		}
		if got := strings.Join(kinds, " "); got != tc.kinds {
			t.Fatalf("%s: events %q, want %q", tc.name, got, tc.kinds)
		}
	}
	if newLoop(Config{Policy: approval.OnRisk}, &approvingSink{}).relay(call) != nil {
		t.Fatal("a loop without an approval gate relays")
	}
	// Nobody answers: the request is withdrawn when ctx ends.
	pending := approval.NewPending()
	l := newLoop(Config{Policy: approval.OnRisk, Approvals: pending}, silentSink{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if l.relay(call)(ctx, protocol.RiskProcess, "x") {
		t.Fatal("a withdrawn request was approved")
	}
	if pending.Len() != 0 {
		t.Fatalf("%d requests left pending", pending.Len())
	}
}

// silentSink takes every event and answers nothing.
type silentSink struct{}

func (silentSink) Emit(context.Context, protocol.TurnEvent) error { return nil }
