package appserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/dialect/appserver"
	"github.com/scv-cli/scv/scv-server/internal/server"
	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit"
	"github.com/scv-cli/scv/shared/testkit/golden"
)

func TestMain(m *testing.M) {
	restore := testkit.IsolateHome()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { restore(); os.Exit(code) }))
}

// wait bounds every wait; tests never rely on it for ordering.
const wait = 20 * time.Second

// harness is a runtime serving the App Server over pipes, with a client.
type harness struct {
	t    testing.TB
	f    *fo.Server
	rt   *server.Runtime
	home string
	ws   string
	c    *appserver.Client
	p    *st.Piped

	mu         sync.Mutex
	transcript bytes.Buffer // guarded by mu
}

type options struct {
	extra  string // appended to config.toml
	policy string
	home   string // SCV_HOME; empty: a new one
	f      *fo.Server
}

func start(t testing.TB, o options) *harness {
	t.Helper()
	f := o.f
	if f == nil {
		f = fo.Start(t)
	}
	home := o.home
	if home == "" {
		home = t.TempDir()
	}
	rt := st.NewRuntime(t, home, fo.Config(f.URL(), o.extra), o.policy)
	h := &harness{t: t, f: f, rt: rt, home: home, ws: t.TempDir()}
	h.p = st.Pipe(t, "ServeAppServer", wait, rt.ServeAppServer)
	h.c = appserver.NewClient(h.p.Out, h.p.In)
	h.c.Trace = func(dir string, line []byte) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.transcript.WriteString(dir + " " + string(line) + "\n")
	}
	t.Cleanup(h.stop)
	return h
}

// stop ends the client's input and waits for the server to end.
func (h *harness) stop() { h.p.Stop() }

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return c
}

func (h *harness) call(method string, params, result any) {
	h.t.Helper()
	if err := h.c.Call(ctx(h.t), method, params, result); err != nil {
		h.t.Fatalf("%s: %v", method, err)
	}
}

func (h *harness) init() appserver.InitializeResult {
	h.t.Helper()
	var r appserver.InitializeResult
	h.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "go-test", "version": "1"}}, &r)
	return r
}

func (h *harness) thread() string {
	h.t.Helper()
	var th appserver.Thread
	h.call("thread/start", appserver.ThreadStartParams{AgentKey: "default", Cwd: h.ws, Metadata: map[string]any{"title": "Investigate repo"}}, &th)
	return th.ThreadID
}

func text(s string) []appserver.InputItem { return []appserver.InputItem{{Type: "text", Text: s}} }

// until reads messages until one has method.
func (h *harness) until(method string) []appserver.Message {
	h.t.Helper()
	msgs, err := h.c.Until(ctx(h.t), func(m appserver.Message) bool { return m.Method == method })
	if err != nil {
		h.t.Fatalf("waiting for %s: %v (got %s)", method, err, methods(msgs))
	}
	return msgs
}

func methods(msgs []appserver.Message) string {
	var out []string
	for _, m := range msgs {
		switch {
		case m.Method != "":
			out = append(out, m.Method)
		default:
			out = append(out, "response")
		}
	}
	return strings.Join(out, " ")
}

var (
	uuidRE  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timeRE  = regexp.MustCompile(`"(createdAt|updatedAt|startedAt|completedAt)":\d+`)
	durRE   = regexp.MustCompile(`"durationMs":\d+`)
	reqIDRE = regexp.MustCompile(`app-\d+`)
)

// normalize replaces what changes from run to run: ids by their order of
// appearance, timestamps, durations, the workspace path.
func (h *harness) normalize(s string) string {
	s = strings.ReplaceAll(s, h.ws, "$WS")
	seen := map[string]string{}
	s = uuidRE.ReplaceAllStringFunc(s, func(u string) string {
		if r, ok := seen[u]; ok {
			return r
		}
		seen[u] = "ID" + strconv.Itoa(len(seen)+1)
		return seen[u]
	})
	s = timeRE.ReplaceAllString(s, `"$1":0`)
	s = durRE.ReplaceAllString(s, `"durationMs":1`)
	return reqIDRE.ReplaceAllString(s, "app-N")
}

func (h *harness) transcriptText() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.transcript.String()
}

// TestGoldenApprovalTurn: initialize → thread/start → turn/start with a
// tool call needing approval → answered → turn/completed → thread/read,
// whose items equal the live items.
func TestGoldenApprovalTurn(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	h.f.Enqueue(
		fo.Script(fo.Text("Let me look."), fo.ToolCall("call_1", "bash", `{"command":"echo hello"}`), fo.Usage(10, 4)),
		fo.Script(fo.Text("The workspace ", "says hello."), fo.CachedUsage(20, 5, 16)),
	)
	h.init()
	if err := h.c.Notify("initialized", nil); err != nil {
		t.Fatal(err)
	}
	tid := h.thread()
	h.until("thread/started")
	var ts appserver.TurnStartResult
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("Summarize the workspace")}, &ts)
	if ts.Status != "running" || ts.TurnID == "" {
		t.Fatalf("turn/start = %+v", ts)
	}
	msgs := h.until("approval/request")
	req := msgs[len(msgs)-1]
	if err := h.c.Respond(req.ID, appserver.ApprovalDecision{Decision: "allow_session"}); err != nil {
		t.Fatal(err)
	}
	msgs = append(msgs, h.until("turn/completed")...)
	// Read up to the last notification before the next request, so the
	// transcript's order does not depend on the reader's timing.
	h.until("thread/status/changed")
	var read appserver.ThreadReadResult
	h.call("thread/read", appserver.ResumeParams{ThreadID: tid}, &read)

	// The live items' final states equal thread/read's items.
	live := map[string]appserver.Item{}
	var order []string
	for _, m := range msgs {
		if m.Method != "item/completed" && m.Method != "item/started" {
			continue
		}
		var it appserver.Item
		if err := json.Unmarshal(m.Params, &it); err != nil {
			t.Fatal(err)
		}
		if _, ok := live[it.ItemID]; !ok {
			order = append(order, it.ItemID)
		}
		live[it.ItemID] = it
	}
	if len(read.Items) != len(order) {
		t.Fatalf("thread/read has %d items, the live stream %d", len(read.Items), len(order))
	}
	for i, it := range read.Items {
		want, _ := json.Marshal(live[order[i]])
		got, _ := json.Marshal(it)
		if !bytes.Equal(want, got) {
			t.Errorf("item %d:\n read %s\n live %s", i, got, want)
		}
	}
	h.stop()
	golden.Equal(t, "testdata/approval_turn.jsonl", h.normalize(h.transcriptText()))
}
