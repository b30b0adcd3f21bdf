package servertest_test

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	"github.com/scv-cli/scv/shared/atomicfile"
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
	f := fo.Start(t)
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

// TestMCPServersInSessionStarted: a v4 client learns from session.started
// which MCP servers are up, with their tools, and why the others are not.
func TestMCPServersInSessionStarted(t *testing.T) {
	t.Parallel()
	bin := nodepkg.Bin(t, "mcp-server-everything")
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "") + fmt.Sprintf(`
[mcp_servers.everything]
command = %q

[mcp_servers.gone]
command = "/nonexistent/mcp-server"

[mcp_servers.off]
command = "/nonexistent/mcp-server"
enabled = false
`, bin)
	s := st.Start(t, st.Options{Config: cfg})
	c := s.Client
	c.Init(protocol.Version4)
	dir := t.TempDir()
	// The servers start with the runtime, not with the session: start
	// sessions until the real one is ready.
	var got []protocol.MCPServer
	for deadline := time.Now().Add(60 * time.Second); ; {
		got = c.StartSession(dir, protocol.Version4).MCPServers
		if len(got) == 3 && got[0].State == protocol.MCPReady && got[1].State == protocol.MCPFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcp_servers = %+v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got[0].Name != "everything" || !slices.Contains(got[0].Tools, "mcp__everything__echo") || got[0].Error != "" {
		t.Errorf("everything = %+v", got[0])
	}
	if got[1].Name != "gone" || len(got[1].Tools) != 0 || !strings.Contains(got[1].Error, "/nonexistent/mcp-server") {
		t.Errorf("gone = %+v", got[1])
	}
	if got[2].Name != "off" || got[2].State != protocol.MCPDisabled || len(got[2].Tools) != 0 || got[2].Error != "" {
		t.Errorf("off = %+v", got[2])
	}
}

// TestMCPServersAbsentBeforeV4: a v3 client's session.started has no
// mcp_servers (what it decodes, encoded again, has none: its bytes are
// what they always were); the same configuration tells a v4 client.
func TestMCPServersAbsentBeforeV4(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "") + "\n[mcp_servers.off]\ncommand = \"/nonexistent/mcp-server\"\nenabled = false\n"
	for _, v := range []int{protocol.Version3, protocol.Version4} {
		s := st.Start(t, st.Options{Config: cfg})
		s.Client.Init(v)
		started := s.Client.StartSession(t.TempDir(), v)
		raw, err := protocol.EncodeEvent(started)
		if err != nil {
			t.Fatal(err)
		}
		has := strings.Contains(string(raw), `"mcp_servers"`)
		if has != (v >= protocol.Version4) {
			t.Errorf("v%d session.started: %s", v, raw)
		}
	}
}

// TestMCPWholeServerRule: a v4 approval.requested of an MCP tool offers
// the whole server (wider_rule mcp:<server>/); approving with scope
// session_wider grants it, and another tool of the server then runs
// without asking. A v3 request offers no wider rule, and session_wider is
// an unknown scope there.
func TestMCPWholeServerRule(t *testing.T) {
	t.Parallel()
	bin := nodepkg.Bin(t, "mcp-server-everything")
	f := fo.Start(t)
	cfg := st.FakeProviderConfig(f.URL(), "") + fmt.Sprintf("\n[mcp_servers.everything]\ncommand = %q\n", bin)
	s := st.Start(t, st.Options{Config: cfg, ApprovalPolicy: "on-risk"})
	sid, _ := session(t, s, protocol.Version4)
	f.Enqueue(
		fo.Script(fo.ToolCall("c1", "mcp__everything__toggle-subscriber-updates", `{}`)),
		fo.Script(fo.ToolCall("c2", "mcp__everything__toggle-simulated-logging", `{}`)),
		fo.Script(fo.Text("done")),
	)
	c := s.Client
	c.Turn(sid, "toggle things")
	_, req := st.Until[*protocol.ApprovalRequested](c)
	want := protocol.Rule{Tool: "mcp__everything__toggle-subscriber-updates", Key: "mcp:everything/",
		Description: "calls of every tool from MCP server everything"}
	if req.CallID != "c1" || req.WiderRule == nil || !sameRule(req.WiderRule, want) {
		t.Fatalf("approval.requested = %+v (wider %+v)", req, req.WiderRule)
	}
	resolve(c, sid, req.ApprovalID, true, protocol.ScopeSessionWider)
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	if asked(evs, "c2") {
		t.Fatal("another tool of the server asked after the whole server was approved")
	}
	if s2 := started(evs, "c2"); s2 == nil || s2.Rule == nil || s2.Rule.Key != "mcp:everything/" {
		t.Fatalf("tool.started of c2 = %+v", s2)
	}
	if rules := listRules(t, c, sid); len(rules) != 1 || rules[0].Key != "mcp:everything/" {
		t.Fatalf("session rules = %+v", rules)
	}

	// v3: no wider rule, and the scope is refused.
	s3 := st.Start(t, st.Options{Config: cfg, ApprovalPolicy: "on-risk"})
	sid3, _ := session(t, s3, protocol.Version3)
	f.Enqueue(fo.Script(fo.ToolCall("d1", "mcp__everything__toggle-subscriber-updates", `{}`)), fo.Script(fo.Text("done")))
	s3.Client.Turn(sid3, "toggle")
	_, req3 := st.Until[*protocol.ApprovalRequested](s3.Client)
	if req3.WiderRule != nil || req3.Rule == nil {
		t.Fatalf("v3 approval.requested = %+v", req3)
	}
	resolve(s3.Client, sid3, req3.ApprovalID, true, protocol.ScopeSessionWider)
	if e := st.Expect[*protocol.Error](s3.Client); !strings.Contains(e.Message, `unknown scope "session_wider"`) {
		t.Fatalf("error = %+v", e)
	}
	resolve(s3.Client, sid3, req3.ApprovalID, false, "")
	st.Until[*protocol.TurnCompleted](s3.Client)
}

// TestMCPProgressAndCancel: notifications/progress of a real MCP server's
// long operation reach the client as tool.progress of the call; a turn
// cancelled in the middle of another such call ends at once (the call
// is cancelled with notifications/cancelled) and the server keeps
// serving the next turn.
func TestMCPProgressAndCancel(t *testing.T) {
	t.Parallel()
	bin := nodepkg.Bin(t, "mcp-server-everything")
	f := fo.NewServer()
	t.Cleanup(f.Close)
	cfg := st.FakeProviderConfig(f.URL(), "") + fmt.Sprintf("\n[mcp_servers.everything]\ncommand = %q\n", bin)
	s := st.Start(t, st.Options{Config: cfg, ApprovalPolicy: "auto"})
	sid, _ := session(t, s, 3)
	const long = "mcp__everything__trigger-long-running-operation"
	f.Enqueue(
		fo.Script(fo.ToolCall("p1", long, `{"duration":1,"steps":4}`)),
		fo.Script(fo.Text("done")),
	)
	c := s.Client
	c.Turn(sid, "run it")
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	var lines []string
	for _, e := range evs {
		if p, ok := e.(*protocol.ToolProgress); ok && p.CallID == "p1" && p.Name == long {
			lines = append(lines, p.Line)
		}
	}
	if len(lines) < 2 || !strings.Contains(lines[0], "/4") {
		t.Fatalf("tool.progress lines %q (events %s)", lines, st.Kinds(evs))
	}

	f.Enqueue(
		fo.Script(fo.ToolCall("p2", long, `{"duration":60,"steps":60}`)),
		fo.Script(fo.ToolCall("e1", "mcp__everything__get-sum", `{"a":2,"b":3}`)),
		fo.Script(fo.Text("after")),
	)
	turn := c.Turn(sid, "run it long")
	st.Until[*protocol.ToolProgress](c)
	began := time.Now()
	c.Send(&protocol.TurnCancel{RequestID: "c", SessionID: sid, TurnID: turn.TurnID})
	evs, _ = st.Until[*protocol.TurnCancelled](c)
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the cancelled call took %v to end", d)
	}
	if tc, ok := evs[len(evs)-2].(*protocol.ToolCompleted); !ok || tc.CallID != "p2" || tc.Success {
		t.Fatalf("after cancel: %s", st.Kinds(evs))
	}
	c.Turn(sid, "again")
	evs, _ = st.Until[*protocol.TurnCompleted](c)
	var sum *protocol.ToolCompleted
	for _, e := range evs {
		if tc, ok := e.(*protocol.ToolCompleted); ok && tc.CallID == "e1" {
			sum = tc
		}
	}
	if sum == nil || !sum.Success || !strings.Contains(sum.Output, "5") {
		t.Fatalf("the call after the cancelled turn: %+v (events %s)", sum, st.Kinds(evs))
	}
}

// TestMCPFollowsTheConfigFile: a running server (the daemon's, a TUI's)
// applies a changed config.toml's [mcp_servers] at the next turn: a server
// added there offers its tools to that turn's first request, a file that
// no longer loads changes nothing (the log says why), and a server removed
// stops offering its tools.
func TestMCPFollowsTheConfigFile(t *testing.T) {
	t.Parallel()
	bin := nodepkg.Bin(t, "mcp-server-everything")
	f := fo.Start(t)
	base := st.FakeProviderConfig(f.URL(), "")
	var logs strings.Builder
	var logMu sync.Mutex
	s := st.Start(t, st.Options{Config: base, Logger: slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))})
	sid, _ := session(t, s, 3)
	c := s.Client
	offered := func(prompt string) bool {
		t.Helper()
		n := len(f.Requests())
		f.Enqueue(fo.Script(fo.Text("ok")))
		c.Turn(sid, prompt)
		st.Until[*protocol.TurnCompleted](c)
		return strings.Contains(string(f.Requests()[n].Body), `"name":"mcp__everything__echo"`)
	}
	write := func(text string) {
		t.Helper()
		if err := atomicfile.WriteFile(filepath.Join(s.Home, "config.toml"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if offered("before") {
		t.Fatal("MCP tools offered before any server was configured")
	}
	write(base + fmt.Sprintf("\n[mcp_servers.everything]\ncommand = %q\n", bin))
	if !offered("after adding") {
		t.Fatal("the server added to config.toml did not offer its tools at the next turn")
	}
	write(base + "\n[mcp_servers.everything\n")
	if !offered("with a broken file") {
		t.Fatal("a file that does not load stopped the running server")
	}
	logMu.Lock()
	logged := logs.String()
	logMu.Unlock()
	if !strings.Contains(logged, "no longer loads; the MCP servers stay as they were") {
		t.Errorf("the log does not say the changed file was not applied:\n%s", logged)
	}
	write(base)
	if offered("after removing") {
		t.Fatal("the server removed from config.toml still offers its tools")
	}
}

// lockedWriter serialises a log's writes into a builder the test reads.
type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}
