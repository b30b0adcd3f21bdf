package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	f "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "sk-test-0123456789abcdef-SECRET"

type fixture struct {
	srv   *f.Server
	p     *Provider
	logs  *testkit.Buffer
	mu    sync.Mutex
	waits []time.Duration
}

// newFixture starts a fake and a provider pointed at it. Backoff waits are
// recorded instead of slept, and jitter is off, so retry tests are exact
// and instant.
func newFixture(t *testing.T, mut func(*Config)) *fixture {
	t.Helper()
	fx := &fixture{srv: f.Start(t), logs: &testkit.Buffer{}}
	cfg := Config{
		Name:           "openai",
		BaseURL:        fx.srv.URL(),
		APIKey:         testKey,
		Model:          "gpt-test",
		IdleTimeout:    time.Minute,
		RetryBaseDelay: time.Millisecond,
		RetryMaxDelay:  4 * time.Millisecond,
		Logger:         slog.New(slog.NewTextHandler(fx.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mut != nil {
		mut(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.CloseIdleConnections)
	p.jitter = func(d time.Duration) time.Duration { return d }
	p.sleep = func(ctx context.Context, d time.Duration) error {
		fx.mu.Lock()
		fx.waits = append(fx.waits, d)
		fx.mu.Unlock()
		return ctx.Err()
	}
	fx.p = p
	return fx
}

func (fx *fixture) recordedWaits() []time.Duration {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return append([]time.Duration(nil), fx.waits...)
}

// deltas collects streamed text.
type deltas struct {
	mu sync.Mutex
	d  []string
}

func (d *deltas) OnDelta(s string) error {
	d.mu.Lock()
	d.d = append(d.d, s)
	d.mu.Unlock()
	return nil
}

func (d *deltas) all() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.d...)
}

var userReq = provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}}

func (fx *fixture) stream(t *testing.T, steps ...f.Step) (*provider.Response, []string, error) {
	t.Helper()
	fx.srv.Enqueue(f.Script(steps...))
	var d deltas
	resp, err := fx.p.Stream(context.Background(), userReq, &d)
	return resp, d.all(), err
}

// wantError asserts err is a *provider.Error with code and a message
// containing want, and that the key is nowhere in it.
func wantError(t *testing.T, err error, code provider.Code, want string) *provider.Error {
	t.Helper()
	pe, ok := provider.AsError(err)
	if !ok {
		t.Fatalf("error %v (%T), want *provider.Error", err, err)
	}
	if pe.Code != code || !strings.Contains(pe.Error(), want) {
		t.Fatalf("error %q code %s, want code %s containing %q", pe.Error(), pe.Code, code, want)
	}
	if strings.Contains(pe.Error(), testKey) {
		t.Fatalf("error contains the API key: %q", pe.Error())
	}
	if len(pe.Message) > maxMessageBytes {
		t.Fatalf("message is %d bytes", len(pe.Message))
	}
	return pe
}

func TestStreamText(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
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
	if resp.Usage == nil || *resp.Usage != (provider.Usage{InputTokens: 10, OutputTokens: 3}) {
		t.Fatalf("usage %+v", resp.Usage)
	}
	r := fx.srv.Requests()[0]
	if r.Model != "gpt-test" || !r.Stream || !r.IncludeUsage {
		t.Fatalf("request model %q stream %v include_usage %v", r.Model, r.Stream, r.IncludeUsage)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps []f.Step
		want  *provider.Usage
	}{
		{"present", []f.Step{f.Text("a"), f.Usage(5, 1)}, &provider.Usage{InputTokens: 5, OutputTokens: 1}},
		{"cached", []f.Step{f.Text("a"), f.CachedUsage(5, 1, 4)}, &provider.Usage{InputTokens: 5, OutputTokens: 1, CachedInputTokens: new(int64(4))}},
		{"absent", []f.Step{f.Text("a")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, nil)
			resp, _, err := fx.stream(t, tc.steps...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.Usage, tc.want) {
				t.Fatalf("usage %s, want %s", usageText(resp.Usage), usageText(tc.want))
			}
		})
	}
}

func TestRequestMapping(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.srv.Enqueue(f.Script(f.Text("ok")))
	req := provider.Request{
		Model:  "other-model",
		System: "be brief",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Content: "read x"},
			{Role: provider.RoleAssistant, Content: "", ToolCalls: []provider.ToolCall{{ID: "c1", Name: "read", Arguments: `{"path":"x"}`}}},
			{Role: provider.RoleTool, ToolCallID: "c1", Content: "contents"},
			{Role: provider.RoleTool, ToolCallID: "c2", Content: ""},
			{Role: provider.RoleAssistant, Content: "done"},
		},
		Tools: []provider.ToolSpec{
			{Name: "read", Description: "Read a file", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
			{Name: "noargs", Description: "No arguments"},
		},
	}
	if _, err := fx.p.Stream(context.Background(), req, provider.HandlerFunc(func(string) error { return nil })); err != nil {
		t.Fatal(err)
	}
	r := fx.srv.Requests()[0]
	if r.Model != "other-model" {
		t.Fatalf("model %q", r.Model)
	}
	if got := strings.Join(r.Roles(), ","); got != "system,user,assistant,tool,tool,assistant" {
		t.Fatalf("roles %s", got)
	}
	m := r.Messages
	if m[0].Content != "be brief" || m[1].Content != "read x" || m[5].Content != "done" {
		t.Fatalf("messages %+v", m)
	}
	if len(m[2].ToolCalls) != 1 || m[2].ToolCalls[0] != (f.MessageToolCall{ID: "c1", Name: "read", Arguments: `{"path":"x"}`}) {
		t.Fatalf("assistant tool calls %+v", m[2].ToolCalls)
	}
	if m[3].ToolCallID != "c1" || m[3].Content != "contents" || m[4].ToolCallID != "c2" || m[4].Content == "" {
		t.Fatalf("tool messages %+v %+v", m[3], m[4])
	}
	if got := strings.Join(r.ToolNames(), ","); got != "read,noargs" {
		t.Fatalf("tools %s", got)
	}
	if r.Tools[0].Type != "function" || r.Tools[0].Description != "Read a file" ||
		string(r.Tools[0].Parameters) != `{"type":"object","properties":{"path":{"type":"string"}}}` {
		t.Fatalf("tool 0 %+v", r.Tools[0])
	}
	if string(r.Tools[1].Parameters) != `{"properties":{},"type":"object"}` {
		t.Fatalf("tool 1 parameters %s", r.Tools[1].Parameters)
	}
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, func(c *Config) { c.Model = "" })
	_, err := fx.p.Stream(context.Background(), userReq, nil)
	wantError(t, err, provider.CodeProviderError, "no model")
	_, err = fx.p.Stream(context.Background(), provider.Request{Model: "m", Messages: []provider.Message{{Role: "robot"}}}, nil)
	wantError(t, err, provider.CodeProviderError, `unknown role "robot"`)
	if n := len(fx.srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

func TestToolCallsFragmented(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
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
	if fmt.Sprint(resp.ToolCalls) != fmt.Sprint(want) {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}
	if resp.FinishReason != "tool_calls" || resp.Content != "Let me look." || resp.Usage == nil {
		t.Fatalf("response %+v", resp)
	}
}

func TestToolCallsInterleavedAndWithoutIndex(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	ev := func(s string) f.Step { return f.Event(`{"choices":[{"index":0,"delta":{"tool_calls":[` + s + `]}}]}`) }
	resp, _, err := fx.stream(t,
		ev(`{"index":1,"id":"b","type":"function","function":{"name":"second","arguments":""}}`),
		ev(`{"index":0,"id":"a","type":"function","function":{"name":"first","arguments":"{"}}`),
		ev(`{"index":1,"function":{"arguments":"{}"}}`),
		ev(`{"index":0,"function":{"arguments":"}"}}`),
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.ToolCall{{ID: "a", Name: "first", Arguments: "{}"}, {ID: "b", Name: "second", Arguments: "{}"}}
	if fmt.Sprint(resp.ToolCalls) != fmt.Sprint(want) {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}

	// No index at all (some compatible servers): fragments continue the
	// last call until a new id appears; a missing id gets one.
	resp, _, err = fx.stream(t,
		ev(`{"function":{"name":"x","arguments":"{\"a\":"}}`),
		ev(`{"function":{"arguments":"1}"}}`),
		ev(`{"id":"y1","function":{"name":"y","arguments":"{}"}}`),
	)
	if err != nil {
		t.Fatal(err)
	}
	want = []provider.ToolCall{{ID: "call_0", Name: "x", Arguments: `{"a":1}`}, {ID: "y1", Name: "y", Arguments: "{}"}}
	if fmt.Sprint(resp.ToolCalls) != fmt.Sprint(want) {
		t.Fatalf("tool calls %+v", resp.ToolCalls)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	kib := func(n int) string { return strings.Repeat("x", n<<10) }
	var manyCalls []f.Step
	for i := range provider.MaxToolCalls + 1 {
		manyCalls = append(manyCalls, f.ToolCall(fmt.Sprintf("c%d", i), "read", `{}`))
	}
	var bigArgs []string
	for range 30 {
		bigArgs = append(bigArgs, `"`+kib(10)+`",`) // 300 KiB in all
	}
	for _, tc := range []struct {
		name  string
		steps []f.Step
		code  provider.Code
		want  string
	}{
		{"sse event", []f.Step{f.Text("a"), f.Raw([]byte(`data: {"choices":[{"index":0,"delta":{"content":"` + kib(1100) + `"}}]}` + "\n\n"))},
			provider.CodeResponseLimit, "SSE event exceeds 1048576 bytes"},
		{"sse line without end", []f.Step{f.Raw([]byte("data: " + kib(1100)))},
			provider.CodeResponseLimit, "SSE event exceeds 1048576 bytes"},
		{"whole response", []f.Step{f.Text("a"), f.Raw([]byte(strings.Repeat(": keep-alive "+kib(1)+"\n\n", 5000)))},
			provider.CodeResponseLimit, "response exceeds 4194304 bytes"},
		{"assistant text", []f.Step{f.Repeat(1100, kib(1))},
			provider.CodeResponseLimit, "assistant text exceeds 1048576 bytes"},
		{"tool arguments", []f.Step{f.ToolCall("c1", "write", bigArgs...)},
			provider.CodeResponseLimit, `arguments of tool call "write" exceed 262144 bytes`},
		{"tool calls", manyCalls, provider.CodeToolLimit, "more than 32 tool calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, nil)
			// The Hang proves the body is abandoned at the limit: reading on
			// would block until the (one minute) idle timeout.
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

func TestConfiguredLimits(t *testing.T) {
	t.Parallel()
	// An event of exactly the cap passes; one byte more fails.
	line := `data: {"choices":[{"index":0,"delta":{"content":"0123456789"}}]}`
	for _, tc := range []struct {
		cap  int
		fail bool
	}{{len(line), false}, {len(line) - 1, true}} {
		fx := newFixture(t, func(c *Config) { c.Limits = provider.Limits{SSEEventBytes: tc.cap} })
		_, _, err := fx.stream(t, f.Raw([]byte(line+"\r\n\r\n"+line+"\n\ndata: [DONE]\n\n")), f.NoDone())
		if tc.fail {
			wantError(t, err, provider.CodeResponseLimit, "SSE event exceeds")
		} else if err != nil {
			t.Fatalf("cap %d: %v", tc.cap, err)
		}
	}

	fx := newFixture(t, func(c *Config) { c.Limits = provider.Limits{AssistantBytes: 10, ToolCalls: 1} })
	resp, got, err := fx.stream(t, f.Text("12345", "67890", "x"))
	wantError(t, err, provider.CodeResponseLimit, "assistant text exceeds 10 bytes")
	if resp != nil || strings.Join(got, "") != "1234567890" {
		t.Fatalf("response %+v, deltas %q", resp, got)
	}
	_, _, err = fx.stream(t, f.ToolCall("a", "x", "{}"), f.ToolCall("b", "y", "{}"))
	wantError(t, err, provider.CodeToolLimit, "more than 1 tool calls")
}

func TestMalformedStreams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps []f.Step
		want  string
	}{
		{"bad json", []f.Step{f.Text("a"), f.Raw([]byte("data: {not json\n\n"))}, "malformed stream"},
		{"garbage only", []f.Step{f.Raw([]byte("<html>oops</html>\n")), f.NoDone()}, "stream ended early"},
		{"ends without done or finish", []f.Step{f.Text("partial"), f.NoDone()}, "stream ended early"},
		{"error event", []f.Step{f.Text("a"), f.Event(`{"error":{"message":"model overloaded","type":"server_error"}}`)}, "model overloaded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, nil)
			resp, _, err := fx.stream(t, tc.steps...)
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

func TestEndsWithoutDone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps []f.Step
	}{
		{"finish reason received", []f.Step{f.Text("a"), f.Finish("stop"), f.NoDone()}},
		{"done without final newline", []f.Step{f.Text("a"), f.Raw([]byte("data: [DONE]")), f.NoDone()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, nil)
			resp, _, err := fx.stream(t, tc.steps...)
			if err != nil || resp.Content != "a" {
				t.Fatalf("response %+v, error %v", resp, err)
			}
		})
	}
}

// The stream is read as SSE, whatever the server's framing details.
func TestSSEFraming(t *testing.T) {
	t.Parallel()
	const ev = `{"choices":[{"index":0,"delta":{"content":"%s"}}]}`
	raw := ": keep-alive\r\n\r\n" +
		"event: message\r\nid: 1\r\ndata:" + fmt.Sprintf(ev, "a") + "\r\n\r\n" +
		"data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"b\"}}]}\n\n" + // one event on two data lines
		"data: \n\n" + // no data: skipped
		"data: " + fmt.Sprintf(ev, `c\"\u00e9\ud83d\ude00`) + "\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t1\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"p\\\":1}\"}}]}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\n" +
		"data: [DONE]\n\n"
	fx := newFixture(t, nil)
	resp, got, err := fx.stream(t, f.Raw([]byte(raw)), f.NoDone())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "a|b|c\"é😀" {
		t.Fatalf("deltas %q", got)
	}
	want := []provider.ToolCall{{ID: "t1", Name: "read", Arguments: `{"p":1}`}}
	if fmt.Sprint(resp.ToolCalls) != fmt.Sprint(want) || resp.FinishReason != "tool_calls" ||
		resp.Usage == nil || *resp.Usage != (provider.Usage{InputTokens: 7, OutputTokens: 2}) {
		t.Fatalf("response %+v", resp)
	}
}

// TestSSELineEndingsAndNamedEvents: a chat stream framed with bare CR line
// ends (after a byte order mark), with keep-alive pings and a vendor's
// named events whose data is not JSON, streams the same reply as one with
// LF line ends; an "error" event fails the turn with its text, JSON or not.
func TestSSELineEndingsAndNamedEvents(t *testing.T) {
	t.Parallel()
	const ev = `{"choices":[{"index":0,"delta":{"content":"%s"}}]}`
	lf := "data: " + fmt.Sprintf(ev, "a") + "\n\n" +
		": keep-alive\n\n" +
		"event: ping\ndata: ping\n\n" +
		"event: vendor.progress\ndata: 42% done <b>\n\n" +
		"event: message\ndata: " + fmt.Sprintf(ev, "b") + "\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"
	for name, raw := range map[string]string{
		"LF":        lf,
		"CR":        "\xEF\xBB\xBF" + strings.ReplaceAll(lf, "\n", "\r"),
		"CRLF":      strings.ReplaceAll(lf, "\n", "\r\n"),
		"CR and LF": strings.ReplaceAll(strings.ReplaceAll(lf, "\n\n", "\r\n\r"), "\n", "\r"),
	} {
		t.Run(name, func(t *testing.T) {
			fx := newFixture(t, nil)
			resp, got, err := fx.stream(t, f.Raw([]byte(raw)), f.NoDone())
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "|") != "a|b" || resp.Content != "ab" || resp.FinishReason != "stop" {
				t.Fatalf("deltas %q, response %+v", got, resp)
			}
		})
	}
	for _, tc := range []struct{ data, want string }{
		{"upstream overloaded, try later", "provider reported an error in the stream: upstream overloaded, try later"},
		{`{"error":{"message":"quota exceeded"}}`, "provider reported an error in the stream: quota exceeded"},
		{`{"message":"bad gateway"}`, "provider reported an error in the stream: bad gateway"},
	} {
		fx := newFixture(t, nil)
		resp, got, err := fx.stream(t, f.Text("a"), f.Raw([]byte("event: error\rdata: "+tc.data+"\r\r")), f.Text("never"))
		if resp != nil || strings.Join(got, "") != "a" {
			t.Fatalf("response %+v, deltas %q", resp, got)
		}
		wantError(t, err, provider.CodeProviderError, tc.want)
	}
	// An unnamed event whose data is not JSON is still a broken stream.
	fx := newFixture(t, nil)
	_, _, err := fx.stream(t, f.Text("a"), f.Raw([]byte("data: hello\r\r")))
	wantError(t, err, provider.CodeProviderError, "malformed stream")
}

// A mid-stream error event is reported with the provider's text, whatever
// its shape.
func TestStreamErrorEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ event, want string }{
		{`{"error":{"message":"model overloaded","type":"server_error"}}`, "provider reported an error in the stream: model overloaded"},
		{`{ "error" : { "message" : "spaced" } }`, "provider reported an error in the stream: spaced"},
		{`{"error":"plain text"}`, "provider reported an error in the stream: plain text"},
		{`{"error":{"code":"overloaded"}}`, `provider reported an error in the stream: {"code":"overloaded"}`},
	} {
		fx := newFixture(t, nil)
		resp, got, err := fx.stream(t, f.Text("a"), f.Event(tc.event), f.Text("never"))
		if resp != nil || strings.Join(got, "") != "a" {
			t.Fatalf("response %+v, deltas %q", resp, got)
		}
		wantError(t, err, provider.CodeProviderError, tc.want)
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"400 with provider message", 400, `{"error":{"message":"Invalid value for 'model': 'nope'.","type":"invalid_request_error"}}`, "Invalid value for 'model': 'nope'."},
		{"401", 401, `{"error":{"message":"Incorrect API key provided: ` + testKey + `."}}`, "check the API key"},
		{"403", 403, `forbidden`, "forbidden"},
		{"404", 404, ``, "Not Found"},
		{"422 string error", 422, `{"error":"bad tool schema"}`, "bad tool schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, nil)
			fx.srv.Enqueue(f.Script(f.Status(tc.status, tc.body)), f.Script(f.Text("must not be used")))
			resp, err := fx.p.Stream(context.Background(), userReq, nil)
			if resp != nil {
				t.Fatalf("response %+v", resp)
			}
			pe := wantError(t, err, provider.CodeProviderError, tc.want)
			if pe.Status != tc.status || !strings.Contains(pe.Error(), fmt.Sprintf("HTTP %d", tc.status)) {
				t.Fatalf("status %d in %q", pe.Status, pe.Error())
			}
			if n := len(fx.srv.Requests()); n != 1 {
				t.Fatalf("%d requests: %d must not be retried", n, tc.status)
			}
			if w := fx.recordedWaits(); len(w) != 0 {
				t.Fatalf("waited %v", w)
			}
		})
	}
}

func TestErrorMessageBounded(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.srv.Enqueue(f.Script(f.APIError(400, strings.Repeat("very long\n\tmessage ", 2000))))
	_, err := fx.p.Stream(context.Background(), userReq, nil)
	pe := wantError(t, err, provider.CodeProviderError, "very long message very long")
	if strings.ContainsAny(pe.Message, "\n\t") {
		t.Fatalf("message keeps control characters: %q", pe.Message)
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(20 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		name      string
		replies   []f.Reply
		retries   int
		wantWaits func([]time.Duration) bool
		wantErr   string // empty: success
		status    int
	}{
		{
			name:      "429 with Retry-After seconds",
			replies:   []f.Reply{f.Script(f.APIError(429, "slow down"), f.Header("Retry-After", "7")), f.Script(f.Text("ok"))},
			wantWaits: func(w []time.Duration) bool { return len(w) == 1 && w[0] == 7*time.Second },
		},
		{
			name:    "429 with Retry-After date",
			replies: []f.Reply{f.Script(f.APIError(429, "slow down"), f.Header("Retry-After", date)), f.Script(f.Text("ok"))},
			wantWaits: func(w []time.Duration) bool {
				return len(w) == 1 && w[0] > 15*time.Second && w[0] <= 20*time.Second
			},
		},
		{
			name:      "Retry-After capped",
			replies:   []f.Reply{f.Script(f.APIError(503, "busy"), f.Header("Retry-After", "86400")), f.Script(f.Text("ok"))},
			wantWaits: func(w []time.Duration) bool { return len(w) == 1 && w[0] == maxRetryAfter },
		},
		{
			name:    "500 twice then success",
			replies: []f.Reply{f.Script(f.APIError(500, "oops")), f.Script(f.Status(502, "<html>bad gateway</html>")), f.Script(f.Text("ok"))},
			wantWaits: func(w []time.Duration) bool {
				return len(w) == 2 && w[0] == time.Millisecond && w[1] == 2*time.Millisecond
			},
		},
		{
			name:      "exhausted",
			retries:   2,
			replies:   []f.Reply{f.Script(f.APIError(503, "overloaded")), f.Script(f.APIError(503, "overloaded")), f.Script(f.APIError(503, "still overloaded")), f.Script(f.Text("unused"))},
			wantWaits: func(w []time.Duration) bool { return len(w) == 2 },
			wantErr:   "still overloaded (after 3 attempts)",
			status:    503,
		},
		{
			name:      "backoff capped",
			retries:   5,
			replies:   []f.Reply{f.Script(f.APIError(500, "a")), f.Script(f.APIError(500, "b")), f.Script(f.APIError(500, "c")), f.Script(f.APIError(500, "d")), f.Script(f.Text("ok"))},
			wantWaits: func(w []time.Duration) bool { return fmt.Sprint(w) == "[1ms 2ms 4ms 4ms]" },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, func(c *Config) {
				if tc.retries != 0 {
					c.MaxRetries = tc.retries
				}
			})
			fx.srv.Enqueue(tc.replies...)
			var d deltas
			resp, err := fx.p.Stream(context.Background(), userReq, &d)
			if w := fx.recordedWaits(); !tc.wantWaits(w) {
				t.Fatalf("waits %v", w)
			}
			if tc.wantErr == "" {
				if err != nil || resp.Content != "ok" || strings.Join(d.all(), "") != "ok" {
					t.Fatalf("response %+v, error %v, deltas %q", resp, err, d.all())
				}
				if n := len(fx.srv.Requests()); n != len(tc.replies) {
					t.Fatalf("%d requests", n)
				}
				return
			}
			pe := wantError(t, err, provider.CodeProviderError, tc.wantErr)
			if pe.Status != tc.status {
				t.Fatalf("status %d", pe.Status)
			}
			if n := len(fx.srv.Requests()); n != tc.retries+1 {
				t.Fatalf("%d requests", n)
			}
			if !strings.Contains(fx.logs.String(), "retrying") {
				t.Fatalf("no retry logged: %s", fx.logs.String())
			}
		})
	}
}

// retries is a handler that records the retries it is told of.
type retries struct {
	deltas
	r []provider.Retry
}

func (h *retries) OnRetry(r provider.Retry) { h.r = append(h.r, r) }

// TestRetryHandlerTold: a handler that listens is told of each retry with
// the provider's status, its message, the attempt and the wait.
func TestRetryHandlerTold(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, func(c *Config) { c.MaxRetries = 3 })
	fx.srv.Enqueue(f.Script(f.APIError(429, "Rate limit reached"), f.Header("Retry-After", "2")), f.Script(f.APIError(500, "oops")), f.Script(f.Text("ok")))
	var h retries
	if _, err := fx.p.Stream(context.Background(), userReq, &h); err != nil {
		t.Fatal(err)
	}
	if len(h.r) != 2 {
		t.Fatalf("told of %d retries, want 2: %+v", len(h.r), h.r)
	}
	first := h.r[0]
	if first.Attempt != 2 || first.MaxAttempts != 4 || first.Status != 429 || first.Wait != 2*time.Second || !strings.Contains(first.Message, "Rate limit reached") {
		t.Errorf("first retry = %+v", first)
	}
	if h.r[1].Attempt != 3 || h.r[1].Status != 500 {
		t.Errorf("second retry = %+v", h.r[1])
	}
}

func TestRetryKeepsRequest(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.srv.Enqueue(f.Script(f.APIError(500, "x")), f.Script(f.Text("ok")))
	if _, err := fx.p.Stream(context.Background(), userReq, nil); err != nil {
		t.Fatal(err)
	}
	r := fx.srv.Requests()
	if len(r) != 2 || !bytes.Equal(r[0].Body, r[1].Body) || r[1].Header.Get("Authorization") != "Bearer "+testKey {
		t.Fatalf("retried request differs: %+v", r)
	}
}

// closedAddr returns a loopback URL on which nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

func TestConnectionErrorRetried(t *testing.T) {
	t.Parallel()
	url := closedAddr(t)
	fx := newFixture(t, func(c *Config) { c.BaseURL = url; c.MaxRetries = 2 })
	_, err := fx.p.Stream(context.Background(), userReq, nil)
	wantError(t, err, provider.CodeProviderError, "cannot reach the provider")
	if !strings.Contains(err.Error(), "after 3 attempts") || len(fx.recordedWaits()) != 2 {
		t.Fatalf("error %q, waits %v", err, fx.recordedWaits())
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, func(c *Config) { c.IdleTimeout = 200 * time.Millisecond })
	resp, got, err := fx.stream(t, f.Text("a"), f.Hang())
	if resp != nil {
		t.Fatalf("response %+v", resp)
	}
	wantError(t, err, provider.CodeProviderError, "the provider sent nothing for 0.2 seconds")
	if strings.Join(got, "") != "a" {
		t.Fatalf("deltas %q", got)
	}
	if n := len(fx.srv.Requests()); n != 1 {
		t.Fatalf("%d requests: an idle stream must not be retried", n)
	}
}

// A slow handler is backpressure, not provider silence.
func TestIdleTimeoutIgnoresHandlerTime(t *testing.T) {
	t.Parallel()
	// The timeout leaves a loaded machine room to send the headers; the
	// handler takes three times as long, on purpose.
	fx := newFixture(t, func(c *Config) { c.IdleTimeout = 500 * time.Millisecond })
	fx.srv.Enqueue(f.Script(f.Text("a", "b")))
	resp, err := fx.p.Stream(context.Background(), userReq, provider.HandlerFunc(func(string) error {
		time.Sleep(1500 * time.Millisecond) // longer than the idle timeout, on purpose
		return nil
	}))
	if err != nil || resp.Content != "ab" {
		t.Fatalf("response %+v, error %v", resp, err)
	}
}

func TestIdleBeforeHeaders(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // accept and say nothing
		defer wg.Done()
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	defer wg.Wait()
	defer ln.Close()
	fx := newFixture(t, func(c *Config) {
		c.BaseURL = "http://" + ln.Addr().String() + "/v1"
		c.IdleTimeout = 100 * time.Millisecond
	})
	_, err = fx.p.Stream(context.Background(), userReq, nil)
	wantError(t, err, provider.CodeProviderError, "sent nothing for 0.1 seconds")
	if len(fx.recordedWaits()) != 0 {
		t.Fatal("idle timeout was retried")
	}
}

func TestOverallTimeout(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, func(c *Config) { c.Timeout = 100 * time.Millisecond })
	_, _, err := fx.stream(t, f.Text("a"), f.Hang())
	wantError(t, err, provider.CodeProviderError, "timed out after 0.1 seconds")
}

func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.srv.Enqueue(f.Script(f.Text("a"), f.Hang()))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := fx.p.Stream(ctx, userReq, provider.HandlerFunc(func(string) error {
		cancel() // the provider now waits on a hanging body
		return nil
	}))
	if resp != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("response %+v, error %v", resp, err)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.p.sleep = sleepCtx // really wait, for the 30s Retry-After
	fx.srv.Enqueue(f.Script(f.APIError(429, "later"), f.Header("Retry-After", "30")))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		if _, err := fx.srv.WaitRequests(ctx, 1); err == nil {
			cancel()
		}
	}()
	_, err := fx.p.Stream(ctx, userReq, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fx.p.Stream(ctx, userReq, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
}

func TestHandlerError(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	fx.srv.Enqueue(f.Script(f.Text("a", "b"), f.Hang()))
	stop := errors.New("client went away")
	calls := 0
	resp, err := fx.p.Stream(context.Background(), userReq, provider.HandlerFunc(func(string) error {
		calls++
		return stop
	}))
	if resp != nil || err != stop || calls != 1 {
		t.Fatalf("response %+v, error %v, %d calls", resp, err, calls)
	}
}

func TestKeyNeverInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	echo := "Incorrect API key provided: " + testKey
	for _, tc := range []struct {
		name     string
		reply    f.Reply
		redacted bool // the provider echoed the key, so the message shows the redaction
	}{
		{"401 body", f.Script(f.APIError(401, echo)), true},
		{"500 body, retried", f.Script(f.Status(500, "upstream said "+testKey)), true},
		{"error event", f.Script(f.Text("a"), f.Event(`{"error":{"message":"`+echo+`"}}`)), true},
		{"malformed event", f.Script(f.Raw([]byte("data: {" + testKey + "\n\n"))), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, func(c *Config) { c.MaxRetries = 1 })
			fx.srv.Enqueue(tc.reply, tc.reply)
			_, err := fx.p.Stream(context.Background(), userReq, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for e := err; e != nil; e = errors.Unwrap(e) {
				if strings.Contains(e.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v", e), testKey) {
					t.Fatalf("key in error chain: %q", e.Error())
				}
			}
			if strings.Contains(fx.logs.String(), testKey) {
				t.Fatalf("key in logs: %s", fx.logs.String())
			}
			if tc.redacted && !strings.Contains(err.Error(), "[redacted]") {
				t.Fatalf("error %q does not show the redaction", err)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, func(c *Config) {
		c.Headers = map[string]string{"X-Title": "SCV", "OpenAI-Organization": "org-123"}
		c.UserAgent = "scv/test"
	})
	fx.srv.Enqueue(f.Script(f.Text("ok")))
	if _, err := fx.p.Stream(context.Background(), userReq, nil); err != nil {
		t.Fatal(err)
	}
	h := fx.srv.Requests()[0].Header
	if h.Get("Authorization") != "Bearer "+testKey || h.Get("X-Title") != "SCV" ||
		h.Get("OpenAI-Organization") != "org-123" || h.Get("User-Agent") != "scv/test" ||
		h.Get("Accept") != "text/event-stream" {
		t.Fatalf("headers %v", h)
	}

	nokey := newFixture(t, func(c *Config) { c.APIKey = "" })
	nokey.srv.Enqueue(f.Script(f.Text("ok")))
	if _, err := nokey.p.Stream(context.Background(), userReq, nil); err != nil {
		t.Fatal(err)
	}
	h = nokey.srv.Requests()[0].Header
	if _, ok := h["Authorization"]; ok {
		t.Fatalf("Authorization sent without a key: %v", h)
	}
	if !strings.HasPrefix(h.Get("User-Agent"), "scv/") {
		t.Fatalf("default User-Agent %q", h.Get("User-Agent"))
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{BaseURL: ""},
		{BaseURL: "ftp://example.com"},
		{BaseURL: "http://"},
		{BaseURL: "http://127.0.0.1/v1", Headers: map[string]string{"Bad Header": "x"}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
	_, err := New(Config{BaseURL: "http://user:hunter2-password@[::1", APIKey: testKey})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v", err)
	}
	p, err := New(Config{BaseURL: "http://127.0.0.1:1/v1/", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "openai" || p.Model() != "m" || p.ContextMaxTokens() != DefaultContextMaxTokens ||
		p.cfg.IdleTimeout != DefaultIdleTimeout || p.cfg.MaxRetries != DefaultMaxRetries || p.cfg.BaseURL != "http://127.0.0.1:1/v1" {
		t.Fatalf("defaults %+v", p.cfg)
	}
	if p, _ := New(Config{BaseURL: "http://127.0.0.1:1", MaxRetries: -1}); p.cfg.MaxRetries != 0 {
		t.Fatalf("MaxRetries %d", p.cfg.MaxRetries)
	}
}

func TestRetryAfterParse(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 3 ", 3 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"31", maxRetryAfter},
		{"99999999999999999", maxRetryAfter},
		{"999999999999999999999", 0}, // neither an int64 nor a date
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second},
		{now.Add(-10 * time.Second).Format(http.TimeFormat), 0},
		{now.Add(time.Hour).Format(http.TimeFormat), maxRetryAfter},
		{"soon", 0},
	} {
		if got := retryAfter(tc.h, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tc.h, got, tc.want)
		}
	}
}

func TestHalfJitter(t *testing.T) {
	t.Parallel()
	for range 100 {
		if d := halfJitter(time.Second); d < 500*time.Millisecond || d > time.Second {
			t.Fatalf("jitter %v", d)
		}
	}
}

func TestBound(t *testing.T) {
	t.Parallel()
	s := bound(strings.Repeat("é", 2000))
	if len(s) > maxMessageBytes || !strings.HasSuffix(s, "…") || !utf8Valid(s) {
		t.Fatalf("bound gave %d bytes", len(s))
	}
	if got := bound("a\n\n b\x00c"); got != "a b c" {
		t.Fatalf("bound %q", got)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// BenchmarkStream10kDeltas streams 10,000 small deltas through the whole
// stack (fake server, HTTP, limits, SSE reader, chunk decoder, accumulator).
func BenchmarkStream10kDeltas(b *testing.B) {
	srv := f.Start(b)
	p, err := New(Config{BaseURL: srv.URL(), Model: "m"})
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

// usageText prints a usage with its cached count (not its address).
func usageText(u *provider.Usage) string {
	if u == nil {
		return "none"
	}
	cached := "unsaid"
	if u.CachedInputTokens != nil {
		cached = fmt.Sprint(*u.CachedInputTokens)
	}
	return fmt.Sprintf("{in %d out %d cached %s}", u.InputTokens, u.OutputTokens, cached)
}
