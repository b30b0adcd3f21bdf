package read

import (
	"testing"

	"github.com/scv-cli/scv/shared/protocol"
)

// TestNoSessionRule: reading a secret-like name asks every time (no rule
// proposed, no key that a granted rule could match); other reads never
// ask, so they need none either.
func TestNoSessionRule(t *testing.T) {
	t.Parallel()
	env := newEnv(t, 1024, map[string]string{".env": "KEY=1", "main.go": "package main", "certs/server.pem": "x"})
	tests := []struct {
		path string
		risk protocol.Risk
	}{
		{".env", protocol.RiskFilesystem},
		{"certs/server.pem", protocol.RiskFilesystem},
		{".ssh/id_ed25519", protocol.RiskFilesystem},
		{"main.go", protocol.RiskReadOnly},
		{".", protocol.RiskReadOnly},
	}
	for _, tc := range tests {
		plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": tc.path}))
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if plan.Risk != tc.risk || plan.Rule != nil || len(plan.Keys) != 0 {
			t.Errorf("%s: risk %s, rule %+v, keys %q; want risk %s and no rule or key", tc.path, plan.Risk, plan.Rule, plan.Keys, tc.risk)
		}
	}
}
