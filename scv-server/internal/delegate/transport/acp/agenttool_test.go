package acp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/agenttool"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestThroughTheAgentTool runs the stand-in behind the `agent` tool, wired
// as the server wires it: two calls of one handle reach one server, a
// relayed permission reaches the turn's gate with the handle in its
// summary, and closing the session shuts the server down.
func TestThroughTheAgentTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	b := f.backend(t)
	set := agenttool.New(agenttool.Options{Backends: []delegate.Backend{b}, Workspace: f.work, SessionID: "s1", MaxDepth: 2,
		OnForget: func(_, cli string) { f.r.Forget(cli) }})
	var asked []string
	env := tools.Env{Workspace: f.work, OutputLimit: 64 << 10,
		Approve: func(_ context.Context, risk protocol.Risk, summary string) bool {
			asked = append(asked, string(risk)+" "+summary)
			return true
		}}
	call := func(args string) map[string]any {
		t.Helper()
		p, err := set.Tools()[0].Prepare(env, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		res, err := p.Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(res.Output), &out); err != nil {
			t.Fatalf("%s: %s", args, res.Output)
		}
		return out
	}
	first := call(`{"agent":"claude","prompt":"echo one"}`)
	if first["session"] != "claude-1" || !strings.HasPrefix(first["reply"].(string), "turn 1 ") {
		t.Fatalf("first call = %v", first)
	}
	second := call(`{"session":"claude-1","prompt":"echo two"}`)
	if second["session"] != "claude-1" || !strings.HasPrefix(second["reply"].(string), "turn 2 ") {
		t.Fatalf("second call = %v", second)
	}
	third := call(`{"session":"claude-1","prompt":"permission"}`)
	if third["reply"] != "permission: yes" || len(asked) != 1 || asked[0] != "process [claude-1 acp] Run rm -rf build (execute)" {
		t.Fatalf("third call = %v, asked %q", third, asked)
	}
	if n := len(f.requests(t, "initialize")); n != 1 {
		t.Fatalf("%d servers for one conversation", n)
	}
	keys := f.r.Live()
	set.Close(context.Background())
	if len(keys) != 1 {
		t.Fatalf("live servers before close: %v", keys)
	}
	waitFor(t, "the session's server to be shut down", func() bool {
		_, err := records.Read(f.home, keys[0])
		return err != nil && len(f.r.Live()) == 0
	})
}
