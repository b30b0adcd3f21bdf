package openai

import (
	"encoding/json"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

// chatWire is the Chat Completions format: POST /chat/completions, one
// chat.completion.chunk per event, "data: [DONE]" at the end.
type chatWire struct{}

func (chatWire) encode(p *Provider, req provider.Request) (string, []byte, error) {
	if req.HostedWebSearch {
		p.hostedOnce.Do(func() {
			p.log.Warn("hosted web search needs wire_api = \"responses\"; the chat wire sends the request without it")
		})
	}
	creq, err := p.buildRequest(req)
	if err != nil {
		return "", nil, err
	}
	// go-openai's own checks of a request for the reasoning models it
	// knows, as CreateChatCompletionStream made them.
	if err := goopenai.NewReasoningValidator().Validate(creq); err != nil {
		return "", nil, p.wrapf(provider.CodeProviderError, err, "request failed: %v", err)
	}
	body, err := json.Marshal(creq)
	if err != nil {
		return "", nil, p.wrapf(provider.CodeProviderError, err, "request failed: %v", err)
	}
	return "/chat/completions", body, nil
}

func (chatWire) decoder(p *Provider, h provider.Handler) streamDecoder {
	return &chatDecoder{p: p, acc: newAccumulator(p, h)}
}

// chatDecoder decodes chunks into an accumulator.
type chatDecoder struct {
	p   *Provider
	acc *accumulator
	ch  chunk // reused between events
}

// event reads one chunk. Chat Completions chunks are unnamed SSE events
// (the default name, "message"); an event named "error" is a mid-stream
// error whatever its data, and an event of any other name (a keep-alive
// ping, a vendor's own event) is not a chunk and is ignored.
func (d *chatDecoder) event(name, data []byte) (bool, error) {
	switch string(name) {
	case "", "message":
	case "error":
		if decodeChunk(data, &d.ch) == nil && d.ch.hasError() {
			return false, d.p.errorf(provider.CodeProviderError, "provider reported an error in the stream: %s", d.ch.errorMessage())
		}
		return false, d.p.errorf(provider.CodeProviderError, "provider reported an error in the stream: %s", providerMessage(data))
	default:
		return false, nil
	}
	if err := decodeChunk(data, &d.ch); err != nil {
		// encoding/json's errors quote at most one character or a
		// number of the input, never a string, so the cause may be
		// kept.
		return false, d.p.wrapf(provider.CodeProviderError, err, "malformed stream: %v", err)
	}
	if d.ch.hasError() {
		// The provider's own text is redacted into the message.
		return false, d.p.errorf(provider.CodeProviderError, "provider reported an error in the stream: %s", d.ch.errorMessage())
	}
	return false, d.acc.add(&d.ch)
}

// end accepts a stream without "[DONE]" only when a finish_reason came:
// some compatible servers drop the terminator, but a cut stream must fail.
func (d *chatDecoder) end(sawDone bool) (*provider.Response, error) {
	if !sawDone && d.acc.finish == "" {
		return nil, d.p.errorf(provider.CodeProviderError, "stream ended early: no [DONE] and no finish_reason")
	}
	return d.acc.response(), nil
}

// buildRequest maps a provider.Request to a streaming chat request.
func (p *Provider) buildRequest(req provider.Request) (goopenai.ChatCompletionRequest, error) {
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	if model == "" {
		return goopenai.ChatCompletionRequest{}, p.errorf(provider.CodeProviderError, "no model configured")
	}
	msgs := make([]goopenai.ChatCompletionMessage, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: req.System})
	}
	for i, m := range req.Messages {
		cm := goopenai.ChatCompletionMessage{Role: string(m.Role), Content: m.Content}
		switch m.Role {
		case provider.RoleSystem, provider.RoleUser:
		case provider.RoleAssistant:
			for _, tc := range m.ToolCalls {
				cm.ToolCalls = append(cm.ToolCalls, goopenai.ToolCall{
					ID:       tc.ID,
					Type:     goopenai.ToolTypeFunction,
					Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
				})
			}
		case provider.RoleTool:
			cm.ToolCallID = m.ToolCallID
			if cm.Content == "" {
				// go-openai omits an empty content, and OpenAI rejects a
				// tool message without one.
				cm.Content = "(no output)"
			}
		default:
			return goopenai.ChatCompletionRequest{}, p.errorf(provider.CodeProviderError, "message %d has unknown role %q", i, m.Role)
		}
		msgs = append(msgs, cm)
	}
	var tools []goopenai.Tool
	for _, t := range req.Tools {
		var params any = emptySchema
		if len(t.Parameters) > 0 {
			params = t.Parameters
		}
		tools = append(tools, goopenai.Tool{
			Type:     goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	return goopenai.ChatCompletionRequest{
		Model:         model,
		Messages:      msgs,
		Tools:         tools,
		Stream:        true,
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}, nil
}

// emptySchema is sent for a tool without parameters: OpenAI wants an
// object schema.
var emptySchema = map[string]any{"type": "object", "properties": map[string]any{}}
