package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport/acp/acptest"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit"
)

// TestMain runs the stand-in ACP agent when this test binary is started
// as one (acptest.EnvMode), and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(acptest.EnvMode) == "1" {
		acptest.Main()
		return
	}
	goleak.VerifyTestMain(m)
}

// hang bounds every wait of a test; it only guards against a hang.
const hang = 30 * time.Second

var handles atomic.Int64

// fixture is one test's Runner over the stand-in agent.
type fixture struct {
	home, work, log string
	r               *Runner
}

// newFixture returns a Runner whose "claude" runs the stand-in, with env
// (KEY=value) added to what the stand-in inherits; full sets
// permissions = "full".
func newFixture(t testing.TB, full bool, env ...string) *fixture {
	t.Helper()
	return newFixtureWith(t, nil, full, env...)
}

// newFixtureWith is newFixture with the stand-in's adapter changed by
// change (nil: none).
func newFixtureWith(t testing.TB, change func(*adapters.Adapter), full bool, env ...string) *fixture {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := &fixture{home: filepath.Join(dir, "home"), work: filepath.Join(dir, "work"), log: filepath.Join(dir, "requests.jsonl")}
	for _, d := range []string{f.home, f.work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	a := adapters.Adapter{Name: "claude", Product: "Stand-in", Summary: "a stand-in ACP agent",
		ModelArgs: []string{"--model", adapters.ModelPlaceholder}, EffortArgs: []string{"--effort", adapters.EffortPlaceholder},
		Env: []string{acptest.Env, acptest.EnvMode},
		ACP: &adapters.ACPServer{Path: exe, Package: "the stand-in"}}
	if change != nil {
		change(&a)
	}
	perms := map[string]string{}
	if full {
		perms["claude"] = "full"
	}
	base := append([]string{acptest.EnvMode + "=1", "STANDIN_LOG=" + f.log, "PATH=" + os.Getenv("PATH")}, env...)
	f.r = New(Options{Home: f.home, BaseEnv: base, Permissions: perms, Adapters: []adapters.Adapter{a}})
	t.Cleanup(f.r.Close)
	return f
}

func (f *fixture) backend(t testing.TB) delegate.Backend {
	t.Helper()
	b, ok := f.r.Backend("claude")
	if !ok {
		t.Fatal("no claude backend")
	}
	return b
}

// call returns a call of conversation claude-1, turn n, continuing key
// when it is not empty.
func (f *fixture) call(prompt, key string, turn int) delegate.Call {
	return delegate.Call{Agent: "claude", Prompt: prompt, Dir: f.work, Workspace: f.work, Timeout: hang,
		Handle: fmt.Sprintf("claude-t%d", handles.Add(1)), SessionID: "s1", Conversation: "claude-1", Turn: turn,
		ResumeCLISession: key}
}

// lines collects progress lines.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) add(s string) { l.mu.Lock(); l.l = append(l.l, s); l.mu.Unlock() }
func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.l)
}

// requests returns the requests the stand-in received of method, as raw
// JSON params.
func (f *fixture) requests(t testing.TB, method string) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(f.log)
	if err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Method == method {
			out = append(out, m.Params)
		}
	}
	return out
}

// waitFor polls cond until it holds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, hang, what, cond)
}

func TestConversationOnOneServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	b := f.backend(t)
	var got lines
	res := b.Run(context.Background(), f.call("echo hello", "", 1), got.add)
	if res.Status != delegate.StatusCompleted || res.Reply != "turn 1 model std-small effort low mode default: hello" {
		t.Fatalf("first turn = %+v", res)
	}
	if res.CLISession == "" || res.Session != "claude-1" || res.Turn != 1 || res.Usage == nil || res.Usage.InputTokens != 10 {
		t.Fatalf("first turn = %+v", res)
	}
	want := []string{"line one", "line two", "plan: write the fix", "Run make TOKEN=…"}
	if l := got.all(); !slices.Equal(l[:min(len(l), 4)], want) {
		t.Errorf("progress = %q, want it to start with %q", l, want)
	}
	for _, l := range got.all() {
		if strings.Contains(l, "thought") || strings.Contains(l, "tool output") || strings.Contains(l, "opaque") || strings.Contains(l, "abcdef123456") {
			t.Errorf("progress shows %q", l)
		}
	}
	// Between turns the server waits, recorded as idle.
	rec, err := records.Read(f.home, res.CLISession)
	if err != nil || rec.State() != records.StateIdle || rec.Conversation != "claude-1" || rec.Turn != 1 || rec.Agent != "claude" {
		t.Fatalf("record = %+v, %v; want an idle record of claude-1", rec, err)
	}

	res2 := b.Run(context.Background(), f.call("echo again", res.CLISession, 2), nil)
	if res2.Status != delegate.StatusCompleted || !strings.HasPrefix(res2.Reply, "turn 2 ") || res2.CLISession != res.CLISession {
		t.Fatalf("second turn = %+v", res2)
	}
	if n := len(f.requests(t, "initialize")); n != 1 {
		t.Errorf("%d servers started, want 1 for two turns", n)
	}
	// What SCV declared: no fs or terminal capabilities, mcpServers [].
	init := string(f.requests(t, "initialize")[0])
	if strings.Contains(init, `"readTextFile":true`) || strings.Contains(init, `"terminal":true`) || !strings.Contains(init, `"protocolVersion":1`) {
		t.Errorf("initialize params = %s", init)
	}
	if nw := string(f.requests(t, "session/new")[0]); !strings.Contains(nw, `"mcpServers":[]`) || !strings.Contains(nw, `"cwd":"`+f.work+`"`) {
		t.Errorf("session/new params = %s", nw)
	}

	f.r.Forget(res.CLISession)
	waitFor(t, "the forgotten server's record to go", func() bool {
		_, err := records.Read(f.home, res.CLISession)
		return err != nil
	})
	if live := f.r.Live(); len(live) != 0 {
		t.Errorf("live servers after Forget: %v", live)
	}
}

func TestIdleServerShutsDown(t *testing.T) {
	t.Parallel()
	f := newFixtureWith(t, nil, false)
	f.r.opts.Idle = 200 * time.Millisecond
	b := f.backend(t)
	res := b.Run(context.Background(), f.call("echo x", "", 1), nil)
	if res.Status != delegate.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	waitFor(t, "the idle server to be shut down", func() bool {
		_, err := records.Read(f.home, res.CLISession)
		return err != nil && len(f.r.Live()) == 0
	})
}

func TestModelAndEffortOptions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	b := f.backend(t)
	c := f.call("echo x", "", 1)
	c.Model, c.Effort = "std-large", "high"
	res := b.Run(context.Background(), c, nil)
	if res.Status != delegate.StatusCompleted || !strings.Contains(res.Reply, "model std-large effort high") {
		t.Fatalf("result = %+v", res)
	}
	c = f.call("echo x", res.CLISession, 2)
	c.Model = "gpt-9"
	bad := b.Run(context.Background(), c, nil)
	if bad.Status != delegate.StatusFailed || !strings.Contains(bad.Error, `does not offer model "gpt-9"; it offers std-small, std-large`) {
		t.Fatalf("unoffered model = %+v", bad)
	}
	if bad.CLISession != res.CLISession {
		t.Fatalf("an unoffered model ended the conversation: %+v", bad)
	}
	again := b.Run(context.Background(), f.call("echo y", res.CLISession, 3), nil)
	if again.Status != delegate.StatusCompleted || !strings.HasPrefix(again.Reply, "turn 2 model std-large") {
		t.Fatalf("turn after the refusal = %+v", again)
	}
}

func TestFullPermissionsSelectsBypassMode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	res := f.backend(t).Run(context.Background(), f.call("echo x", "", 1), nil)
	if res.Status != delegate.StatusCompleted || !strings.Contains(res.Reply, "mode bypassPermissions") {
		t.Fatalf("result = %+v", res)
	}
	// Without a mode config option, session/set_mode.
	f = newFixture(t, true, "STANDIN_NO_MODES=1")
	res = f.backend(t).Run(context.Background(), f.call("echo x", "", 1), nil)
	if res.Status != delegate.StatusCompleted || len(f.requests(t, "session/set_mode")) != 0 {
		t.Fatalf("an agent without modes: %+v, set_mode %d", res, len(f.requests(t, "session/set_mode")))
	}
}

func TestPermissionRelay(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	b := f.backend(t)
	type asked struct {
		risk    protocol.Risk
		summary string
	}
	for _, tt := range []struct {
		prompt  string
		approve delegate.ApprovalFunc
		reply   string
		want    *asked
	}{
		{"permission", func(context.Context, protocol.Risk, string) bool { return true }, "permission: yes", &asked{protocol.RiskProcess, "[claude-1 acp] Run rm -rf build (execute)"}},
		{"permission", func(context.Context, protocol.Risk, string) bool { return false }, "permission: no", &asked{protocol.RiskProcess, "[claude-1 acp] Run rm -rf build (execute)"}},
		{"permission", nil, "permission: no", nil},
		{"readsecret", func(context.Context, protocol.Risk, string) bool { return true }, "permission: yes", &asked{protocol.RiskFilesystem, "[claude-1 acp] Read .env (read)"}},
	} {
		var got []asked
		c := f.call(tt.prompt, "", 1)
		if tt.approve != nil {
			c.Approve = func(ctx context.Context, r protocol.Risk, s string) bool {
				got = append(got, asked{r, s})
				return tt.approve(ctx, r, s)
			}
		}
		res := b.Run(context.Background(), c, nil)
		f.r.Forget(res.CLISession)
		if res.Status != delegate.StatusCompleted || res.Reply != tt.reply {
			t.Errorf("%s: result = %+v, want reply %q", tt.prompt, res, tt.reply)
		}
		if tt.want != nil && (len(got) != 1 || got[0] != *tt.want) {
			t.Errorf("%s: asked %+v, want %+v", tt.prompt, got, *tt.want)
		}
	}
}

func TestFileSystemAndTerminalRequestsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	res := f.backend(t).Run(context.Background(), f.call("fs", "", 1), nil)
	if res.Reply != "fs: -32601; terminal: -32601" {
		t.Fatalf("result = %+v", res)
	}
}

func TestCancelHonouredKeepsConversation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	b := f.backend(t)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	res := b.Run(ctx, f.call("slow", "", 1), func(string) { once.Do(cancel) })
	if res.Status != delegate.StatusCancelled || res.CLISession == "" {
		t.Fatalf("cancelled turn = %+v", res)
	}
	if len(f.requests(t, "session/cancel")) != 1 {
		t.Error("no session/cancel reached the agent")
	}
	again := b.Run(context.Background(), f.call("echo on", res.CLISession, 2), nil)
	if again.Status != delegate.StatusCompleted || !strings.HasPrefix(again.Reply, "turn 2 ") {
		t.Fatalf("turn after the cancel = %+v", again)
	}
}

func TestTimeoutIgnoredShutsServerDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	c := f.call("stubborn", "", 1)
	// Long enough for the handshake and session/new to finish on a loaded
	// machine, so the timeout meets the prompt in flight (a timeout during
	// the handshake is a plain cancel, not this case).
	c.Timeout = 2 * time.Second
	start := time.Now()
	res := f.backend(t).Run(context.Background(), c, nil)
	if res.Status != delegate.StatusTimeout || res.CLISession != "" || !strings.Contains(res.Error, "did not stop within 2s") {
		t.Fatalf("timed-out turn = %+v", res)
	}
	if d := time.Since(start); d < c.Timeout+CancelGrace || d > c.Timeout+CancelGrace+3*StopGrace+5*time.Second {
		t.Errorf("the turn took %s", d)
	}
	waitFor(t, "the record to go", func() bool { _, err := records.Read(f.home, c.Handle); return err != nil })
	if live := f.r.Live(); len(live) != 0 {
		t.Errorf("live servers: %v", live)
	}
}

func TestExitMidTurnFailsWithStderr(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	c := f.call("exit", "", 1)
	res := f.backend(t).Run(context.Background(), c, nil)
	if res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorUnavailable || res.CLISession != "" ||
		!strings.Contains(res.StderrTail, "crashed on purpose") || !strings.Contains(res.Error, "exited during the turn") {
		t.Fatalf("result = %+v", res)
	}
	waitFor(t, "the record to go", func() bool { _, err := records.Read(f.home, c.Handle); return err != nil })
}

func TestSignInFailures(t *testing.T) {
	t.Parallel()
	// claude-agent-acp's way: the first prompt answers -32000.
	f := newFixture(t, false)
	res := f.backend(t).Run(context.Background(), f.call("auth", "", 1), nil)
	if res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorSignedOut || !strings.Contains(res.Hint, "scv agents login claude") ||
		!strings.Contains(res.Error, "Authentication required") {
		t.Fatalf("prompt sign-out = %+v", res)
	}
	// codex-acp's way: session/new answers -32000, without a key.
	f = newFixture(t, false, "STANDIN_AUTH=session")
	c := f.call("echo x", "", 1)
	res = f.backend(t).Run(context.Background(), c, nil)
	if res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorSignedOut || !strings.Contains(res.Hint, "scv agents login claude") ||
		!strings.Contains(res.Error, "session/new") {
		t.Fatalf("session/new sign-out = %+v", res)
	}
	waitFor(t, "the record to go", func() bool { _, err := records.Read(f.home, c.Handle); return err != nil })
	// With the key configured, SCV picks the env_var method.
	f = newFixture(t, false, "STANDIN_AUTH=session", "STANDIN_KEY=k")
	res = f.backend(t).Run(context.Background(), f.call("echo x", "", 1), nil)
	if res.Status != delegate.StatusCompleted {
		t.Fatalf("with a key = %+v", res)
	}
	if a := f.requests(t, "authenticate"); len(a) != 1 || !strings.Contains(string(a[0]), `"methodId":"standin-key"`) {
		t.Errorf("authenticate requests = %s", a)
	}
	// The key stored in the agent's private home counts as configured
	// (Codex's auth.json), though inherited key variables never do.
	f = newFixtureWith(t, func(a *adapters.Adapter) {
		a.StateVar, a.StateDir = "STANDIN_HOME", ".standin"
		a.ACP.KeyVar, a.ACP.KeyFile, a.ACP.KeyField = "STANDIN_KEY", "auth.json", "KEY"
	}, false, "STANDIN_AUTH=session")
	state := filepath.Join(f.home, "agents", "claude", ".standin")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "auth.json"), []byte(`{"KEY":"k-stored"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	res = f.backend(t).Run(context.Background(), f.call("echo x", "", 1), nil)
	if res.Status != delegate.StatusCompleted || len(f.requests(t, "authenticate")) != 1 {
		t.Fatalf("with a stored key = %+v", res)
	}
}

func TestErrorsAndStopReasons(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	b := f.backend(t)
	res := b.Run(context.Background(), f.call("error", "", 1), nil)
	if res.Status != delegate.StatusFailed || strings.Contains(res.Error, "sk-abcdefghijklmnop1234") || !strings.Contains(res.Error, "upstream said") {
		t.Errorf("error = %+v", res)
	}
	res = b.Run(context.Background(), f.call("refuse", res.CLISession, 2), nil)
	if res.Status != delegate.StatusDeclined || res.Reply != "I won't do that." {
		t.Errorf("refusal = %+v", res)
	}
	res = b.Run(context.Background(), f.call("maxtokens", res.CLISession, 3), nil)
	if res.Status != delegate.StatusCompleted || res.Reply != "partial\n\n(stopped early: max_tokens)" {
		t.Errorf("max_tokens = %+v", res)
	}
	res = b.Run(context.Background(), f.call("failtool", res.CLISession, 4), nil)
	if res.Status != delegate.StatusCompleted {
		t.Errorf("failed tool = %+v", res)
	}
}

func TestFailedToolCallProgress(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	var got lines
	f.backend(t).Run(context.Background(), f.call("failtool", "", 1), got.add)
	if l := got.all(); !slices.Contains(l, "Edit main.go failed") {
		t.Errorf("progress = %q", l)
	}
}

func TestProtocolVersionMismatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false, "STANDIN_VERSION=2")
	res := f.backend(t).Run(context.Background(), f.call("echo x", "", 1), nil)
	if res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorUnavailable || !strings.Contains(res.Error, "speaks ACP version 2") {
		t.Fatalf("result = %+v", res)
	}
}

func TestServerExitingBetweenTurnsIsCollected(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	b := f.backend(t)
	res := b.Run(context.Background(), f.call("bye", "", 1), nil)
	if res.Status != delegate.StatusCompleted {
		t.Fatalf("result = %+v", res)
	}
	waitFor(t, "the exited server's record to go", func() bool {
		_, err := records.Read(f.home, res.CLISession)
		return err != nil && len(f.r.Live()) == 0
	})
	res = b.Run(context.Background(), f.call("echo x", res.CLISession, 2), nil)
	if res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorUnavailable || !strings.Contains(res.Error, "has exited") {
		t.Fatalf("turn on the exited server = %+v", res)
	}
}

func TestKillStopsTurnAsCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	c := f.call("slow", "", 1)
	var once sync.Once
	res := f.backend(t).Run(context.Background(), c, func(string) {
		once.Do(func() {
			// What `scv agents kill` does: mark the record, stop the run.
			rec, err := records.Read(f.home, c.Handle)
			if err != nil {
				t.Error(err)
				return
			}
			rec.KillRequestedUnix = time.Now().Unix()
			if err := records.Write(f.home, rec); err != nil {
				t.Error(err)
			}
			go records.StopRun(rec, time.Second)
		})
	})
	if res.Status != delegate.StatusCancelled || !strings.Contains(res.Error, "scv agents kill") || res.CLISession != "" {
		t.Fatalf("killed turn = %+v", res)
	}
	waitFor(t, "the record to go", func() bool { _, err := records.Read(f.home, c.Handle); return err != nil })
}

func TestKillDuringHandshakeIsCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false, "STANDIN_HANG_INIT=1")
	c := f.call("echo x", "", 1)
	go func() {
		var rec records.Record
		waitFor(t, "the server's record", func() bool {
			var err error
			rec, err = records.Read(f.home, c.Handle)
			return err == nil
		})
		rec.KillRequestedUnix = time.Now().Unix()
		if err := records.Write(f.home, rec); err != nil {
			t.Error(err)
		}
		records.StopRun(rec, time.Second)
	}()
	res := f.backend(t).Run(context.Background(), c, nil)
	if res.Status != delegate.StatusCancelled || !strings.Contains(res.Error, "scv agents kill") {
		t.Fatalf("result = %+v", res)
	}
}

func TestPlanRefusesOptionsAndMissingServer(t *testing.T) {
	t.Parallel()
	r := New(Options{Home: t.TempDir(), Adapters: []adapters.Adapter{{Name: "dsh", Product: "DeepSeek Harness",
		ACP: &adapters.ACPServer{Path: "/nonexistent/dsh", Package: "dsh"}}}})
	defer r.Close()
	b, _ := r.Backend("dsh")
	if _, err := b.Plan(delegate.Call{Agent: "dsh", Prompt: "x", Dir: "/", Model: "m"}); err == nil || !strings.Contains(err.Error(), "does not take model") {
		t.Errorf("model on dsh: %v", err)
	}
	if _, err := b.Plan(delegate.Call{Agent: "dsh", Prompt: "x", Dir: "/"}); err == nil || !strings.Contains(err.Error(), delegate.ErrUnavailable.Error()) {
		t.Errorf("missing server: %v", err)
	}
	if r.Installed("dsh", nil) || !b.Descriptor().TakesSession {
		t.Error("a missing server counts as installed, or an ACP agent takes no session")
	}
}

// BenchmarkRoundTrip measures SCV's overhead per call over ACP: one
// prompt turn on a live stand-in server (the server's start is outside
// the loop).
func BenchmarkRoundTrip(b *testing.B) {
	f := newFixture(b, false)
	be := f.backend(b)
	first := be.Run(context.Background(), f.call("echo warm", "", 1), nil)
	if first.Status != delegate.StatusCompleted {
		b.Fatalf("first turn = %+v", first)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		res := be.Run(context.Background(), f.call("echo x", first.CLISession, i+2), nil)
		if res.Status != delegate.StatusCompleted {
			b.Fatalf("turn = %+v", res)
		}
	}
}
