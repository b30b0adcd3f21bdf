//go:build linux

package servertest_test

import (
	"fmt"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestBashDoesNotSeeTheProviderKey: the active provider's key variable,
// whatever its name (here one that does not end in _API_KEY), is removed
// from the environment of bash commands; other variables stay (issue 14,
// item 1). Not parallel: it sets the process environment bash inherits.
func TestBashDoesNotSeeTheProviderKey(t *testing.T) {
	const secret = "sk-moonshot-must-not-leak"
	t.Setenv("MOONSHOT_TOKEN", secret)
	t.Setenv("SCV_TEST_VISIBLE", "visible")
	f := fo.Start(t)
	cfg := fmt.Sprintf(`[provider]
active = "moon"

[providers.moon]
kind = "openai"
base_url = %q
api_key_env = "MOONSHOT_TOKEN"
model = "fake-model"
context_max_tokens = 1000000
max_retries = 0
`, f.URL())
	s := st.Start(t, st.Options{Config: cfg, ApprovalPolicy: "auto", Env: map[string]string{"MOONSHOT_TOKEN": secret}})
	sid, _ := session(t, s, 3)
	f.Enqueue(
		fo.Script(fo.ToolCall("b1", "bash", `{"command":"echo \"key=${MOONSHOT_TOKEN-unset} other=${SCV_TEST_VISIBLE-unset}\""}`)),
		fo.Script(fo.Text("done")),
	)
	s.Client.Turn(sid, "show the environment")
	_, done := st.Until[*protocol.ToolCompleted](s.Client)
	st.Until[*protocol.TurnCompleted](s.Client)
	if done.Output != "exit 0\nkey=unset other=visible\n" {
		t.Fatalf("bash saw %q", done.Output)
	}
}
