package loop

import (
	"context"
	"errors"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestRelayedApprovals: a request an agent relays from inside a call is
// decided by the policy like a call of its risk, else the client is asked
// with an approval.requested naming the call; a cancelled turn stops the
// wait; without a gate there is no relay.
func TestRelayedApprovals(t *testing.T) {
	t.Parallel()
	call := provider.ToolCall{ID: "c1", Name: "agent"}
	for _, tc := range []struct {
		name        string
		policy      approval.Policy
		autoApprove bool
		risk        protocol.Risk
		want        bool
		asked       bool
	}{
		{"read-only runs", approval.OnRisk, false, protocol.RiskReadOnly, true, false},
		{"on-risk asks", approval.OnRisk, false, protocol.RiskProcess, true, true},
		{"never denies", approval.Never, false, protocol.RiskProcess, false, false},
		{"auto runs", approval.Auto, false, protocol.RiskFilesystem, true, false},
		{"auto_approve runs", approval.OnRisk, true, protocol.RiskProcess, true, false},
	} {
		pending := approval.NewPending()
		sink := &approvingSink{approvals: pending}
		l := newLoop(Config{Policy: tc.policy, AutoApprove: tc.autoApprove, Approvals: pending}, sink)
		ok, err := l.relayed(call)(context.Background(), tc.risk, "[claude-1 acp] Run ls (execute)")
		if err != nil || ok != tc.want {
			t.Errorf("%s: got %v, %v; want %v", tc.name, ok, err, tc.want)
		}
		var asked *protocol.ApprovalRequested
		for _, ev := range sink.events {
			if a, isReq := ev.(*protocol.ApprovalRequested); isReq {
				asked = a
			}
		}
		if (asked != nil) != tc.asked {
			t.Errorf("%s: asked = %+v, want asked %v", tc.name, asked, tc.asked)
		}
		if asked != nil && (asked.CallID != "c1" || asked.Name != "agent" || asked.Risk != tc.risk || asked.Summary != "[claude-1 acp] Run ls (execute)") {
			t.Errorf("%s: approval.requested = %+v", tc.name, asked)
		}
	}

	// A turn cancelled while the client is asked ends the wait.
	pending := approval.NewPending()
	l := newLoop(Config{Policy: approval.OnRisk, Approvals: pending}, nopSink{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if ok, err := l.relayed(call)(ctx, protocol.RiskProcess, "x"); ok || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait = %v, %v", ok, err)
	}
	if newLoop(Config{}, nopSink{}).relayed(call) != nil {
		t.Error("a loop without a gate relays")
	}
}

// nopSink drops events.
type nopSink struct{}

func (nopSink) Emit(context.Context, protocol.TurnEvent) error { return nil }
