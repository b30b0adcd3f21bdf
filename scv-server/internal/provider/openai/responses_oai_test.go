package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

// The Responses request body is built from this package's own types so
// that scv-server does not link openai-go (issue 23). These tests keep
// the official client as the reference: the body must mean what its
// ResponseNewParams, built as SCV built it before, would have sent.

// oaiResponsesBody is the request body as openai-go's types build it,
// with the same mapping as responses.go (system prompt as instructions,
// no store, encrypted reasoning replayed, non-strict function tools).
func oaiResponsesBody(t testing.TB, req provider.Request, model string, replay bool) []byte {
	t.Helper()
	var params responses.ResponseNewParams
	items := responses.ResponseInputParam{}
	message := func(role responses.EasyInputMessageRole, text string) responses.ResponseInputItemUnionParam {
		return responses.ResponseInputItemUnionParam{OfMessage: &responses.EasyInputMessageParam{
			Role: role, Content: responses.EasyInputMessageContentUnionParam{OfString: oai.String(text)},
			Type: responses.EasyInputMessageTypeMessage,
		}}
	}
	for _, m := range req.Messages {
		switch m.Role {
		case provider.RoleSystem:
			items = append(items, message(responses.EasyInputMessageRoleSystem, m.Content))
		case provider.RoleUser:
			items = append(items, message(responses.EasyInputMessageRoleUser, m.Content))
		case provider.RoleAssistant:
			for _, r := range m.Reasoning {
				if replay && json.Valid(r) {
					it := param.Override[responses.ResponseReasoningItemParam](r)
					items = append(items, responses.ResponseInputItemUnionParam{OfReasoning: &it})
				}
			}
			if m.Content != "" {
				items = append(items, message(responses.EasyInputMessageRoleAssistant, m.Content))
			}
			for _, tc := range m.ToolCalls {
				items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCall: &responses.ResponseFunctionToolCallParam{
					CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments,
				}})
			}
		case provider.RoleTool:
			out := m.Content
			if out == "" {
				out = "(no output)"
			}
			items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: oai.String(m.ToolCallID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: oai.String(out)},
			}})
		}
	}
	var tools []responses.ToolUnionParam
	for _, tl := range req.Tools {
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		if len(tl.Parameters) > 0 {
			schema = nil
			if err := json.Unmarshal(tl.Parameters, &schema); err != nil {
				t.Fatalf("tool %s: %v", tl.Name, err)
			}
		}
		ft := &responses.FunctionToolParam{Name: tl.Name, Parameters: schema, Strict: oai.Bool(false)}
		if tl.Description != "" {
			ft.Description = oai.String(tl.Description)
		}
		tools = append(tools, responses.ToolUnionParam{OfFunction: ft})
	}
	if req.HostedWebSearch {
		tools = append(tools, responses.ToolUnionParam{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}})
	}
	params.Model = model
	if req.System != "" {
		params.Instructions = oai.String(req.System)
	}
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	params.Tools = tools
	params.Store = oai.Bool(false)
	if replay {
		params.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	}
	params.SetExtraFields(map[string]any{"stream": true})
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatalf("openai-go: %v", err)
	}
	return body
}

// sameJSON fails unless a and b are the same JSON value.
func sameJSON(t testing.TB, ours, theirs []byte) {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(ours, &a); err != nil {
		t.Fatalf("our body is not JSON: %v\n%s", err, ours)
	}
	if err := json.Unmarshal(theirs, &b); err != nil {
		t.Fatalf("openai-go's body is not JSON: %v\n%s", err, theirs)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the request body differs from openai-go's:\nours   %s\ntheirs %s", ours, theirs)
	}
}

// encodeResponses builds the body with the package's own encoder.
func encodeResponses(t testing.TB, p *Provider, req provider.Request) []byte {
	t.Helper()
	path, body, err := responsesWire{}.encode(p, req)
	if err != nil || path != "/responses" {
		t.Fatalf("encode: %q %v", path, err)
	}
	return body
}

func newResponsesProvider(t testing.TB) *Provider {
	t.Helper()
	p, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "gpt-5", Wire: WireResponses, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResponsesRequestMatchesOpenAIGo(t *testing.T) {
	t.Parallel()
	full := provider.Request{
		Model:  "gpt-5",
		System: "You are <SCV> & \"friends\"\u2028.",
		Messages: []provider.Message{
			{Role: provider.RoleUser, Content: "read x"},
			{Role: provider.RoleUser, Content: ""},
			{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c1", Name: "read", Arguments: ""}}, Reasoning: []json.RawMessage{
				json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"E"}`),
				json.RawMessage(`{"damaged`),
			}},
			{Role: provider.RoleTool, ToolCallID: "c1", Content: "é\x00<b>"},
			{Role: provider.RoleAssistant, Content: "done"},
			{Role: provider.RoleSystem, Content: "summary"},
		},
		Tools: []provider.ToolSpec{
			{Name: "read", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","maximum":1e3}}}`)},
			{Name: "d", Description: "described"},
		},
		HostedWebSearch: true,
	}
	cases := map[string]provider.Request{
		"full":                         full,
		"empty history":                {Model: "m"},
		"no system":                    {Model: "m", Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}},
		"only web search":              {Model: "m", HostedWebSearch: true},
		"model from the configuration": {Messages: []provider.Message{{Role: provider.RoleUser, Content: "hi"}}},
	}
	for name, req := range cases {
		for _, replay := range []bool{true, false} {
			p := newResponsesProvider(t)
			model := req.Model
			if model == "" {
				model = p.cfg.Model
			}
			if !replay {
				// As after the model refused encrypted reasoning.
				p.plainModels.Store(model, true)
			}
			t.Run(name, func(t *testing.T) {
				sameJSON(t, encodeResponses(t, p, req), oaiResponsesBody(t, req, model, replay))
			})
		}
	}
}

// FuzzResponsesRequestMatchesOpenAIGo checks the body against openai-go's
// for any text in the fields SCV fills from the history.
func FuzzResponsesRequestMatchesOpenAIGo(f *testing.F) {
	f.Add("sys", "user", "assistant", "call", "name", `{"a":1}`, "out", "desc")
	f.Add("", "", "", "", "", "", "", "")
	f.Add("<&>\u2028", "\xff", "\t\n", "id", "bash", "not json", "\x00", "é")
	f.Fuzz(func(t *testing.T, system, user, assistant, callID, name, args, out, desc string) {
		req := provider.Request{
			Model:  "m",
			System: system,
			Messages: []provider.Message{
				{Role: provider.RoleUser, Content: user},
				{Role: provider.RoleAssistant, Content: assistant, ToolCalls: []provider.ToolCall{{ID: callID, Name: name, Arguments: args}}},
				{Role: provider.RoleTool, ToolCallID: callID, Content: out},
			},
			Tools: []provider.ToolSpec{{Name: name, Description: desc}},
		}
		p := newResponsesProvider(t)
		sameJSON(t, encodeResponses(t, p, req), oaiResponsesBody(t, req, "m", true))
	})
}
