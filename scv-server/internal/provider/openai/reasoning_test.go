package openai

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	f "github.com/scv-cli/scv/shared/fakeopenai"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

func rawStrings(rs []json.RawMessage) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r))
	}
	return out
}

// Reasoning items with encrypted content are kept from their done events,
// in output order, once per id; those without encrypted content, or with
// a summary that is not a list, are handled as the next request needs.
func TestResponsesReasoningItems(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		steps []f.Step
		want  []string
	}{
		{"summary and encrypted", []f.Step{f.Reasoning("Look at x.", "ENC1"), f.ToolCall("c1", "read", `{}`)},
			[]string{`{"type":"reasoning","id":"rs_fake_1","summary":[{"text":"Look at x.","type":"summary_text"}],"encrypted_content":"ENC1"}`}},
		{"no summary", []f.Step{f.Reasoning("", "ENC1"), f.Text("done")},
			[]string{`{"type":"reasoning","id":"rs_fake_1","summary":[],"encrypted_content":"ENC1"}`}},
		{"two items in order", []f.Step{f.Reasoning("a", "E1"), f.ToolCall("c1", "read", `{}`), f.Reasoning("b", "E2"), f.ToolCall("c2", "read", `{}`)},
			[]string{`{"type":"reasoning","id":"rs_fake_1","summary":[{"text":"a","type":"summary_text"}],"encrypted_content":"E1"}`,
				`{"type":"reasoning","id":"rs_fake_2","summary":[{"text":"b","type":"summary_text"}],"encrypted_content":"E2"}`}},
		// Without encrypted content the item cannot be sent back with
		// store false.
		{"no encrypted content", []f.Step{f.Reasoning("a", ""), f.Text("done")}, nil},
		{"repeated done keeps the last", []f.Step{
			f.Event(`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_9","type":"reasoning","summary":[],"encrypted_content":"OLD"}}`),
			f.Event(`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_9","type":"reasoning","summary":null,"encrypted_content":"NEW"}}`),
			f.Text("done")},
			[]string{`{"type":"reasoning","id":"rs_9","summary":[],"encrypted_content":"NEW"}`}},
		{"summary not a list", []f.Step{
			f.Event(`{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_9","type":"reasoning","summary":"odd","encrypted_content":"E"}}`),
			f.Text("done")},
			[]string{`{"type":"reasoning","id":"rs_9","summary":[],"encrypted_content":"E"}`}},
		{"no id", []f.Step{
			f.Event(`{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","summary":[],"encrypted_content":"E"}}`),
			f.Text("done")}, nil},
		{"added only", []f.Step{
			f.Event(`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_9","type":"reasoning","summary":[],"encrypted_content":"PART"}}`),
			f.Text("done")}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newResponses(t, nil)
			resp, _, err := fx.stream(t, tc.steps...)
			if err != nil {
				t.Fatal(err)
			}
			if got := rawStrings(resp.Reasoning); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("reasoning\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(tc.want, "\n "))
			}
			inc, _ := fx.srv.Requests()[0].JSON["include"].([]any)
			if len(inc) != 1 || inc[0] != "reasoning.encrypted_content" {
				t.Fatalf("include %v", fx.srv.Requests()[0].JSON["include"])
			}
		})
	}
}

// A reply's reasoning, carried on its assistant message, goes back in the
// next request as it came, before that message's text and calls.
func TestResponsesReasoningRoundTrip(t *testing.T) {
	t.Parallel()
	fx := newResponses(t, nil)
	resp, _, err := fx.stream(t, f.Reasoning("Look at x.", "ENC1"), f.Text("Reading."), f.ToolCall("c1", "read", `{"path":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	req := provider.Request{Messages: []provider.Message{
		{Role: provider.RoleUser, Content: "hi"},
		{Role: provider.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls, Reasoning: resp.Reasoning},
		{Role: provider.RoleTool, ToolCallID: "c1", Content: "x"},
	}}
	// An item that is not JSON (a damaged log) is left out.
	req.Messages[1].Reasoning = append(req.Messages[1].Reasoning, json.RawMessage(`{"type":`))
	fx.srv.Enqueue(f.Script(f.Text("ok")))
	if _, err := fx.p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	r := fx.srv.Requests()[1]
	var kinds []string
	for _, it := range r.Input {
		kinds = append(kinds, it.Type)
	}
	if got := strings.Join(kinds, ","); got != "message,reasoning,message,function_call,function_call_output" {
		t.Fatalf("input items %s", got)
	}
	if it := r.Input[1]; it != (f.InputItem{Type: "reasoning", ID: "rs_fake_1", EncryptedContent: "ENC1", Summary: "Look at x."}) {
		t.Fatalf("reasoning item %+v", it)
	}
	// The same JSON value as was kept (the fake decodes it into a map).
	sentItem, _ := json.Marshal(r.JSON["input"].([]any)[1])
	if canonical(t, sentItem) != canonical(t, resp.Reasoning[0]) {
		t.Fatalf("sent %s, kept %s", sentItem, resp.Reasoning[0])
	}
}

// canonical is b re-encoded with sorted keys.
func canonical(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// The chat wire neither reads reasoning items nor sends them.
func TestChatIgnoresReasoning(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, nil)
	resp, _, err := fx.stream(t, f.Reasoning("a", "ENC1"), f.Text("ok"))
	if err != nil || resp.Reasoning != nil || resp.Content != "ok" {
		t.Fatalf("response %+v, error %v", resp, err)
	}
	req := provider.Request{Messages: []provider.Message{
		{Role: provider.RoleUser, Content: "hi"},
		{Role: provider.RoleAssistant, Content: "hello", Reasoning: []json.RawMessage{json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"ENC1"}`)}},
		{Role: provider.RoleUser, Content: "again"},
	}}
	fx.srv.Enqueue(f.Script(f.Text("ok")))
	if _, err := fx.p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if body := string(fx.srv.Requests()[1].Body); strings.Contains(body, "ENC1") || strings.Contains(body, `"include"`) {
		t.Fatalf("chat request carries reasoning: %s", body)
	}
}

// Each kept item is bounded; one over the bound is dropped, with a
// warning, and the reply still succeeds. The items' bytes count toward
// the whole response limit like every other byte.
func TestResponsesReasoningLimits(t *testing.T) {
	t.Parallel()
	item := func(id, enc string) f.Step {
		return f.Event(`{"type":"response.output_item.done","output_index":0,"item":{"id":"` + id + `","type":"reasoning","summary":[],"encrypted_content":"` + enc + `"}}`)
	}
	fx := newResponses(t, func(c *Config) { c.Limits = provider.Limits{ReasoningItemBytes: 200} })
	resp, _, err := fx.stream(t, item("rs_big", strings.Repeat("E", 200)), item("rs_small", "E"), f.Text("done"))
	if err != nil {
		t.Fatal(err)
	}
	if got := rawStrings(resp.Reasoning); len(got) != 1 || !strings.Contains(got[0], `"rs_small"`) {
		t.Fatalf("reasoning %s", got)
	}
	if !strings.Contains(fx.logs.String(), "reasoning item dropped: it exceeds the reasoning item limit") {
		t.Fatalf("no warning: %s", fx.logs.String())
	}

	fx = newResponses(t, nil)
	var steps []f.Step
	for i := range 5 {
		steps = append(steps, item("rs_"+string(rune('a'+i)), strings.Repeat("E", 1000<<10)))
	}
	resp, _, err = fx.stream(t, append(steps, f.Hang())...)
	if resp != nil {
		t.Fatalf("response %+v returned with the error", resp)
	}
	wantError(t, err, provider.CodeResponseLimit, "response exceeds 4194304 bytes")
}

// A model that refuses encrypted reasoning (a model without reasoning, on
// OpenAI) gets the request again without it, and later requests go
// without it; a refusal the retry does not cure is not remembered.
func TestResponsesReasoningRefused(t *testing.T) {
	t.Parallel()
	withHistory := provider.Request{Messages: []provider.Message{
		{Role: provider.RoleUser, Content: "hi"},
		{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c1", Name: "read", Arguments: "{}"}},
			Reasoning: []json.RawMessage{json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"ENC1"}`)}},
		{Role: provider.RoleTool, ToolCallID: "c1", Content: "x"},
	}}
	sent := func(r f.Request) (include, reasoning bool) {
		_, include = r.JSON["include"]
		for _, it := range r.Input {
			reasoning = reasoning || it.Type == "reasoning"
		}
		return include, reasoning
	}

	fx := newResponses(t, nil)
	fx.srv.Enqueue(
		f.Script(f.APIError(400, "Encrypted content is not supported with this model.")),
		f.Script(f.Text("first")),
		f.Script(f.Text("second")),
	)
	for _, want := range []string{"first", "second"} {
		resp, err := fx.p.Stream(context.Background(), withHistory, nil)
		if err != nil || resp.Content != want {
			t.Fatalf("response %+v, error %v", resp, err)
		}
	}
	reqs := fx.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, want := range [][2]bool{{true, true}, {false, false}, {false, false}} {
		if inc, rs := sent(reqs[i]); inc != want[0] || rs != want[1] {
			t.Fatalf("request %d: include %v, reasoning item %v; want %v", i, inc, rs, want)
		}
	}
	if !strings.Contains(fx.logs.String(), "the model refused encrypted reasoning") {
		t.Fatalf("no warning: %s", fx.logs.String())
	}
	// Another model is not affected.
	req := withHistory
	req.Model = "gpt-5"
	fx.srv.Enqueue(f.Script(f.Text("third")))
	if _, err := fx.p.Stream(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if inc, rs := sent(fx.srv.Requests()[3]); !inc || !rs {
		t.Fatalf("gpt-5: include %v, reasoning item %v", inc, rs)
	}

	// The retry fails as well: its error is returned, nothing is
	// remembered.
	fx = newResponses(t, nil)
	fx.srv.Enqueue(
		f.Script(f.APIError(400, "Invalid value for 'include'.")),
		f.Script(f.APIError(400, "Invalid input.")),
		f.Script(f.Text("ok")),
	)
	_, err := fx.p.Stream(context.Background(), withHistory, nil)
	wantError(t, err, provider.CodeProviderError, "rejected the request: Invalid input.")
	if _, err := fx.p.Stream(context.Background(), withHistory, nil); err != nil {
		t.Fatal(err)
	}
	if inc, rs := sent(fx.srv.Requests()[2]); !inc || !rs {
		t.Fatalf("after a failed retry: include %v, reasoning item %v", inc, rs)
	}

	// Other 400s are not retried.
	fx = newResponses(t, nil)
	fx.srv.Enqueue(f.Script(f.APIError(400, "Unsupported parameter: 'store'.")), f.Script(f.Text("must not be used")))
	_, err = fx.p.Stream(context.Background(), withHistory, nil)
	wantError(t, err, provider.CodeProviderError, "Unsupported parameter")
	if n := len(fx.srv.Requests()); n != 1 {
		t.Fatalf("%d requests", n)
	}
}

// thinker records text and reasoning deltas.
type thinker struct {
	text, reasoning []string
	fail            error
}

func (h *thinker) OnDelta(s string) error { h.text = append(h.text, s); return nil }
func (h *thinker) OnReasoning(s string) error {
	h.reasoning = append(h.reasoning, s)
	return h.fail
}

// A handler that takes reasoning gets the summary's deltas as they stream;
// its error stops the stream; a plain handler never sees them.
func TestResponsesReasoningStreamsToAReasoningHandler(t *testing.T) {
	fx := newResponses(t, nil)
	fx.srv.Enqueue(f.Script(f.Reasoning("Look at x.", "ENC1"), f.Text("done")))
	var h thinker
	resp, err := fx.p.Stream(context.Background(), userReq, &h)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(h.reasoning, "|") != "Look at x." || strings.Join(h.text, "") != "done" || resp.Content != "done" {
		t.Fatalf("reasoning %q, text %q, content %q", h.reasoning, h.text, resp.Content)
	}
	fx.srv.Enqueue(f.Script(f.Reasoning("stop here", "ENC1"), f.Text("never")))
	stop := errors.New("the turn was cancelled")
	h = thinker{fail: stop}
	if _, err := fx.p.Stream(context.Background(), userReq, &h); !errors.Is(err, stop) {
		t.Fatalf("a failing OnReasoning: %v", err)
	}
	if len(h.text) != 0 {
		t.Fatalf("text after a failed OnReasoning: %q", h.text)
	}
}
