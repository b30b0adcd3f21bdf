package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	f "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit/golden"
)

// newResponses is newFixture on the Responses wire.
func newResponses(t *testing.T, mut func(*Config)) *fixture {
	t.Helper()
	return newFixture(t, func(c *Config) {
		c.Wire = WireResponses
		if mut != nil {
			mut(c)
		}
	})
}

func TestResponsesText(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, nil)
	resp, got, err := fx.stream(t, f.Text("Hel", "lo", " world"), f.Usage(10, 3))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "Hel|lo| world" {
		t.Fatalf("deltas %q", got)
	}
	if resp.Content != "Hello world" || resp.FinishReason != "stop" || len(resp.ToolCalls) != 0 {
		t.Fatalf("response %+v", resp)
	}
	// The Responses wire always reports cached input tokens (0 here).
	if want := (&provider.Usage{InputTokens: 10, OutputTokens: 3, CachedInputTokens: new(int64(0))}); !reflect.DeepEqual(resp.Usage, want) {
		t.Fatalf("usage %s, want %s", usageText(resp.Usage), usageText(want))
	}
	resp, _, err = fx.stream(t, f.Text("again"), f.CachedUsage(10, 3, 8))
	if err != nil || resp.Usage == nil || resp.Usage.CachedInputTokens == nil || *resp.Usage.CachedInputTokens != 8 {
		t.Fatalf("cached usage %s, %v: want 8 cached", usageText(resp.Usage), err)
	}
	r := fx.srv.Requests()[0]
	if r.Path != "/v1/responses" || r.Wire != "responses" || r.Model != "gpt-test" || !r.Stream {
		t.Fatalf("request %s wire %q model %q stream %v", r.Path, r.Wire, r.Model, r.Stream)
	}
	if r.JSON["store"] != false {
		t.Fatalf("store %v", r.JSON["store"])
	}
}

func TestResponsesUsageAbsent(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, nil)
	resp, _, err := fx.stream(t, f.Text("a"))
	if err != nil || resp.Usage != nil {
		t.Fatalf("response %+v, error %v", resp, err)
	}
}

func TestResponsesToolCalls(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, nil)
	resp, got, err := fx.stream(t,
		f.Text("Let me look."),
		f.ToolCall("call_1", "read", `{"pa`, `th":`, `"a.txt"}`),
		f.ToolCall("call_2", "bash", `{"command":`, `"ls"}`),
		f.Usage(20, 9),
	)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "") != "Let me look." {
		t.Fatalf("deltas %q", got)
	}
	want := []provider.ToolCall{
		{ID: "call_1", Name: "read", Arguments: `{"path":"a.txt"}`},
		{ID: "call_2", Name: "bash", Arguments: `{"command":"ls"}`},
	}
	if fmt.Sprint(resp.ToolCalls) != fmt.Sprint(want) || resp.FinishReason != "tool_calls" || resp.Usage == nil {
		t.Fatalf("response %+v", resp)
	}
}

// Argument deltas of several calls may interleave; they are told apart by
// item id, or by output index when a server sends no id.
func TestResponsesToolCallsInterleaved(t *testing.T) {
	t.Parallel()
	added := func(idx int, id, call, name string) f.Step {
		return f.Event(fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":{"id":%q,"type":"function_call","call_id":%q,"name":%q,"arguments":""}}`, idx, id, call, name))
	}
	delta := func(idx int, id, s string) f.Step {
		b, _ := json.Marshal(s)
		return f.Event(fmt.Sprintf(`{"type":"response.function_call_arguments.delta","item_id":%q,"output_index":%d,"delta":%s}`, id, idx, b))
	}
	fx := newResponses(t, nil)
	resp, _, err := fx.stream(t,
		added(2, "fc_b", "call_b", "second"),
		added(1, "fc_a", "call_a", "first"),
		delta(2, "fc_b", `{"x"`),
		delta(1, "fc_a", `{"y"`),
		delta(2, "fc_b", `:2}`),
		delta(1, "fc_a", `:1}`),
		// Deltas of a call whose item never came: keyed by output index.
		delta(3, "", `{}`),
		// Its done item names it: the same call, not a new one.
		f.Event(`{"type":"response.output_item.done","output_index":3,"item":{"id":"fc_c","type":"function_call","call_id":"call_c","name":"third","arguments":"{}"}}`),
		// arguments.done is the final text, whatever the deltas said.
		f.Event(`{"type":"response.function_call_arguments.done","item_id":"fc_a","output_index":1,"arguments":"{\"y\":10}"}`),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.ToolCall{
		{ID: "call_a", Name: "first", Arguments: `{"y":10}`},
		{ID: "call_b", Name: "second", Arguments: `{"x":2}`},
		{ID: "call_c", Name: "third", Arguments: `{}`},
	}
	if fmt.Sprint(resp.ToolCalls) != fmt.Sprint(want) {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}
}

// A server that sends items whole, without deltas, is read too.
func TestResponsesWholeItems(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, nil)
	resp, got, err := fx.stream(t,
		f.Event(`{"type":"response.output_item.done","output_index":0,"item":{"id":"m1","type":"message","content":[{"type":"output_text","text":"whole text","annotations":[]}]}}`),
		f.Event(`{"type":"response.output_item.done","output_index":1,"item":{"id":"fc1","type":"function_call","call_id":"c1","name":"read","arguments":"{\"path\":\"x\"}"}}`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "") != "whole text" || resp.Content != "whole text" {
		t.Fatalf("deltas %q, response %+v", got, resp)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0] != (provider.ToolCall{ID: "c1", Name: "read", Arguments: `{"path":"x"}`}) {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}
}

func TestResponsesHostedSearchAndSources(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps []f.Step
		want  string
	}{
		{
			name: "sources appended",
			steps: []f.Step{f.WebSearch("tokio latest version"), f.Text("Tokio 1.48 is the latest."),
				f.Citation("https://crates.io/crates/tokio", "tokio - crates.io"),
				f.Citation("https://github.com/tokio-rs/tokio/releases", "Releases · tokio-rs/tokio"),
				f.Citation("https://crates.io/crates/tokio", "duplicate")},
			want: "Tokio 1.48 is the latest.\n\nSources:\n- tokio - crates.io: https://crates.io/crates/tokio\n- Releases · tokio-rs/tokio: https://github.com/tokio-rs/tokio/releases",
		},
		{
			name: "already linked URLs are not repeated",
			steps: []f.Step{f.WebSearch("q"), f.Text("See [crates.io](https://crates.io/crates/tokio).\n"),
				f.Citation("https://crates.io/crates/tokio", "tokio"), f.Citation("https://docs.rs/tokio", "")},
			want: "See [crates.io](https://crates.io/crates/tokio).\n\nSources:\n- https://docs.rs/tokio",
		},
		{
			name:  "every URL linked",
			steps: []f.Step{f.Text("Per https://a.example/x it is so."), f.Citation("https://a.example/x", "A")},
			want:  "Per https://a.example/x it is so.",
		},
		{
			name: "unsafe citations dropped",
			steps: []f.Step{f.Text("x"), f.Citation("javascript:alert(1)", "bad"), f.Citation("https://a.example/\nInjected", "bad"),
				f.Citation("https://b.example/", "multi\nline\ttitle")},
			want: "x\n\nSources:\n- multi line title: https://b.example/",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newResponses(t, nil)
			fx.srv.Enqueue(f.Script(append(tc.steps, f.Usage(5, 5))...))
			var d deltas
			req := userReq
			req.HostedWebSearch = true
			resp, err := fx.p.Stream(context.Background(), req, &d)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Content != tc.want || strings.Join(d.all(), "") != tc.want {
				t.Fatalf("content %q\ndeltas %q\nwant %q", resp.Content, strings.Join(d.all(), ""), tc.want)
			}
			if len(resp.ToolCalls) != 0 || resp.FinishReason != "stop" {
				t.Fatalf("response %+v", resp)
			}
			types := fx.srv.Requests()[0].ToolTypes()
			if len(types) != 1 || types[0] != "web_search" {
				t.Fatalf("tools %v", types)
			}
		})
	}
}

// The Sources list never pushes the text over its limit: entries that do
// not fit are left out.
func TestResponsesSourcesWithinLimit(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, func(c *Config) { c.Limits = provider.Limits{AssistantBytes: 60} })
	resp, _, err := fx.stream(t, f.Text("answer"), f.Citation("https://a.example/1", ""), f.Citation("https://a.example/22222222222222222222", ""))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Content != "answer\n\nSources:\n- https://a.example/1" {
		t.Fatalf("content %q", resp.Content)
	}
}

func TestResponsesFinish(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason, want string
	}{{"max_output_tokens", "length"}, {"content_filter", "content_filter"}} {
		fx := newResponses(t, nil)
		resp, _, err := fx.stream(t, f.Text("cut"), f.Incomplete(tc.reason), f.Usage(1, 2))
		if err != nil || resp.FinishReason != tc.want || resp.Content != "cut" || resp.Usage == nil {
			t.Fatalf("%s: response %+v, error %v", tc.reason, resp, err)
		}
	}
}

func TestResponsesStreamErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps []f.Step
		want  string
		// tail: the case needs the reply's tail, so it cannot end in a Hang
		// that proves nothing after the error is read.
		tail bool
	}{
		{"response.failed", []f.Step{f.Text("a"), f.Failed("server_error", "The model crashed.")}, "provider reported an error in the stream: The model crashed. (server_error)", true},
		{"error event", []f.Step{f.Text("a"), f.Event(`{"type":"error","code":"rate_limit_exceeded","message":"Slow down.","param":null}`)}, "Slow down. (rate_limit_exceeded)", false},
		{"nested error event", []f.Step{f.Event(`{"type":"error","error":{"message":"bad input"}}`)}, "bad input", false},
		{"bare error event", []f.Step{f.Event(`{"type":"error"}`)}, "unknown error", false},
		{"bad json", []f.Step{f.Text("a"), f.Raw([]byte("data: {not json\n\n"))}, "malformed stream", false},
		{"ends without completed", []f.Step{f.Text("partial"), f.NoDone()}, "stream ended early: no response.completed", true},
		{"done without completed", []f.Step{f.Text("partial"), f.Raw([]byte("data: [DONE]\n\n")), f.NoDone()}, "stream ended early", true},
		{"key redacted", []f.Step{f.Event(`{"type":"error","message":"bad key ` + testKey + `"}`)}, "bad key [redacted]", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newResponses(t, nil)
			steps := append(append([]f.Step(nil), tc.steps...), f.Text("never"))
			if !tc.tail {
				steps = append(steps, f.Hang())
			}
			resp, got, err := fx.stream(t, steps...)
			if !tc.tail && strings.Contains(strings.Join(got, ""), "never") {
				t.Fatalf("text after the error was delivered: %q", got)
			}
			if resp != nil {
				t.Fatalf("response %+v", resp)
			}
			wantError(t, err, provider.CodeProviderError, tc.want)
			if n := len(fx.srv.Requests()); n != 1 {
				t.Fatalf("%d requests: a stream that started must not be retried", n)
			}
		})
	}
}

// The reply is complete at response.completed: what follows is not waited
// for.
func TestResponsesStopsAtCompleted(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, nil)
	resp, _, err := fx.stream(t, f.Text("a"),
		f.Event(`{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":1,"output_tokens":1}}}`),
		f.Hang())
	if err != nil || resp.Content != "a" {
		t.Fatalf("response %+v, error %v", resp, err)
	}
}

func TestResponsesLimits(t *testing.T) {
	t.Parallel()
	kib := func(n int) string { return strings.Repeat("x", n<<10) }
	var manyCalls []f.Step
	for i := range provider.MaxToolCalls + 1 {
		manyCalls = append(manyCalls, f.ToolCall(fmt.Sprintf("c%d", i), "read", `{}`))
	}
	var bigArgs []string
	for range 30 {
		bigArgs = append(bigArgs, `"`+kib(10)+`",`)
	}
	for _, tc := range []struct {
		name  string
		steps []f.Step
		code  provider.Code
		want  string
	}{
		{"sse event", []f.Step{f.Text("a"), f.Raw([]byte(`data: {"type":"response.output_text.delta","delta":"` + kib(1100) + `"}` + "\n\n"))},
			provider.CodeResponseLimit, "SSE event exceeds 1048576 bytes"},
		{"whole response", []f.Step{f.Text("a"), f.Raw([]byte(strings.Repeat(": keep-alive "+kib(1)+"\n\n", 5000)))},
			provider.CodeResponseLimit, "response exceeds 4194304 bytes"},
		{"assistant text", []f.Step{f.Repeat(1100, kib(1))},
			provider.CodeResponseLimit, "assistant text exceeds 1048576 bytes"},
		{"tool arguments", []f.Step{f.ToolCall("c1", "write", bigArgs...)},
			provider.CodeResponseLimit, `arguments of tool call "write" exceed 262144 bytes`},
		{"tool arguments whole", []f.Step{f.Event(`{"type":"response.output_item.done","output_index":0,"item":{"id":"fc","type":"function_call","call_id":"c","name":"write","arguments":"` + kib(300) + `"}}`)},
			provider.CodeResponseLimit, `arguments of tool call "write" exceed 262144 bytes`},
		{"tool calls", manyCalls, provider.CodeToolLimit, "more than 32 tool calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newResponses(t, nil)
			steps := append(append([]f.Step(nil), tc.steps...), f.Hang())
			resp, got, err := fx.stream(t, steps...)
			if resp != nil {
				t.Fatalf("response %+v returned with the error", resp)
			}
			wantError(t, err, tc.code, tc.want)
			n := 0
			for _, d := range got {
				n += len(d)
			}
			if n > provider.MaxAssistantBytes {
				t.Fatalf("handler got %d bytes of text", n)
			}
		})
	}
}

func TestResponsesHTTPErrorsAndRetry(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, nil)
	fx.srv.Enqueue(f.Script(f.APIError(401, "Incorrect API key provided: "+testKey)))
	_, err := fx.p.Stream(context.Background(), userReq, nil)
	pe := wantError(t, err, provider.CodeProviderError, "check the API key")
	if pe.Status != 401 || !strings.Contains(pe.Error(), "[redacted]") {
		t.Fatalf("error %q", pe.Error())
	}

	fx = newResponses(t, nil)
	fx.srv.Enqueue(f.Script(f.APIError(429, "slow down"), f.Header("Retry-After", "7")), f.Script(f.APIError(500, "oops")), f.Script(f.Text("ok")))
	resp, err := fx.p.Stream(context.Background(), userReq, nil)
	if err != nil || resp.Content != "ok" {
		t.Fatalf("response %+v, error %v", resp, err)
	}
	if w := fx.recordedWaits(); fmt.Sprint(w) != "[7s 2ms]" {
		t.Fatalf("waits %v", w)
	}
	r := fx.srv.Requests()
	if len(r) != 3 || !bytes.Equal(r[0].Body, r[2].Body) {
		t.Fatalf("%d requests, retried body differs", len(r))
	}
}

func TestResponsesIdleTimeout(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
	resp, got, err := fx.stream(t, f.Text("a"), f.Hang())
	if resp != nil {
		t.Fatalf("response %+v", resp)
	}
	wantError(t, err, provider.CodeProviderError, "the provider sent nothing for 0.2 seconds")
	if strings.Join(got, "") != "a" || len(fx.srv.Requests()) != 1 {
		t.Fatalf("deltas %q, %d requests", got, len(fx.srv.Requests()))
	}
}

// The request body of a history with tool calls, tools and hosted search,
// as sent (testdata/responses_request.json; go test -update rewrites it).
func TestResponsesRequestGolden(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, nil)
	fx.srv.Enqueue(f.Script(f.Text("ok")))
	req := provider.Request{
		Model:  "gpt-5",
		System: "You are SCV.",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Content: "read x and list"},
			{Role: provider.RoleAssistant, Content: "Reading.", ToolCalls: []provider.ToolCall{
				{ID: "call_1", Name: "read", Arguments: `{"path":"x"}`},
				{ID: "call_2", Name: "bash", Arguments: `{"command":"ls"}`},
			}, Reasoning: []json.RawMessage{
				json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Read x first."}],"encrypted_content":"ENC1"}`),
			}},
			{Role: provider.RoleTool, ToolCallID: "call_1", Content: "contents of x"},
			{Role: provider.RoleTool, ToolCallID: "call_2", Content: ""},
			{Role: provider.RoleAssistant, Content: "x holds its contents."},
			{Role: provider.RoleSystem, Content: "Summary of earlier turns."},
			{Role: provider.RoleUser, Content: "thanks"},
		},
		Tools: []provider.ToolSpec{
			{Name: "read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "noargs", Description: "No arguments"},
		},
		HostedWebSearch: true,
	}
	if _, err := fx.p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	r := fx.srv.Requests()[0]
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, r.Body, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	golden.Equal(t, filepath.Join("testdata", "responses_request.json"), pretty.Bytes())
	// The fake reads it as the Responses API would.
	var kinds []string
	for _, it := range r.Input {
		kinds = append(kinds, it.Type+":"+it.Role+it.CallID)
	}
	if got := strings.Join(kinds, ","); got != "message:user,reasoning:,message:assistant,function_call:call_1,function_call:call_2,function_call_output:call_1,function_call_output:call_2,message:assistant,message:system,message:user" {
		t.Fatalf("input items %s", got)
	}
	if r.Instructions != "You are SCV." || r.Input[6].Output != "(no output)" || r.Input[3].Arguments != `{"path":"x"}` ||
		r.Input[1] != (f.InputItem{Type: "reasoning", ID: "rs_1", EncryptedContent: "ENC1", Summary: "Read x first."}) {
		t.Fatalf("request %+v", r)
	}
}

func TestResponsesRequestErrors(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, func(c *Config) { c.Model = "" })
	_, err := fx.p.Stream(context.Background(), userReq, nil)
	wantError(t, err, provider.CodeProviderError, "no model")
	_, err = fx.p.Stream(context.Background(), provider.Request{Model: "m", Messages: []provider.Message{{Role: "robot"}}}, nil)
	wantError(t, err, provider.CodeProviderError, `unknown role "robot"`)
	_, err = fx.p.Stream(context.Background(), provider.Request{Model: "m", Tools: []provider.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}}, nil)
	wantError(t, err, provider.CodeProviderError, `tool "t": its parameters are not a JSON object`)
	if n := len(fx.srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestWireConfig(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Wire: "grpc"}); err == nil || !strings.Contains(err.Error(), `wire "grpc"`) {
		t.Fatalf("error %v", err)
	}
	// The chat wire has no hosted search: the request goes without it, once
	// warned.
	fx := newFixture(t, nil)
	req := userReq
	req.HostedWebSearch = true
	for range 2 {
		fx.srv.Enqueue(f.Script(f.Text("ok")))
		if _, err := fx.p.Stream(context.Background(), req, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(fx.logs.String(), "hosted web search needs"); n != 1 {
		t.Fatalf("%d warnings: %s", n, fx.logs.String())
	}
	if len(fx.srv.Requests()[0].Tools) != 0 {
		t.Fatal("the chat request offers a tool")
	}
}

// BenchmarkResponses10kDeltas is BenchmarkStream10kDeltas on the
// Responses wire.
func BenchmarkResponses10kDeltas(b *testing.B) {
	srv := f.Start(b)
	p, err := New(Config{BaseURL: srv.URL(), Model: "m", Wire: WireResponses})
	if err != nil {
		b.Fatal(err)
	}
	defer p.CloseIdleConnections()
	h := provider.HandlerFunc(func(string) error { return nil })
	b.ReportAllocs()
	for b.Loop() {
		srv.Enqueue(f.Script(f.Repeat(10000, "tok ")))
		if _, err := p.Stream(context.Background(), userReq, h); err != nil {
			b.Fatal(err)
		}
	}
}

func TestResponsesHTTPStatuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{400, `{"error":{"message":"Unsupported parameter: 'store'.","type":"invalid_request_error"}}`, "rejected the request: Unsupported parameter: 'store'."},
		{403, `forbidden`, "check the API key"},
		{404, ``, "Not Found"},
		{422, `{"error":"bad tool schema"}`, "bad tool schema"},
	} {
		fx := newResponses(t, nil)
		fx.srv.Enqueue(f.Script(f.Status(tc.status, tc.body)), f.Script(f.Text("must not be used")))
		_, err := fx.p.Stream(context.Background(), userReq, nil)
		pe := wantError(t, err, provider.CodeProviderError, tc.want)
		if pe.Status != tc.status || len(fx.srv.Requests()) != 1 || len(fx.recordedWaits()) != 0 {
			t.Fatalf("%d: status %d, %d requests, waits %v", tc.status, pe.Status, len(fx.srv.Requests()), fx.recordedWaits())
		}
	}
	fx := newResponses(t, func(c *Config) { c.MaxRetries = 1 })
	fx.srv.Enqueue(f.Script(f.APIError(503, "overloaded")), f.Script(f.APIError(503, "still overloaded")))
	_, err := fx.p.Stream(context.Background(), userReq, nil)
	wantError(t, err, provider.CodeProviderError, "the provider failed: still overloaded (after 2 attempts)")
}

func TestResponsesCancelAndHandlerError(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, nil)
	fx.srv.Enqueue(f.Script(f.Text("a"), f.Hang()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := fx.p.Stream(ctx, userReq, provider.HandlerFunc(func(string) error {
		cancel()
		return nil
	}))
	if resp != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("response %+v, error %v", resp, err)
	}

	fx.srv.Enqueue(f.Script(f.Text("a", "b"), f.Hang()))
	stop := errors.New("client went away")
	resp, err = fx.p.Stream(context.Background(), userReq, provider.HandlerFunc(func(string) error { return stop }))
	if resp != nil || err != stop {
		t.Fatalf("response %+v, error %v", resp, err)
	}
}

// FuzzResponsesEvents feeds arbitrary events (one per line) to the
// Responses decoder: it must never panic, never pass a limit, and fail
// only with a *provider.Error.
func FuzzResponsesEvents(fz *testing.F) {
	for _, s := range eventSeeds {
		fz.Add(s)
	}
	fz.Add(strings.Join(eventSeeds, "\n"))
	p, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m", Wire: WireResponses,
		Limits: provider.Limits{AssistantBytes: 64, ToolArgumentBytes: 32, ToolCalls: 2}})
	if err != nil {
		fz.Fatal(err)
	}
	fz.Fuzz(func(t *testing.T, in string) {
		var text strings.Builder
		d := responsesWire{}.decoder(p, provider.HandlerFunc(func(s string) error {
			text.WriteString(s)
			return nil
		}))
		for line := range strings.SplitSeq(in, "\n") {
			done, err := d.event(nil, []byte(line))
			if err != nil {
				if _, ok := provider.AsError(err); !ok {
					t.Fatalf("error %v (%T)", err, err)
				}
				return
			}
			if done {
				break
			}
		}
		if text.Len() > 64 {
			t.Fatalf("%d bytes of text streamed", text.Len())
		}
		resp, err := d.end(true)
		if err != nil {
			return
		}
		if resp.Content != text.String() || len(resp.ToolCalls) > 2 {
			t.Fatalf("response %+v, streamed %q", resp, text.String())
		}
		for _, c := range resp.ToolCalls {
			if len(c.Arguments) > 32 || c.ID == "" {
				t.Fatalf("tool call %+v", c)
			}
		}
	})
}

// TestResponsesSSEFraming: the Responses stream read with bare CR line
// ends, keep-alive pings, unknown named events whose data is not JSON and
// lifecycle events gives the same reply; an "error" event whose data is
// not JSON fails the turn with its text.
func TestResponsesSSEFraming(t *testing.T) {
	t.Parallel()
	delta := func(s string) string {
		return `event: response.output_text.delta` + "\r" + `data: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"` + s + `"}` + "\r\r"
	}
	raw := "\xEF\xBB\xBFevent: response.created\rdata: {\"type\":\"response.created\",\"response\":{}}\r\r" +
		": keep-alive\r\r" +
		"event: ping\rdata: ping\r\r" +
		delta("Hel") +
		"event: vendor.debug\rdata: <not json>\rdata: two lines\r\r" +
		"event: response.output_text.done\rdata: {\"type\":\"response.output_text.done\",\"text\":\"Hello\"}\r\n\r\n" +
		delta("lo") +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\",\"usage\":{\"input_tokens\":4,\"output_tokens\":2}}}\r\r"
	fx := newResponses(t, nil)
	resp, got, err := fx.stream(t, f.Raw([]byte(raw)), f.NoDone())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "Hel|lo" || resp.Content != "Hello" || resp.FinishReason != "stop" ||
		resp.Usage == nil || resp.Usage.OutputTokens != 2 {
		t.Fatalf("deltas %q, response %+v", got, resp)
	}
	// Between the fake's own events too.
	fx = newResponses(t, nil)
	resp, got, err = fx.stream(t, f.Text("a"), f.Raw([]byte("event: keepalive\rdata: \u263a not json\r\r")), f.Text("b"))
	if err != nil || resp.Content != "ab" || strings.Join(got, "|") != "a|b" {
		t.Fatalf("deltas %q, response %+v, %v", got, resp, err)
	}
	fx = newResponses(t, nil)
	_, _, err = fx.stream(t, f.Text("a"), f.Raw([]byte("event: error\rdata: the upstream went away\r\r")))
	wantError(t, err, provider.CodeProviderError, "provider reported an error in the stream: the upstream went away")
	// A known event whose data is not JSON is a broken stream, not skipped.
	fx = newResponses(t, nil)
	_, _, err = fx.stream(t, f.Text("a"), f.Raw([]byte("event: response.output_text.delta\rdata: {\r\r")))
	wantError(t, err, provider.CodeProviderError, "malformed stream")
}
