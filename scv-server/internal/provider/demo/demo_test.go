package demo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/tools/workspace"
)

var (
	readSpec  = provider.ToolSpec{Name: "read", Description: "read a file", Parameters: json.RawMessage(`{"type":"object"}`)}
	bashSpec  = provider.ToolSpec{Name: "bash", Description: "run a command", Parameters: json.RawMessage(`{"type":"object"}`)}
	writeSpec = provider.ToolSpec{Name: "write", Description: "write a file", Parameters: json.RawMessage(`{"type":"object"}`)}
)

const listing = "[.: directory, 3 entries]\nREADME.md\ngo.mod\nmain.go\n"

// recorder collects the streamed deltas.
type recorder struct{ deltas []string }

func (r *recorder) OnDelta(s string) error {
	r.deltas = append(r.deltas, s)
	return nil
}

func (r *recorder) text() string { return strings.Join(r.deltas, "") }

// conversation builds the history the agent loop would send: earlier
// turns, the user's prompt, and then one assistant call plus its tool
// result per entry of results.
func conversation(prompt string, results ...string) []provider.Message {
	msgs := []provider.Message{
		// An earlier finished turn: its tool results must not count.
		{Role: provider.RoleUser, Content: "an earlier question"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "old", Name: "read", Arguments: `{"path":"."}`}}},
		{Role: provider.RoleTool, ToolCallID: "old", Content: "an old result"},
		{Role: provider.RoleAssistant, Content: "an earlier answer"},
		{Role: provider.RoleUser, Content: prompt},
	}
	for i, r := range results {
		id := []string{"demo_list", "demo_approval", "extra"}[min(i, 2)]
		msgs = append(msgs,
			provider.Message{Role: provider.RoleAssistant, Content: "…", ToolCalls: []provider.ToolCall{{ID: id, Name: "read", Arguments: `{}`}}},
			provider.Message{Role: provider.RoleTool, ToolCallID: id, Content: r},
		)
	}
	return msgs
}

func stream(t *testing.T, req provider.Request) (*provider.Response, *recorder) {
	t.Helper()
	var rec recorder
	resp, err := New().Stream(context.Background(), req, &rec)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if resp == nil {
		t.Fatal("Stream returned a nil response")
	}
	checkResponse(t, resp, &rec)
	return resp, &rec
}

// checkResponse checks what every reply shares: deltas make up the content
// exactly, usage is set, and the finish reason matches the calls.
func checkResponse(t *testing.T, resp *provider.Response, rec *recorder) {
	t.Helper()
	if resp.Content == "" {
		t.Fatal("empty content")
	}
	if rec.text() != resp.Content {
		t.Fatalf("deltas concatenate to\n%q\nnot Content\n%q", rec.text(), resp.Content)
	}
	if len(rec.deltas) < 2 {
		t.Fatalf("content came in %d delta(s), want it streamed in pieces", len(rec.deltas))
	}
	for i, d := range rec.deltas {
		if d == "" {
			t.Fatalf("delta %d is empty", i)
		}
	}
	if resp.Usage == nil || resp.Usage.OutputTokens <= 0 || resp.Usage.InputTokens < 0 {
		t.Fatalf("Usage = %+v, want it set with positive output tokens", resp.Usage)
	}
	wantFinish := "stop"
	if len(resp.ToolCalls) > 0 {
		wantFinish = "tool_calls"
	}
	if resp.FinishReason != wantFinish {
		t.Fatalf("FinishReason = %q, want %q", resp.FinishReason, wantFinish)
	}
	for _, c := range resp.ToolCalls {
		if c.ID == "" || c.Name == "" {
			t.Fatalf("tool call without id or name: %+v", c)
		}
		var args map[string]any
		if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
			t.Fatalf("tool call arguments %q are not a JSON object: %v", c.Arguments, err)
		}
	}
}

func callArgs(t *testing.T, c provider.ToolCall) map[string]any {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
		t.Fatal(err)
	}
	return args
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	p := New()
	var _ provider.Provider = p
	if p.Name() != "demo" || p.Model() != "scv-demo" || p.ContextMaxTokens() <= 0 {
		t.Fatalf("Name=%q Model=%q ContextMaxTokens=%d", p.Name(), p.Model(), p.ContextMaxTokens())
	}
}

func TestFirstRequestListsWorkspace(t *testing.T) {
	t.Parallel()
	for _, offered := range [][]provider.ToolSpec{{readSpec}, {readSpec, bashSpec}, {writeSpec, readSpec}} {
		resp, _ := stream(t, provider.Request{
			Model:    Model,
			System:   "system prompt",
			Messages: []provider.Message{{Role: provider.RoleUser, Content: "hello there"}},
			Tools:    offered,
		})
		if !strings.Contains(resp.Content, "demo") {
			t.Errorf("content does not say it is the demo: %q", resp.Content)
		}
		if !strings.Contains(resp.Content, `"hello there"`) {
			t.Errorf("content does not echo the prompt: %q", resp.Content)
		}
		if len(resp.ToolCalls) != 1 {
			t.Fatalf("%d tool calls, want 1", len(resp.ToolCalls))
		}
		c := resp.ToolCalls[0]
		if c.Name != "read" || callArgs(t, c)["path"] != "." {
			t.Fatalf("call = %+v, want read of \".\"", c)
		}
	}
}

func TestFirstRequestIgnoresEarlierTurns(t *testing.T) {
	t.Parallel()
	// The earlier turn's tool result is before the last user message, so
	// this is still the first step of the new turn.
	resp, _ := stream(t, provider.Request{Messages: conversation("second question"), Tools: []provider.ToolSpec{readSpec}})
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "read" || callArgs(t, resp.ToolCalls[0])["path"] != "." {
		t.Fatalf("calls = %+v, want one read of \".\"", resp.ToolCalls)
	}
	if !strings.Contains(resp.Content, `"second question"`) {
		t.Fatalf("content does not quote the last prompt: %q", resp.Content)
	}
}

func TestLongPromptIsClipped(t *testing.T) {
	t.Parallel()
	prompt := strings.Repeat("é", 300) // 600 bytes, 2 bytes a character
	resp, _ := stream(t, provider.Request{
		Messages: []provider.Message{{Role: provider.RoleUser, Content: prompt}},
		Tools:    []provider.ToolSpec{readSpec},
	})
	if strings.Contains(resp.Content, prompt) {
		t.Fatal("a 600-byte prompt was echoed whole")
	}
	if !strings.Contains(resp.Content, "…") {
		t.Fatalf("clipped prompt has no ellipsis: %q", resp.Content)
	}
	if !utf8.ValidString(resp.Content) {
		t.Fatal("clipping cut a character: the content is not valid UTF-8")
	}
}

func TestSecondRequestAsksForApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		tools    []provider.ToolSpec
		wantName string
		check    func(t *testing.T, args map[string]any)
	}{
		{
			name: "bash offered", tools: []provider.ToolSpec{readSpec, bashSpec}, wantName: "bash",
			check: func(t *testing.T, args map[string]any) {
				if cmd, _ := args["command"].(string); cmd == "" {
					t.Fatalf("bash call without a command: %v", args)
				}
			},
		},
		{
			name: "read only", tools: []provider.ToolSpec{readSpec}, wantName: "read",
			check: func(t *testing.T, args map[string]any) {
				p, _ := args["path"].(string)
				if p == "" || !workspace.SecretLike(p) {
					t.Fatalf("read of %q is not secret-like, so it would not ask for approval", p)
				}
			},
		},
		{
			name: "read and write", tools: []provider.ToolSpec{readSpec, writeSpec}, wantName: "read",
			check: func(t *testing.T, args map[string]any) {
				if p, _ := args["path"].(string); !workspace.SecretLike(p) {
					t.Fatalf("read of %q is not secret-like", p)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := stream(t, provider.Request{Messages: conversation("show me", listing), Tools: tc.tools})
			if !strings.Contains(resp.Content, listing) {
				t.Errorf("content does not include the listing:\n%s", resp.Content)
			}
			if !strings.Contains(resp.Content, "approval") {
				t.Errorf("content does not announce the approval: %q", resp.Content)
			}
			if len(resp.ToolCalls) != 1 {
				t.Fatalf("%d tool calls, want 1", len(resp.ToolCalls))
			}
			c := resp.ToolCalls[0]
			if c.Name != tc.wantName {
				t.Fatalf("call %q, want %q", c.Name, tc.wantName)
			}
			tc.check(t, callArgs(t, c))
		})
	}
}

func TestSecondRequestClipsLongListing(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("file.go\n", 200)
	resp, _ := stream(t, provider.Request{Messages: conversation("x", long), Tools: []provider.ToolSpec{readSpec}})
	if strings.Contains(resp.Content, long) {
		t.Fatal("a 1600-byte listing was included whole")
	}
	if !strings.Contains(resp.Content, long[:600]) {
		t.Fatal("the start of the listing is missing")
	}
}

func TestFinalRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		results    []string
		wantDenied bool
	}{
		{"approved and ran", []string{listing, "hello from the SCV demo\n"}, false},
		{"denied by the user", []string{listing, "denied: the user did not approve this bash call; do not retry it unless the user asks"}, true},
		{"denied by the policy", []string{listing, `denied: the approval policy "never" does not allow bash calls`}, true},
		{"failed", []string{listing, ".env.scv-demo does not exist in the workspace"}, false},
		{"more results than the script", []string{listing, "ran", "denied: again"}, true},
		{"denial earlier only", []string{listing, "denied: no", "ran fine"}, false},
	}
	for _, tc := range tests {
		for _, offered := range [][]provider.ToolSpec{{readSpec}, {readSpec, bashSpec}} {
			t.Run(tc.name+"/"+offered[len(offered)-1].Name, func(t *testing.T) {
				resp, _ := stream(t, provider.Request{Messages: conversation("go", tc.results...), Tools: offered})
				if len(resp.ToolCalls) != 0 {
					t.Fatalf("final reply has tool calls: %+v", resp.ToolCalls)
				}
				for _, w := range []string{"config.toml", "OPENAI_API_KEY"} {
					if !strings.Contains(resp.Content, w) {
						t.Errorf("final reply lacks the configuration hint %q:\n%s", w, resp.Content)
					}
				}
				saysDenied := strings.Contains(resp.Content, "denied")
				if saysDenied != tc.wantDenied {
					t.Fatalf("reply says denied: %v, want %v:\n%s", saysDenied, tc.wantDenied, resp.Content)
				}
				if !tc.wantDenied && !strings.Contains(resp.Content, "The call ran.") {
					t.Fatalf("reply does not say the call ran:\n%s", resp.Content)
				}
			})
		}
	}
}

func TestNoTools(t *testing.T) {
	t.Parallel()
	for _, offered := range [][]provider.ToolSpec{nil, {}, {bashSpec}, {writeSpec, bashSpec}} {
		for _, msgs := range [][]provider.Message{
			{{Role: provider.RoleUser, Content: "hi"}},
			conversation("hi", listing), // even mid-turn, no read means no script
			nil,
		} {
			resp, rec := stream(t, provider.Request{Messages: msgs, Tools: offered})
			if len(resp.ToolCalls) != 0 {
				t.Fatalf("tool-free reply has calls: %+v", resp.ToolCalls)
			}
			if resp.FinishReason != "stop" {
				t.Fatalf("FinishReason = %q", resp.FinishReason)
			}
			for _, w := range []string{"demo", "no file tools", "config.toml", "OPENAI_API_KEY"} {
				if !strings.Contains(resp.Content, w) {
					t.Errorf("reply lacks %q:\n%s", w, resp.Content)
				}
			}
			if rec.text() != resp.Content {
				t.Fatal("deltas do not make up the content")
			}
		}
	}
}

func TestDeltasAreWords(t *testing.T) {
	t.Parallel()
	resp, rec := stream(t, provider.Request{
		Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}},
		Tools:    []provider.ToolSpec{readSpec},
	})
	// Every delta after the first starts at a space: the text streams word
	// by word.
	for i, d := range rec.deltas[1:] {
		if !strings.HasPrefix(d, " ") {
			t.Fatalf("delta %d = %q does not start a word", i+1, d)
		}
	}
	if got := strings.Count(resp.Content, " ") + 1; len(rec.deltas) > got {
		t.Fatalf("%d deltas for %d words", len(rec.deltas), got)
	}
}

func TestUsageCountsInput(t *testing.T) {
	t.Parallel()
	resp, _ := stream(t, provider.Request{
		Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}},
		Tools:    []provider.ToolSpec{readSpec},
	})
	if resp.Usage.InputTokens <= 0 {
		t.Fatalf("InputTokens = %d for a non-empty request", resp.Usage.InputTokens)
	}
}

func TestUsageGrowsWithInput(t *testing.T) {
	t.Parallel()
	small, _ := stream(t, provider.Request{
		Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}},
		Tools:    []provider.ToolSpec{readSpec},
	})
	big, _ := stream(t, provider.Request{
		System:   strings.Repeat("system ", 1000),
		Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}},
		Tools:    []provider.ToolSpec{readSpec},
	})
	if big.Usage.InputTokens <= small.Usage.InputTokens {
		t.Fatalf("input tokens %d with a long system prompt, %d without", big.Usage.InputTokens, small.Usage.InputTokens)
	}
	if small.Usage.OutputTokens != int64(len(small.Content)+3)/4 {
		t.Fatalf("OutputTokens = %d for %d bytes", small.Usage.OutputTokens, len(small.Content))
	}
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	req := provider.Request{
		Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}},
		Tools:    []provider.ToolSpec{readSpec},
	}
	t.Run("before the first delta", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var rec recorder
		resp, err := New().Stream(ctx, req, &rec)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Stream = %v, want context.Canceled", err)
		}
		if resp != nil {
			t.Fatalf("Stream returned a response with its error: %+v", resp)
		}
		if len(rec.deltas) != 0 {
			t.Fatalf("%d deltas after cancel", len(rec.deltas))
		}
	})
	t.Run("while streaming", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var deltas []string
		h := provider.HandlerFunc(func(s string) error {
			deltas = append(deltas, s)
			if len(deltas) == 3 {
				cancel()
			}
			return nil
		})
		resp, err := New().Stream(ctx, req, h)
		if !errors.Is(err, context.Canceled) || resp != nil {
			t.Fatalf("Stream = %+v, %v; want nil, context.Canceled", resp, err)
		}
		if len(deltas) != 3 {
			t.Fatalf("%d deltas, want streaming to stop right after the cancel (3)", len(deltas))
		}
	})
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 0)
		defer cancel()
		if _, err := New().Stream(ctx, req, &recorder{}); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Stream = %v, want context.DeadlineExceeded", err)
		}
	})
}

type handlerErr struct{ n int }

func (e *handlerErr) Error() string { return "client went away" }

func TestHandlerErrorReturnedUnchanged(t *testing.T) {
	t.Parallel()
	for _, after := range []int{1, 2, 5} {
		want := &handlerErr{n: after}
		calls := 0
		h := provider.HandlerFunc(func(string) error {
			calls++
			if calls == after {
				return want
			}
			return nil
		})
		resp, err := New().Stream(context.Background(), provider.Request{
			Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}},
			Tools:    []provider.ToolSpec{readSpec},
		}, h)
		if err != want { // the very same value, not wrapped
			t.Fatalf("Stream error = %#v, want the handler's error %#v unchanged", err, want)
		}
		if resp != nil {
			t.Fatalf("Stream returned a response with its error: %+v", resp)
		}
		if calls != after {
			t.Fatalf("handler called %d times, want streaming to stop at the error (%d)", calls, after)
		}
	}
}

// TestScriptThroughTheLoop plays the whole demo the way the agent loop
// would, feeding each call's result back, and checks the three steps.
func TestScriptThroughTheLoop(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{true, false} {
		msgs := []provider.Message{{Role: provider.RoleUser, Content: "what is here?"}}
		tools := []provider.ToolSpec{readSpec, bashSpec}
		var steps []int
		for step := 0; step < 5; step++ {
			resp, _ := stream(t, provider.Request{System: "sys", Messages: msgs, Tools: tools})
			steps = append(steps, len(resp.ToolCalls))
			msgs = append(msgs, provider.Message{Role: provider.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
			if len(resp.ToolCalls) == 0 {
				if !strings.Contains(resp.Content, "config.toml") {
					t.Fatalf("final reply lacks the hint: %q", resp.Content)
				}
				if got := strings.Contains(resp.Content, "denied"); got != !approve {
					t.Fatalf("approve=%v: final reply says denied: %v", approve, got)
				}
				break
			}
			for _, c := range resp.ToolCalls {
				out := listing
				if c.ID == "demo_approval" {
					out = "hello from the SCV demo\n"
					if !approve {
						out = "denied: the user did not approve this bash call"
					}
				}
				msgs = append(msgs, provider.Message{Role: provider.RoleTool, ToolCallID: c.ID, Content: out})
			}
		}
		if len(steps) != 3 || steps[0] != 1 || steps[1] != 1 || steps[2] != 0 {
			t.Fatalf("calls per step = %v, want [1 1 0]", steps)
		}
	}
}
