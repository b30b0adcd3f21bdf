package appserver_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/dialect/appserver"
	"github.com/scv-cli/scv/shared/config"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/testkit/nodepkg"
)

// searchConfig turns the web_search tool on (a SearXNG instance that is
// never called).
const searchConfig = "\n[web]\nsearch = \"searxng\"\nsearxng_url = \"http://127.0.0.1:9\"\n"

// writeConfig replaces the user's configuration file of h.
func (h *harness) writeConfig(extra string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.home, "config.toml"), []byte(fo.Config(h.f.URL(), extra)), 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// toolNames are the function tools of the fake model's request i.
func (h *harness) toolNames(i int) []string {
	h.t.Helper()
	reqs := h.f.Requests()
	if i >= len(reqs) {
		h.t.Fatalf("the model had %d requests, not %d", len(reqs), i+1)
	}
	var out []string
	for _, tl := range reqs[i].Tools {
		out = append(out, tl.Name)
	}
	return out
}

// noTurns checks that thread tid has no turn and the model had no request.
func (h *harness) noTurns(tid string) {
	h.t.Helper()
	var read appserver.ThreadReadResult
	h.call("thread/read", appserver.ResumeParams{ThreadID: tid}, &read)
	if len(read.Turns) != 0 || len(h.f.Requests()) != 0 {
		h.t.Fatalf("a turn was made: %+v", read.Turns)
	}
}

// turn runs one turn that answers text and waits for its end.
func (h *harness) turn(tid, answer string) {
	h.t.Helper()
	h.f.Enqueue(fo.Script(fo.Text(answer)))
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("go")}, nil)
	h.until("turn/completed")
}

// TestToolsFollowConfiguration: each turn/start reads the configuration
// again, and the tools the model is offered follow it: web.search turned
// on between two turns adds web_search to the next turn, turned off again
// removes it, with no restart.
func TestToolsFollowConfiguration(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.init()
	tid := h.thread()
	h.turn(tid, "one")
	if got := h.toolNames(0); !slices.Contains(got, "bash") || slices.Contains(got, "web_search") {
		t.Fatalf("turn 1 offered %v", got)
	}
	h.writeConfig(searchConfig)
	h.turn(tid, "two")
	if got := h.toolNames(1); !slices.Contains(got, "web_search") || !slices.Contains(got, "bash") {
		t.Fatalf("turn 2, after web.search was set, offered %v", got)
	}
	h.writeConfig("")
	h.turn(tid, "three")
	if got := h.toolNames(2); slices.Contains(got, "web_search") || !slices.Contains(got, "bash") {
		t.Fatalf("turn 3, after web.search was unset, offered %v", got)
	}
}

// TestRunningTurnKeepsTools: a configuration change that a turn/followUp
// resolves while a turn runs applies to the follow-up turn, not to the
// running one, whose later model requests use the model and offer the
// tools it started with.
func TestRunningTurnKeepsTools(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.f.Enqueue(
		fo.Script(fo.ToolCall("call_1", "bash", `{"command":"echo hi"}`)),
		fo.Script(fo.Text("first done")),
		fo.Script(fo.Text("follow-up done")),
	)
	h.init()
	tid := h.thread()
	var ts appserver.TurnStartResult
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("run it")}, &ts)
	msgs := h.until("approval/request")
	h.writeConfig(searchConfig)
	cfg := filepath.Join(h.home, "config.toml")
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(data), `model = "fake-model"`, `model = "other-model"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	var q appserver.TurnQueuedResult
	h.call("turn/followUp", appserver.TurnSteerParams{ThreadID: tid, ExpectedTurnID: ts.TurnID, Input: text("then this")}, &q)
	if err := h.c.Respond(msgs[len(msgs)-1].ID, appserver.ApprovalDecision{Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	h.until("turn/completed")
	msgs = h.until("turn/completed")
	var done appserver.TurnCompletedParams
	_ = json.Unmarshal(msgs[len(msgs)-1].Params, &done)
	if done.FinalOutput != "follow-up done" {
		t.Fatalf("the follow-up ended with %+v", done)
	}
	first, second, follow := h.toolNames(0), h.toolNames(1), h.toolNames(2)
	if !slices.Equal(first, second) || slices.Contains(second, "web_search") {
		t.Fatalf("the running turn's tools changed: %v then %v", first, second)
	}
	if !slices.Contains(follow, "web_search") {
		t.Fatalf("the follow-up turn offered %v", follow)
	}
	reqs := h.f.Requests()
	if reqs[0].Model != "fake-model" || reqs[1].Model != "fake-model" || reqs[2].Model != "other-model" {
		t.Fatalf("models of the requests: %q %q %q", reqs[0].Model, reqs[1].Model, reqs[2].Model)
	}
}

// TestToolResolutionError: a configuration that loads but whose tools
// cannot be set up (an auto-approve domain web_fetch refuses) answers
// turn/start with -32603 and makes no turn; the thread keeps working once
// it is fixed.
func TestToolResolutionError(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.init()
	tid := h.thread()
	h.writeConfig("\n[web]\nauto_approve_domains = [\".127.0.0.1\"]\n")
	err := h.c.Call(ctx(t), "turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("hi")}, nil)
	if rpcCode(t, err) != appserver.CodeInternal || !strings.Contains(err.Error(), "auto_approve_domains") {
		t.Fatalf("turn/start with unusable tools: %v", err)
	}
	h.noTurns(tid)
	h.writeConfig("")
	h.turn(tid, "fine")
}

// mcpNames are the MCP tools among names.
func mcpNames(names []string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "mcp__") {
			out = append(out, n)
		}
	}
	return out
}

// TestMCPToolsFollowConfiguration: with a real MCP server
// (@modelcontextprotocol/server-everything), a tool turned off in its
// [mcp_servers] table between two turns is gone from the next turn, and
// the server's removal from the configuration removes all its tools.
func TestMCPToolsFollowConfiguration(t *testing.T) {
	t.Parallel()
	bin := nodepkg.Bin(t, "mcp-server-everything")
	server := fmt.Sprintf("\n[mcp_servers.everything]\ncommand = %q\n", bin)
	h := start(t, options{extra: server})
	h.init()
	tid := h.thread()
	h.turn(tid, "one")
	first := mcpNames(h.toolNames(0))
	if !slices.Contains(first, "mcp__everything__echo") || len(first) < 2 {
		t.Fatalf("turn 1 offered the MCP tools %v", first)
	}
	h.writeConfig(server + "disabled_tools = [\"echo\"]\n")
	h.turn(tid, "two")
	second := mcpNames(h.toolNames(1))
	if slices.Contains(second, "mcp__everything__echo") || len(second) != len(first)-1 {
		t.Fatalf("turn 2, after echo was turned off, offered %v (turn 1: %v)", second, first)
	}
	h.writeConfig("")
	h.turn(tid, "three")
	if got := h.toolNames(2); len(mcpNames(got)) != 0 || !slices.Contains(got, "bash") {
		t.Fatalf("turn 3, after the server was removed, offered %v", got)
	}
}

// TestMCPServerAddedLive: an MCP server added to the configuration while
// the App Server runs (written as `scv mcp add` writes it) starts at the
// next turn/start, and that turn's model calls its tool; a changed setting
// (its env) starts it again with the new value, and its removal stops it.
// The App Server never restarts.
func TestMCPServerAddedLive(t *testing.T) {
	t.Parallel()
	bin := nodepkg.Bin(t, "mcp-server-everything")
	h := start(t, options{})
	h.init()
	var th appserver.Thread
	h.call("thread/start", appserver.ThreadStartParams{AgentKey: "full-access", Cwd: h.ws}, &th)
	tid := th.ThreadID
	h.turn(tid, "one")
	if got := mcpNames(h.toolNames(0)); len(got) != 0 || len(h.rt.MCP.Statuses()) != 0 {
		t.Fatalf("before any server was added: tools %v, servers %+v", got, h.rt.MCP.Statuses())
	}

	add := func(given string) {
		t.Helper()
		srv := config.DefaultMCPServer()
		srv.Command, srv.Env = bin, map[string]string{"GIVEN": given}
		if err := config.AddMCPServer(h.home, "everything", srv, paths.MapEnv(map[string]string{"SCV_HOME": h.home})); err != nil {
			t.Fatal(err)
		}
	}
	// getEnv runs a turn whose model calls get-env, and returns the
	// result the model read back (the last message of its next request).
	getEnv := func(req int) string {
		t.Helper()
		h.f.Enqueue(fo.Script(fo.ToolCall("c"+strconv.Itoa(req), "mcp__everything__get-env", `{}`)), fo.Script(fo.Text("read it")))
		h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("env?")}, nil)
		h.until("turn/completed")
		if got := h.toolNames(req); !slices.Contains(got, "mcp__everything__get-env") {
			t.Fatalf("request %d offered %v (servers %+v)", req, got, h.rt.MCP.Statuses())
		}
		msgs := h.f.Requests()[req+1].Messages
		return msgs[len(msgs)-1].Content
	}

	add("first-value-4711")
	if out := getEnv(1); !strings.Contains(out, "first-value-4711") {
		t.Fatalf("the added server's get-env: %s", out)
	}

	if err := config.RemoveMCPServer(h.home, "everything", paths.MapEnv(map[string]string{"SCV_HOME": h.home})); err != nil {
		t.Fatal(err)
	}
	add("second-value-4712")
	if out := getEnv(3); !strings.Contains(out, "second-value-4712") || strings.Contains(out, "first-value-4711") {
		t.Fatalf("get-env after the server's env changed: %s", out)
	}

	h.writeConfig("")
	h.turn(tid, "gone")
	if got := mcpNames(h.toolNames(5)); len(got) != 0 || len(h.rt.MCP.Statuses()) != 0 {
		t.Fatalf("after the server was removed: tools %v, servers %+v", got, h.rt.MCP.Statuses())
	}
}
