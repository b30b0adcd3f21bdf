package servertest_test

import (
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestConfigWarningsInSessionStarted: what the log warns of the
// configuration also reaches a v4 client in session.started, so a UI can
// show it; a v3 client gets the bytes it always did.
func TestConfigWarningsInSessionStarted(t *testing.T) {
	t.Parallel()
	for _, version := range []int{protocol.Version3, protocol.Version4} {
		_, s := fake(t, "", st.Options{ApprovalPolicy: "auto"})
		s.Client.Init(version)
		started := s.Client.StartSession(t.TempDir(), version)
		found := false
		for _, w := range started.Warnings {
			found = found || strings.Contains(w, "Approval policy is auto")
		}
		if version == protocol.Version4 && !found {
			t.Errorf("v4 session.started warnings = %q, want the auto policy's", started.Warnings)
		}
		if version == protocol.Version3 && len(started.Warnings) != 0 {
			t.Errorf("v3 session.started carries warnings %q", started.Warnings)
		}
	}
}
