package main_test

// End-to-end tests of `scv acp`: the real scv binary (which execs the
// scv-server built by TestMain) against the scripted model, driven by the
// Go SDK's client and by the official TypeScript SDK.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/jsonschema-go/jsonschema"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit/bins"
	"github.com/scv-cli/scv/shared/testkit/nodepkg"
)

// scvBin is the scv command, built next to the test's scv-server (where
// scv looks for it first) by the test kit, once per run.
func scvBin(t testing.TB) string {
	t.Helper()
	return bins.Need(t, "scv")
}

// acpSetup is a home whose config points at a fake model, and a workspace.
func acpSetup(t testing.TB) (f *fo.Server, home, ws string) {
	t.Helper()
	f = fo.Start(t)
	home, ws = t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(st.FakeProviderConfig(f.URL(), "")), 0o600); err != nil {
		t.Fatal(err)
	}
	return f, home, ws
}

func writeReply(id, path, content string) fo.Reply {
	args, _ := json.Marshal(map[string]string{"path": path, "content": content, "mode": "create"})
	return fo.Script(fo.ToolCall(id, "write", string(args)))
}

// goClient is an ACP client for the Go SDK that records updates and
// allows every permission once.
type goClient struct {
	mu      sync.Mutex
	updates []acpsdk.SessionUpdate
	asked   int
	chunk   chan struct{}
}

func (c *goClient) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n.Update)
	c.mu.Unlock()
	if n.Update.AgentMessageChunk != nil {
		select {
		case c.chunk <- struct{}{}:
		default:
		}
	}
	return nil
}

func (c *goClient) RequestPermission(_ context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked++
	c.mu.Unlock()
	for _, o := range p.Options {
		if o.Kind == acpsdk.PermissionOptionKindAllowOnce {
			return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(o.OptionId)}, nil
		}
	}
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
}

func (c *goClient) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, acpsdk.NewMethodNotFound("fs/read_text_file")
}
func (c *goClient) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, acpsdk.NewMethodNotFound("fs/write_text_file")
}
func (c *goClient) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/create")
}
func (c *goClient) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/kill")
}
func (c *goClient) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, acpsdk.NewMethodNotFound("terminal/output")
}
func (c *goClient) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, acpsdk.NewMethodNotFound("terminal/release")
}
func (c *goClient) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, acpsdk.NewMethodNotFound("terminal/wait_for_exit")
}

// acpProc is a running `scv acp` with a Go SDK client on its pipes.
type acpProc struct {
	cmd    *exec.Cmd
	conn   *acpsdk.ClientSideConnection
	c      *goClient
	stdin  io.WriteCloser
	stderr bytes.Buffer
}

func startACP(t testing.TB, home string) *acpProc {
	t.Helper()
	scv := scvBin(t)
	p := &acpProc{c: &goClient{chunk: make(chan struct{}, 1)}}
	p.cmd = exec.Command(scv, "acp")
	p.cmd.Env = []string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + home}
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.conn = acpsdk.NewClientSideConnection(p.c, p.stdin, out)
	p.conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { p.end(t) })
	return p
}

// end closes the agent's input and waits for it to exit 0.
func (p *acpProc) end(t testing.TB) {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("scv acp exited with %v; stderr:\n%s", err, p.stderr.String())
		}
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		t.Errorf("scv acp did not exit after the end of its input")
	}
	<-p.conn.Done()
}

func TestACPGoClientAgainstBinary(t *testing.T) {
	f, home, ws := acpSetup(t)
	p := startACP(t, home)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init, err := p.conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber})
	if err != nil || init.AgentInfo == nil || init.AgentInfo.Name != "scv" {
		t.Fatalf("initialize = %+v, %v", init, err)
	}
	s, err := p.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	f.Enqueue(writeReply("c1", "hello.txt", "hello\n"), fo.Script(fo.Text("done")), fo.Script(fo.Text("partial"), fo.Hang()))
	r, err := p.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("write hello.txt")}})
	if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hello\n" || p.c.asked != 1 {
		t.Fatalf("hello.txt %q, %v; asked %d", b, err, p.c.asked)
	}
	got := make(chan acpsdk.StopReason, 1)
	go func() {
		r, _ := p.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("hang")}})
		got <- r.StopReason
	}()
	<-p.c.chunk // "done" of the first turn may be here already
	f.WaitRequests(ctx, 3)
	if err := p.conn.Cancel(ctx, acpsdk.CancelNotification{SessionId: s.SessionId}); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r != acpsdk.StopReasonCancelled {
		t.Fatalf("cancelled prompt: %q", r)
	}
	if _, err := p.conn.CloseSession(ctx, acpsdk.CloseSessionRequest{SessionId: s.SessionId}); err != nil {
		t.Fatal(err)
	}
	p.c.mu.Lock()
	p.c.updates = nil
	p.c.mu.Unlock()
	if _, err := p.conn.LoadSession(ctx, acpsdk.LoadSessionRequest{SessionId: s.SessionId, Cwd: ws, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	p.c.mu.Lock()
	n := len(p.c.updates)
	p.c.mu.Unlock()
	if n < 4 { // two prompts, the call, the reply (and the cancelled turn's notice)
		t.Fatalf("load replayed %d updates", n)
	}
}

// TestACPTypeScriptClient drives `scv acp` with the official TypeScript SDK
// (scripts/node/acp-e2e.mjs) and validates every line the agent wrote
// against the ACP JSON schema that SDK ships.
func TestACPTypeScriptClient(t *testing.T) {
	node := nodepkg.Node(t)
	sdk := nodepkg.Package(t, "@agentclientprotocol/sdk")
	root, err := nodepkg.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, home, ws := acpSetup(t)
	f.SetModels("gpt-e2e", "fake-model")
	f.Enqueue(writeReply("c1", "hello.txt", "hello from ts\n"), fo.Script(fo.Text("written")), fo.Script(fo.Text("partial"), fo.Hang()))
	transcript := filepath.Join(t.TempDir(), "agent.jsonl")
	out, stderr := runNodeDriver(t, node, filepath.Join(root, "scripts", "node", "acp-e2e.mjs"), home,
		"ACP_SDK_DIR="+sdk, "SCV_BIN="+scvBin(t), "ACP_CWD="+ws, "ACP_TRANSCRIPT="+transcript)
	var sum struct {
		Init struct {
			ProtocolVersion int    `json:"protocolVersion"`
			Agent           string `json:"agent"`
			LoadSession     bool   `json:"loadSession"`
		} `json:"init"`
		Modes           []string   `json:"modes"`
		ConfigIDs       []string   `json:"configIds"`
		Model           string     `json:"model"`
		PromptStop      string     `json:"promptStop"`
		PromptKinds     []string   `json:"promptKinds"`
		PermissionKinds [][]string `json:"permissionKinds"`
		File            string     `json:"file"`
		CancelStop      string     `json:"cancelStop"`
		UnknownMethod   any        `json:"unknownMethod"`
		BadParams       any        `json:"badParams"`
		UnknownSession  any        `json:"unknownSession"`
		LoadKinds       []string   `json:"loadKinds"`
		Listed          bool       `json:"listed"`
		Exit            struct {
			Code *int `json:"code"`
		} `json:"exit"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("summary %s: %v", out, err)
	}
	t.Logf("summary: %s", out)
	switch {
	case sum.Init.ProtocolVersion != 1 || sum.Init.Agent != "scv" || !sum.Init.LoadSession:
		t.Errorf("initialize %+v", sum.Init)
	case !slices.Equal(sum.Modes, []string{"on-risk", "never", "auto"}):
		t.Errorf("modes %v", sum.Modes)
	case !slices.Equal(sum.ConfigIDs, []string{"mode", "model"}) || sum.Model != "gpt-e2e":
		t.Errorf("config options %v, model after the switch %q", sum.ConfigIDs, sum.Model)
	case len(f.Requests()) == 0 || f.Requests()[0].Model != "gpt-e2e":
		t.Errorf("the prompt after the model switch did not carry gpt-e2e")
	case sum.PromptStop != "end_turn" || sum.File != "hello from ts\n":
		t.Errorf("prompt: %s, file %q", sum.PromptStop, sum.File)
	case strings.Join(sum.PromptKinds, " ") != "tool_call tool_call_update tool_call_update agent_message_chunk usage_update":
		t.Errorf("prompt updates %v", sum.PromptKinds)
	case len(sum.PermissionKinds) != 1 || strings.Join(sum.PermissionKinds[0], " ") != "allow_once allow_always reject_once":
		t.Errorf("permission options %v", sum.PermissionKinds)
	case sum.CancelStop != "cancelled":
		t.Errorf("cancel: %s", sum.CancelStop)
	case sum.UnknownMethod != -32601.0 || sum.BadParams != -32602.0 || sum.UnknownSession != -32002.0:
		t.Errorf("errors: unknown method %v, bad params %v, unknown session %v", sum.UnknownMethod, sum.BadParams, sum.UnknownSession)
	case len(sum.LoadKinds) < 4 || sum.LoadKinds[0] != "user_message_chunk" || !slices.Contains(sum.LoadKinds, "tool_call"):
		t.Errorf("load replay %v", sum.LoadKinds)
	case !sum.Listed:
		t.Errorf("the session is not listed")
	case sum.Exit.Code == nil || *sum.Exit.Code != 0:
		t.Errorf("scv acp exit %+v; stderr:\n%s", sum.Exit, stderr)
	}
	validateTranscript(t, filepath.Join(sdk, "schema", "v1", "schema.json"), transcript)
}

// resultDefs name the schema definition of each method's result.
var resultDefs = map[string]string{
	"initialize":                "InitializeResponse",
	"authenticate":              "AuthenticateResponse",
	"session/new":               "NewSessionResponse",
	"session/load":              "LoadSessionResponse",
	"session/resume":            "ResumeSessionResponse",
	"session/list":              "ListSessionsResponse",
	"session/close":             "CloseSessionResponse",
	"session/set_mode":          "SetSessionModeResponse",
	"session/set_config_option": "SetSessionConfigOptionResponse",
	"session/prompt":            "PromptResponse",
}

// paramDefs name the schema definition of the params the agent sends.
var paramDefs = map[string]string{
	"session/update":             "SessionNotification",
	"session/request_permission": "RequestPermissionRequest",
	"$/cancel_request":           "CancelRequestNotification",
}

// validateTranscript checks every line the agent wrote (path) against the
// ACP schema: the whole message, and its params, result or error against
// the definition of its method (the whole-message schema alone is loose:
// its anyOf takes many shapes). path+".client" has the client's lines,
// which say which method a response answers.
func validateTranscript(t *testing.T, schemaPath, path string) {
	t.Helper()
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var whole jsonschema.Schema
	if err := json.Unmarshal(raw, &whole); err != nil {
		t.Fatalf("the ACP schema: %v", err)
	}
	resolved := map[string]*jsonschema.Resolved{}
	def := func(name string) *jsonschema.Resolved {
		if r, ok := resolved[name]; ok {
			return r
		}
		s := &jsonschema.Schema{Schema: whole.Schema, Ref: "#/$defs/" + name, Defs: whole.Defs}
		if name == "" {
			s = &whole
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("resolving %q of the ACP schema: %v", name, err)
		}
		resolved[name] = r
		return r
	}
	methods := map[string]string{} // request id → method, of the client's requests
	for _, l := range readLines(t, path+".client") {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.ID != nil && m.Method != "" {
			methods[string(m.ID)] = m.Method
		}
	}
	lines := readLines(t, path)
	if len(lines) < 10 {
		t.Fatalf("only %d lines recorded", len(lines))
	}
	checked := 0
	for i, l := range lines {
		var v any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", i+1, err, l)
		}
		if err := def("").Validate(v); err != nil {
			t.Errorf("line %d does not validate against the ACP schema: %v\n%s", i+1, err, l)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params any             `json:"params"`
			Result any             `json:"result"`
			Error  any             `json:"error"`
		}
		_ = json.Unmarshal([]byte(l), &m)
		name, part := "", any(nil)
		switch {
		case m.Method != "":
			name, part = paramDefs[m.Method], m.Params
			if name == "" {
				t.Errorf("line %d: the agent sent %q, which this test does not know", i+1, m.Method)
			}
		case m.Error != nil:
			name, part = "Error", m.Error
		default:
			name, part = resultDefs[methods[string(m.ID)]], m.Result
			if name == "" && methods[string(m.ID)] != "session/fly" {
				t.Errorf("line %d answers %q, which this test does not know", i+1, methods[string(m.ID)])
			}
		}
		if name == "" {
			continue
		}
		if err := def(name).Validate(part); err != nil {
			t.Errorf("line %d does not validate against %s: %v\n%s", i+1, name, err, l)
		}
		checked++
	}
	t.Logf("%d agent lines validated against %s (%d by their method's definition)", len(lines), schemaPath, checked)
}

// runNodeDriver runs a Node e2e driver script with a clean environment
// (PATH, HOME and SCV_HOME set to home, and env) and returns its stdout
// (the summary) and stderr; it fails the test when the driver fails.
func runNodeDriver(t *testing.T, node, script, home string, env ...string) ([]byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SCV_HOME=" + home}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the Node client %s failed: %v\nstdout: %s\nstderr: %s", filepath.Base(script), err, out, stderr.String())
	}
	return out, stderr.String()
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// BenchmarkACPFirstPrompt measures what an editor waits for after starting
// the agent: spawning `scv acp` (scv execs scv-server), initialize,
// session/new and a one-chunk prompt answered, up to the prompt's answer.
func BenchmarkACPFirstPrompt(b *testing.B) {
	f, home, ws := acpSetup(b)
	scvBin(b)
	ctx := context.Background()
	for b.Loop() {
		f.Enqueue(fo.Script(fo.Text("ok")))
		p := startACP(b, home)
		if _, err := p.conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
			b.Fatal(err)
		}
		s, err := p.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: ws, McpServers: []acpsdk.McpServer{}})
		if err != nil {
			b.Fatal(err)
		}
		if r, err := p.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("hi")}}); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
			b.Fatalf("prompt = %+v, %v", r, err)
		}
		b.StopTimer()
		p.end(b)
		b.StartTimer()
	}
}
