package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit"
	"github.com/scv-cli/scv/shared/testkit/nodepkg"
)

func stdioServer(cmd string, args ...string) config.MCPServer {
	c := config.DefaultMCPServer()
	c.Command, c.Args = cmd, args
	return c
}

// goStdio is the test binary as an MCP server.
func goStdio(t testing.TB) config.MCPServer {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := stdioServer(exe)
	c.Env = map[string]string{helperVar: "1"}
	return c
}

func start(t testing.TB, opts Options) *Manager {
	t.Helper()
	if opts.Backoff == 0 {
		opts.Backoff = 50 * time.Millisecond
	}
	m := New(opts)
	m.Start(context.Background())
	t.Cleanup(m.Close)
	settle(t, m)
	return m
}

func find(t testing.TB, m *Manager, name string) tools.SourceTool {
	t.Helper()
	for _, st := range m.Tools() {
		if st.Spec.Name == name {
			return st
		}
	}
	t.Fatalf("no tool %s among %+v", name, m.Statuses())
	return tools.SourceTool{}
}

// call validates args as the agent loop does, prepares and runs the call.
func call(t testing.TB, ctx context.Context, m *Manager, name, args string, env tools.Env) (*tools.Plan, tools.Result, error) {
	t.Helper()
	reg := tools.NewRegistry()
	reg.AddSource(m)
	canon, err := reg.Validate(name, args)
	if err != nil {
		t.Fatalf("Validate(%s, %s): %v", name, args, err)
	}
	tl, _ := reg.Lookup(name)
	plan, err := tl.Prepare(env, canon)
	if err != nil {
		t.Fatal(err)
	}
	res, err := plan.Run(ctx)
	return plan, res, err
}

func TestEverythingServer(t *testing.T) {
	t.Parallel()
	bin := nodepkg.Bin(t, "mcp-server-everything")
	srv := stdioServer(bin)
	srv.Env = map[string]string{"GIVEN": "$SCV_TEST_GIVEN"}
	srv.DisabledTools = []string{"toggle-simulated-logging"}
	environ := append(os.Environ(), "SCV_TEST_SECRET_TOKEN=leak-me-not")
	m := start(t, Options{Servers: map[string]config.MCPServer{"everything": srv}, Environ: environ,
		Env: paths.MapEnv(map[string]string{"SCV_TEST_GIVEN": "given-value"})})
	st := m.Statuses()[0]
	if st.State != StateReady || !slices.Contains(st.Tools, "mcp__everything__echo") || slices.Contains(st.Tools, "mcp__everything__toggle-simulated-logging") {
		t.Fatalf("status = %+v", st)
	}
	ctx := context.Background()
	env := tools.Env{OutputLimit: 64 << 10}

	// notifications/tools/list_changed: the server registers its
	// conditional tools (simulate-research-query among them) once
	// initialized and says so; SCV lists its tools again (a second listing
	// moves the generation past the first's).
	waitFor(t, func() bool {
		st := m.Statuses()[0]
		return m.Generation() >= 2 && st.Restarts == 0 && slices.Contains(st.Tools, "mcp__everything__simulate-research-query")
	}, "the tools listed again after list_changed")

	plan, res, err := call(t, ctx, m, "mcp__everything__echo", `{"message":"hi there"}`, env)
	if err != nil || !res.Success || !strings.Contains(res.Output, "hi there") {
		t.Fatalf("echo: %+v %v", res, err)
	}
	if plan.Risk != protocol.RiskReadOnly || plan.Rule.Key != "mcp:everything/echo" || !slices.Equal(plan.Keys, []string{"mcp:everything/echo", "mcp:everything/"}) {
		t.Errorf("echo plan = %+v", plan)
	}
	// Arguments are checked against the server's schema before any call.
	reg := tools.NewRegistry()
	reg.AddSource(m)
	if _, err := reg.Validate("mcp__everything__echo", `{"message":3}`); err == nil || !strings.Contains(err.Error(), "message") {
		t.Errorf("bad arguments: %v", err)
	}
	// Not read-only: asks under on-risk.
	if p, _, _ := prepareOnly(t, m, "mcp__everything__toggle-subscriber-updates", `{}`); p.Risk != protocol.RiskProcess {
		t.Errorf("toggle risk = %s", p.Risk)
	}

	// The child environment: the allow-list and what env names, not the
	// server's other variables.
	_, res, err = call(t, ctx, m, "mcp__everything__get-env", `{}`, env)
	if err != nil || !strings.Contains(res.Output, "given-value") || strings.Contains(res.Output, "leak-me-not") || !strings.Contains(res.Output, "PATH") {
		t.Fatalf("get-env: %v\n%s", err, res.Output)
	}

	// Images are described, not sent.
	_, res, _ = call(t, ctx, m, "mcp__everything__get-tiny-image", `{}`, env)
	if !strings.Contains(res.Output, "[image: image/png") {
		t.Errorf("image: %s", res.Output)
	}

	// Progress notifications reach the call's progress function.
	var mu sync.Mutex
	var lines []string
	penv := env
	penv.Progress = func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() }
	_, res, err = call(t, ctx, m, "mcp__everything__trigger-long-running-operation", `{"duration":1,"steps":3}`, penv)
	mu.Lock()
	n := len(lines)
	mu.Unlock()
	if err != nil || !res.Success || n < 2 {
		t.Fatalf("long operation: %+v %v, progress %q", res, err, lines)
	}

	// Cancelling the turn ends the call at once.
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, _, err = call(t, cctx, m, "mcp__everything__trigger-long-running-operation", `{"duration":20,"steps":4}`, env)
	if err == nil || time.Since(began) > 5*time.Second {
		t.Fatalf("cancelled call: %v after %v", err, time.Since(began))
	}
	// The server still serves after a cancelled call.
	if _, res, _ := call(t, ctx, m, "mcp__everything__get-sum", `{"a":2,"b":3}`, env); !strings.Contains(res.Output, "5") {
		t.Errorf("after cancel: %s", res.Output)
	}
}

func prepareOnly(t testing.TB, m *Manager, name, args string) (*tools.Plan, tools.Tool, error) {
	t.Helper()
	tl := find(t, m, name).Tool
	p, err := tl.Prepare(tools.Env{}, json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	return p, tl, nil
}

func TestFilesystemServer(t *testing.T) {
	t.Parallel()
	bin := nodepkg.Bin(t, "mcp-server-filesystem")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("hello from a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := start(t, Options{Servers: map[string]config.MCPServer{"fs": stdioServer(bin, dir)}})
	p, res, err := call(t, context.Background(), m, "mcp__fs__read_text_file", `{"path":"`+filepath.Join(dir, "note.txt")+`"}`, tools.Env{OutputLimit: 4096})
	if err != nil || !res.Success || !strings.Contains(res.Output, "hello from a file") {
		t.Fatalf("read_text_file: %+v %v (%+v)", res, err, m.Statuses())
	}
	if p.Risk != protocol.RiskReadOnly {
		t.Errorf("read risk = %s", p.Risk)
	}
	if p, _, _ := prepareOnly(t, m, "mcp__fs__write_file", `{}`); p.Risk == protocol.RiskReadOnly {
		t.Error("write_file is read-only")
	}
}

func TestServerThatNeverStarts(t *testing.T) {
	t.Parallel()
	hang := stdioServer("sleep", "60")
	hang.StartupTimeoutSeconds = 1
	missing := stdioServer("/nonexistent/mcp-server")
	unset := goStdio(t)
	unset.Env["TOKEN"] = "$SCV_TEST_NOT_SET"
	began := time.Now()
	m := start(t, Options{MaxRestarts: 1, Servers: map[string]config.MCPServer{"hang": hang, "missing": missing, "unset": unset}})
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("settling took %v", d)
	}
	want := map[string]string{
		"hang":    "did not answer initialize within startup_timeout_seconds = 1",
		"missing": "cannot start \"/nonexistent/mcp-server\"",
		"unset":   "env TOKEN: the environment variable SCV_TEST_NOT_SET is not set",
	}
	for _, st := range m.Statuses() {
		if (st.State != StateFailed && st.State != StateRestarting) || !strings.Contains(st.Error, want[st.Name]) {
			t.Errorf("%s: %+v, want failed with %q", st.Name, st, want[st.Name])
		}
	}
	if len(m.Tools()) != 0 {
		t.Errorf("tools of failed servers: %d", len(m.Tools()))
	}
}

func TestGoServerOverStdio(t *testing.T) {
	t.Parallel()
	srv := goStdio(t)
	slow := goStdio(t)
	slow.ToolTimeoutSeconds = 1
	cancelled := filepath.Join(t.TempDir(), "cancelled")
	slow.Env["SCV_MCP_CANCELLED_FILE"] = cancelled
	m := start(t, Options{SpillMaxBytes: 10 << 20, Servers: map[string]config.MCPServer{"go": srv, "slow": slow}})
	st := m.Statuses()[0]
	if st.State != StateReady {
		t.Fatalf("status %+v", st)
	}
	// Bad schema and bad name skipped with why; no properties repaired.
	joined := strings.Join(st.Skipped, "\n")
	if !strings.Contains(joined, "badref: its input schema does not resolve") || !strings.Contains(joined, `bad.name: the name`) {
		t.Errorf("skipped = %q", st.Skipped)
	}
	if s := string(find(t, m, "mcp__go__noprops").Spec.Schema); s != `{"properties":{},"type":"object"}` {
		t.Errorf("repaired schema = %s", s)
	}
	ctx := context.Background()

	// A huge result is bounded like bash's, the rest in a spill file.
	state := t.TempDir()
	env := tools.Env{OutputLimit: 4096, StateDir: state}
	_, res, err := call(t, ctx, m, "mcp__go__huge", `{"bytes":2000000}`, env)
	if err != nil || !res.Truncated || len(res.Output) > 4096 || !strings.HasPrefix(res.Output, "HEAD") || !strings.Contains(res.Output, "TAIL\n[output truncated: 2000008 bytes in total") {
		t.Fatalf("huge: %v %d bytes\n%s", err, len(res.Output), res.Output)
	}
	spills, _ := filepath.Glob(filepath.Join(state, tools.SpillDir, "mcp-*.log"))
	if len(spills) != 1 {
		t.Fatalf("spill files %q", spills)
	}
	if fi, _ := os.Stat(spills[0]); fi.Size() != 2000008 || fi.Mode().Perm() != 0o600 {
		t.Errorf("spill file %v", fi)
	}

	// A tool that hangs past tool_timeout_seconds fails, and the server
	// is told to cancel it.
	began := time.Now()
	_, res, err = call(t, ctx, m, "mcp__slow__hang", `{}`, env)
	if err != nil || res.Success || !strings.Contains(res.Output, "timed out after 1 s") || time.Since(began) > 5*time.Second {
		t.Fatalf("hang: %+v %v", res, err)
	}
	waitFor(t, func() bool { _, err := os.Stat(cancelled); return err == nil }, "the server saw notifications/cancelled")

	// Cancelling the turn cancels the call the same way.
	if err := os.Remove(cancelled); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(200*time.Millisecond, cancel)
	if _, _, err = call(t, cctx, m, "mcp__slow__hang", `{}`, env); !errors.Is(err, context.Canceled) {
		t.Fatalf("hang cancelled by its turn: %v", err)
	}
	waitFor(t, func() bool { _, err := os.Stat(cancelled); return err == nil }, "the server saw notifications/cancelled of the turn")

	// A crash in the middle of a call fails the call; the server is
	// started again and serves.
	_, res, err = call(t, ctx, m, "mcp__go__crash", `{}`, env)
	if err != nil || res.Success || !strings.Contains(res.Output, "MCP server go") {
		t.Fatalf("crash: %+v %v", res, err)
	}
	waitFor(t, func() bool { st := m.Statuses()[0]; return st.State == StateReady && st.Restarts == 1 }, "the server restarted")
	if _, res, _ := call(t, ctx, m, "mcp__go__echo", `{"message":"back"}`, env); res.Output != "echo: back" {
		t.Errorf("after restart: %q", res.Output)
	}
}

func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	testkit.Eventually(t, 15*time.Second, what, cond)
}

func TestStreamableHTTPServer(t *testing.T) {
	t.Parallel()
	s := goServer()
	var mu sync.Mutex
	var auth string
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close) // after the manager's Close, which start registers later
	srv := config.DefaultMCPServer()
	srv.URL = hs.URL
	srv.Headers = map[string]string{"Authorization": "${SCV_TEST_TOKEN}"}
	srv.EnabledTools = []string{"echo", "later"}
	m := start(t, Options{Servers: map[string]config.MCPServer{"remote": srv}, Env: paths.MapEnv(map[string]string{"SCV_TEST_TOKEN": "Bearer t0k"})})
	if st := m.Statuses()[0]; st.State != StateReady || !slices.Equal(st.Tools, []string{"mcp__remote__echo"}) {
		t.Fatalf("status %+v", st)
	}
	plan, res, err := call(t, context.Background(), m, "mcp__remote__echo", `{"message":"over http"}`, tools.Env{OutputLimit: 4096})
	if err != nil || res.Output != "echo: over http" || plan.Risk != protocol.RiskReadOnly {
		t.Fatalf("echo: %+v %v", res, err)
	}
	mu.Lock()
	if auth != "Bearer t0k" {
		t.Errorf("Authorization = %q", auth)
	}
	mu.Unlock()

	// notifications/tools/list_changed: the new tool is offered, and the
	// generation tells turns to rebuild their tool list.
	gen := m.Generation()
	s.AddTool(&sdk.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "later"}}}, nil
		})
	waitFor(t, func() bool { return m.Generation() != gen && len(m.Tools()) == 2 }, "the list changed")
	if p, _, _ := prepareOnly(t, m, "mcp__remote__later", `{}`); p.Risk != protocol.RiskNetwork {
		t.Errorf("later risk = %s", p.Risk)
	}
}

// TestCloseJoinsRefresh: Close waits for the refresh a list_changed
// started. The refresh is held in its warning (the list fails), which no
// context ends: Close must not return before it does. Serial: it checks
// the goroutines of the whole process.
func TestCloseJoinsRefresh(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	s := goServer()
	var lists atomic.Int32
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" && lists.Add(1) > 1 {
				return nil, errors.New("no list today")
			}
			return next(ctx, method, req)
		}
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	hs := httptest.NewServer(h)
	defer hs.Close()
	srv := config.DefaultMCPServer()
	srv.URL = hs.URL
	held := &holdHandler{match: "Could not list", entered: make(chan struct{}, 1), release: make(chan struct{})}
	m := New(Options{Servers: map[string]config.MCPServer{"remote": srv}, Logger: slog.New(held)})
	m.Start(context.Background())
	settle(t, m)
	s.AddTool(&sdk.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return nil, nil })
	select {
	case <-held.entered:
	case <-time.After(15 * time.Second):
		close(held.release)
		t.Fatal("no refresh after list_changed")
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		m.Close()
	}()
	select {
	case <-closed:
		t.Error("Close returned while a refresh was running")
	case <-time.After(300 * time.Millisecond):
	}
	close(held.release)
	select {
	case <-closed:
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not return after the refresh ended")
	}
	hs.Close()
	goleak.VerifyNone(t, ignore)
}

// holdHandler is a slog handler that holds the first record whose message
// contains match until release is closed.
type holdHandler struct {
	match   string
	entered chan struct{} // capacity 1
	release chan struct{}
}

func (h *holdHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *holdHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *holdHandler) WithGroup(string) slog.Handler            { return h }
func (h *holdHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		select {
		case h.entered <- struct{}{}:
		default:
		}
		<-h.release
	}
	return nil
}
