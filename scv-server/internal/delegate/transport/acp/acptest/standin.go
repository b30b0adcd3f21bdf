// Package acptest is a stand-in ACP agent for tests of SCV's ACP client,
// built on the same SDK (github.com/coder/acp-go-sdk, agent side). A test
// binary runs it as a real child process: its TestMain calls Main when
// EnvMode is set, and the test points an adapter's ACP server at the test
// binary itself (os.Executable) with EnvMode in the environment.
//
// What a prompt does is chosen by its first word (see Prompt); the
// environment chooses the handshake's behaviour:
//
//   - STANDIN_AUTH=session: session/new answers -32000 "Authentication
//     required" until authenticate {methodId: "standin-key"} succeeds,
//     which needs STANDIN_KEY set (codex-acp's env_var method);
//   - STANDIN_VERSION=<n>: initialize answers protocol version n;
//   - STANDIN_LOG=<file>: every request the agent receives is appended
//     there as one JSON line {"method", "params"}, so a test can check
//     what SCV sent;
//   - STANDIN_NO_MODES=1: session/new offers no modes or config options;
//   - STANDIN_HANG_INIT=1: initialize does not answer for a minute.
package acptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

// EnvMode, when set to "1", makes a test binary run the stand-in.
const EnvMode = "STANDIN_MODE"

// Env lists the variables the stand-in reads, as an adapter's allow-list
// pattern.
const Env = "STANDIN_*"

// Main runs the stand-in on stdin and stdout until stdin closes.
func Main() {
	w := &lockedWriter{w: os.Stdout}
	a := &agent{w: w, sessions: map[acp.SessionId]*session{}}
	if p := os.Getenv("STANDIN_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err == nil {
			a.log = f
		}
	}
	a.conn = acp.NewAgentSideConnection(a, w, os.Stdin)
	<-a.conn.Done()
	os.Exit(0)
}

// lockedWriter serialises writes: the SDK writes one whole message per
// Write, and the stand-in writes raw lines (an unknown update kind) too.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

type session struct {
	turns  int
	model  string
	effort string
	mode   string
	cancel chan struct{}
}

type agent struct {
	conn *acp.AgentSideConnection
	w    *lockedWriter
	log  *os.File

	mu            sync.Mutex
	authenticated bool
	sessions      map[acp.SessionId]*session
	next          int
}

func (a *agent) record(method string, params any) {
	if a.log == nil {
		return
	}
	b, _ := json.Marshal(map[string]any{"method": method, "params": params})
	a.mu.Lock()
	defer a.mu.Unlock()
	_, _ = a.log.Write(append(b, '\n'))
}

// Initialize implements acp.Agent.
func (a *agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.record("initialize", p)
	if os.Getenv("STANDIN_HANG_INIT") == "1" {
		time.Sleep(time.Minute)
	}
	v := acp.ProtocolVersion(acp.ProtocolVersionNumber)
	if s := os.Getenv("STANDIN_VERSION"); s != "" {
		var n int
		_, _ = fmt.Sscan(s, &n)
		v = acp.ProtocolVersion(n)
	}
	methods := []acp.AuthMethod{{EnvVar: &acp.AuthMethodEnvVarInline{Id: "standin-key", Name: "Stand-in key", Type: "env_var",
		Vars: []acp.AuthEnvVar{{Name: "STANDIN_KEY"}}}}}
	return acp.InitializeResponse{ProtocolVersion: v, AuthMethods: methods}, nil
}

// Authenticate implements acp.Agent.
func (a *agent) Authenticate(_ context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	a.record("authenticate", p)
	if p.MethodId != "standin-key" || os.Getenv("STANDIN_KEY") == "" {
		return acp.AuthenticateResponse{}, acp.NewAuthRequired(nil)
	}
	a.mu.Lock()
	a.authenticated = true
	a.mu.Unlock()
	return acp.AuthenticateResponse{}, nil
}

func selectOption(id, name string, cat acp.SessionConfigOptionCategory, current string, values ...string) acp.SessionConfigOption {
	var opts acp.SessionConfigSelectOptionsUngrouped
	for _, v := range values {
		opts = append(opts, acp.SessionConfigSelectOption{Name: v, Value: acp.SessionConfigValueId(v)})
	}
	return acp.SessionConfigOption{Select: &acp.SessionConfigOptionSelect{Id: acp.SessionConfigId(id), Name: name, Category: &cat,
		Type: "select", CurrentValue: acp.SessionConfigValueId(current), Options: acp.SessionConfigSelectOptions{Ungrouped: &opts}}}
}

func (a *agent) options(s *session) []acp.SessionConfigOption {
	return []acp.SessionConfigOption{
		selectOption("mode", "Mode", acp.SessionConfigOptionCategoryMode, s.mode, "default", "bypassPermissions"),
		selectOption("model", "Model", acp.SessionConfigOptionCategoryModel, s.model, "std-small", "std-large"),
		selectOption("effort", "Effort", acp.SessionConfigOptionCategoryThoughtLevel, s.effort, "low", "high"),
	}
}

// NewSession implements acp.Agent.
func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	a.record("session/new", p)
	a.mu.Lock()
	defer a.mu.Unlock()
	if os.Getenv("STANDIN_AUTH") == "session" && !a.authenticated {
		return acp.NewSessionResponse{}, acp.NewAuthRequired(map[string]any{"reason": "signed out"})
	}
	a.next++
	id := acp.SessionId(fmt.Sprintf("standin-%d-%d", os.Getpid(), a.next))
	s := &session{model: "std-small", effort: "low", mode: "default"}
	a.sessions[id] = s
	if os.Getenv("STANDIN_NO_MODES") == "1" {
		return acp.NewSessionResponse{SessionId: id}, nil
	}
	modes := &acp.SessionModeState{CurrentModeId: "default", AvailableModes: []acp.SessionMode{{Id: "default", Name: "Default"}, {Id: "bypassPermissions", Name: "Bypass"}}}
	return acp.NewSessionResponse{SessionId: id, Modes: modes, ConfigOptions: a.options(s)}, nil
}

func (a *agent) session(id acp.SessionId) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[id]
	if s == nil {
		return nil, &acp.RequestError{Code: -32002, Message: "unknown session"}
	}
	return s, nil
}

// SetSessionConfigOption implements acp.Agent.
func (a *agent) SetSessionConfigOption(_ context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	a.record("session/set_config_option", p)
	if p.ValueId == nil {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams("select values only")
	}
	s, err := a.session(p.ValueId.SessionId)
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	v := string(p.ValueId.Value)
	switch p.ValueId.ConfigId {
	case "mode":
		s.mode = v
	case "model":
		s.model = v
	case "effort":
		s.effort = v
	default:
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams("unknown option")
	}
	return acp.SetSessionConfigOptionResponse{ConfigOptions: a.options(s)}, nil
}

// SetSessionMode implements acp.Agent.
func (a *agent) SetSessionMode(_ context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	a.record("session/set_mode", p)
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	a.mu.Lock()
	s.mode = string(p.ModeId)
	a.mu.Unlock()
	return acp.SetSessionModeResponse{}, nil
}

// Cancel implements acp.Agent.
func (a *agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	a.record("session/cancel", p)
	s, err := a.session(p.SessionId)
	if err != nil {
		return nil
	}
	a.mu.Lock()
	c := s.cancel
	s.cancel = nil
	a.mu.Unlock()
	if c != nil {
		close(c)
	}
	return nil
}

// CloseSession, ListSessions and ResumeSession are not offered.

// CloseSession implements acp.Agent.
func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionClose)
}

// ListSessions implements acp.Agent.
func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

// ResumeSession implements acp.Agent.
func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

// update sends one session/update.
func (a *agent) update(ctx context.Context, id acp.SessionId, u acp.SessionUpdate) {
	_ = a.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: u})
}

// raw writes one JSON-RPC message as it is.
func (a *agent) raw(v any) {
	b, _ := json.Marshal(v)
	_, _ = a.w.Write(append(b, '\n'))
}

// Prompt implements acp.Agent. The prompt's first word picks the scenario:
//
//	echo <text>     stream two message lines, a thought, a plan, a tool
//	                call that completes and an unknown update kind; reply
//	                "turn <n> model <m> effort <e> mode <mode>: <text>"
//	failtool        a tool call that fails
//	permission      ask permission for an execute tool call; reply with
//	                the option chosen ("cancelled" for none)
//	readsecret      ask permission to read .env
//	slow            wait for session/cancel, then stop with cancelled
//	stubborn        ignore session/cancel for a minute
//	exit            write to stderr and exit mid-turn (code 3)
//	auth            answer -32000 Authentication required
//	error           answer an internal error naming a credential
//	refuse          stop with refusal
//	maxtokens       stop with max_tokens
//	fs              call fs/read_text_file and terminal/create; reply
//	                with the error codes
//	bye             end the turn, then exit right after
func (a *agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	a.record("session/prompt", p)
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	var text string
	for _, b := range p.Prompt {
		if b.Text != nil {
			text += b.Text.Text
		}
	}
	word, rest, _ := strings.Cut(text, " ")
	a.mu.Lock()
	s.turns++
	cancel := make(chan struct{})
	s.cancel = cancel
	turn, model, effort, mode := s.turns, s.model, s.effort, s.mode
	a.mu.Unlock()
	end := func(r acp.StopReason) (acp.PromptResponse, error) {
		return acp.PromptResponse{StopReason: r, Usage: &acp.Usage{InputTokens: 10 * turn, OutputTokens: 2}}, nil
	}
	say := func(t string) { a.update(ctx, p.SessionId, acp.UpdateAgentMessageText(t)) }
	switch word {
	case "echo":
		say("line one\nline ")
		say("two\n")
		a.update(ctx, p.SessionId, acp.UpdateAgentThoughtText("secret thought"))
		a.update(ctx, p.SessionId, acp.UpdatePlan(acp.PlanEntry{Content: "read the code", Status: acp.PlanEntryStatusCompleted, Priority: acp.PlanEntryPriorityHigh},
			acp.PlanEntry{Content: "write the fix", Status: acp.PlanEntryStatusInProgress, Priority: acp.PlanEntryPriorityHigh}))
		a.update(ctx, p.SessionId, acp.StartToolCall("t1", "Run make TOKEN=abcdef123456", acp.WithStartKind(acp.ToolKindExecute)))
		a.update(ctx, p.SessionId, acp.UpdateToolCall("t1", acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
			acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock("tool output must not show"))})))
		a.raw(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": p.SessionId,
			"update": map[string]any{"sessionUpdate": "brand_new_kind", "content": map[string]any{"type": "text", "text": "opaque"}}}})
		say(fmt.Sprintf("turn %d model %s effort %s mode %s: %s", turn, model, effort, mode, rest))
		return end(acp.StopReasonEndTurn)
	case "failtool":
		a.update(ctx, p.SessionId, acp.StartToolCall("t2", "Edit main.go", acp.WithStartKind(acp.ToolKindEdit)))
		a.update(ctx, p.SessionId, acp.UpdateToolCall("t2", acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
		say("done")
		return end(acp.StopReasonEndTurn)
	case "permission", "readsecret":
		return a.askPermission(ctx, p.SessionId, word, end)
	case "slow":
		say("working\n")
		select {
		case <-cancel:
		case <-time.After(time.Minute):
		}
		return end(acp.StopReasonCancelled)
	case "stubborn":
		say("working\n")
		time.Sleep(time.Minute)
		return end(acp.StopReasonEndTurn)
	case "exit":
		fmt.Fprintln(os.Stderr, "fatal: the stand-in crashed on purpose")
		os.Exit(3)
	case "auth":
		return acp.PromptResponse{}, acp.NewAuthRequired(nil)
	case "error":
		return acp.PromptResponse{}, &acp.RequestError{Code: -32603, Message: "upstream said: api_key=sk-abcdefghijklmnop1234 is invalid"}
	case "refuse":
		say("I won't do that.")
		return end(acp.StopReasonRefusal)
	case "maxtokens":
		say("partial")
		return end(acp.StopReasonMaxTokens)
	case "fs":
		_, ferr := a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: p.SessionId, Path: "/etc/hostname"})
		_, terr := a.conn.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionId: p.SessionId, Command: "ls"})
		say(fmt.Sprintf("fs: %s; terminal: %s", code(ferr), code(terr)))
		return end(acp.StopReasonEndTurn)
	case "bye":
		say("bye")
		go func() {
			time.Sleep(100 * time.Millisecond)
			os.Exit(0)
		}()
		return end(acp.StopReasonEndTurn)
	}
	say("unknown scenario " + word)
	return end(acp.StopReasonEndTurn)
}

func (a *agent) askPermission(ctx context.Context, id acp.SessionId, word string, end func(acp.StopReason) (acp.PromptResponse, error)) (acp.PromptResponse, error) {
	tc := acp.ToolCallUpdate{ToolCallId: "p1", Title: acp.Ptr("Run rm -rf build"), Kind: acp.Ptr(acp.ToolKindExecute)}
	if word == "readsecret" {
		tc = acp.ToolCallUpdate{ToolCallId: "p2", Title: acp.Ptr("Read .env"), Kind: acp.Ptr(acp.ToolKindRead),
			Locations: []acp.ToolCallLocation{{Path: ".env"}}}
	}
	resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: id, ToolCall: tc, Options: []acp.PermissionOption{
		{OptionId: "yes", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionId: "always", Name: "Always", Kind: acp.PermissionOptionKindAllowAlways},
		{OptionId: "no", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
	}})
	chosen := "cancelled"
	switch {
	case err != nil:
		chosen = "error " + err.Error()
	case resp.Outcome.Selected != nil:
		chosen = string(resp.Outcome.Selected.OptionId)
	}
	a.update(ctx, id, acp.UpdateAgentMessageText("permission: "+chosen))
	return end(acp.StopReasonEndTurn)
}

func code(err error) string {
	if re, ok := err.(*acp.RequestError); ok {
		return fmt.Sprint(re.Code)
	}
	if err == nil {
		return "ok"
	}
	return err.Error()
}
