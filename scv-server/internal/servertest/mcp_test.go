package servertest_test

import (
	"fmt"
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit/nodepkg"
)

// TestMCPToolsThroughTheGate: the tools of a real MCP server
// (@modelcontextprotocol/server-everything) reach the model as
// mcp__<server>__<tool>; a readOnlyHint tool runs unasked under on-risk, a
// tool without it asks (proposing a rule for that tool), and a denied call
// never reaches the server.
func TestMCPToolsThroughTheGate(t *testing.T) {
	bin := nodepkg.Bin(t, "mcp-server-everything")
	f := fo.NewServer()
	t.Cleanup(f.Close)
	cfg := st.FakeProviderConfig(f.URL(), "") + fmt.Sprintf("\n[mcp_servers.everything]\ncommand = %q\n", bin)
	s := st.Start(t, st.Options{Config: cfg, ApprovalPolicy: "on-risk"})
	sid, _ := session(t, s, 3)
	f.Enqueue(
		fo.Script(fo.ToolCall("c1", "mcp__everything__echo", `{"message":"through the gate"}`)),
		fo.Script(fo.ToolCall("c2", "mcp__everything__toggle-subscriber-updates", `{}`)),
		fo.Script(fo.Text("done")),
	)
	c := s.Client
	c.Turn(sid, "use the tools")
	evs, req := st.Until[*protocol.ApprovalRequested](c)
	if asked(evs, "c1") || started(evs, "c1") == nil {
		t.Fatal("the read-only echo asked for approval")
	}
	wantRule := protocol.Rule{Tool: "mcp__everything__toggle-subscriber-updates", Key: "mcp:everything/toggle-subscriber-updates",
		Description: "calls of toggle-subscriber-updates from MCP server everything"}
	if req.CallID != "c2" || req.Risk != protocol.RiskProcess || !sameRule(req.Rule, wantRule) {
		t.Fatalf("approval.requested = %+v (rule %+v)", req, req.Rule)
	}
	resolve(c, sid, req.ApprovalID, false, "")
	rest, _ := st.Until[*protocol.TurnCompleted](c)
	evs = append(evs, rest...)
	var c1, c2 *protocol.ToolCompleted
	for _, e := range evs {
		if tc, ok := e.(*protocol.ToolCompleted); ok {
			switch tc.CallID {
			case "c1":
				c1 = tc
			case "c2":
				c2 = tc
			}
		}
	}
	if c1 == nil || !c1.Success || !strings.Contains(c1.Output, "through the gate") {
		t.Fatalf("echo completed %+v", c1)
	}
	if c2 == nil || c2.Success || !strings.Contains(c2.Output, "denied") || started(evs, "c2") != nil {
		t.Fatalf("denied call completed %+v", c2)
	}
	reqs := f.Requests()
	if len(reqs) == 0 || !strings.Contains(string(reqs[0].Body), `"name":"mcp__everything__echo"`) {
		t.Fatal("the first model request did not offer the MCP tools")
	}
}
