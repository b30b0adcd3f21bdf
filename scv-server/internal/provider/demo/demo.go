// Package demo is the built-in demo provider: a scripted local model used
// when no provider is configured. It needs no network or key. Each turn it
// streams a short explanation, lists the workspace with the read tool,
// makes one call that needs approval so the user sees the approval flow,
// and ends by saying how to configure a real provider.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/provider"

	"github.com/scv-cli/scv/shared/textcut"
)

// Name is the provider's name.
const Name = "demo"

// Model is the model name the demo reports.
const Model = "scv-demo"

// Provider is the demo model.
type Provider struct{}

// New returns the demo provider.
func New() *Provider { return &Provider{} }

// Name implements provider.Provider.
func (*Provider) Name() string { return Name }

// Model implements provider.Provider.
func (*Provider) Model() string { return Model }

// ContextMaxTokens implements provider.Provider.
func (*Provider) ContextMaxTokens() int64 { return 32000 }

const configureHint = "To use a real model, quit and run `scv setup` (it asks for the provider, the key and the model, and tests the connection), " +
	"or create $SCV_HOME/config.toml (~/.scv/config.toml by default; `scv config path` prints it) with\n\n" +
	"    [provider]\n    active = \"openai\"\n\n" +
	"    [providers.openai]\n    kind = \"openai\"\n    base_url = \"https://api.openai.com/v1\"\n" +
	"    api_key_env = \"OPENAI_API_KEY\"\n    model = \"gpt-4.1-mini\"\n\n" +
	"or just export OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible endpoint). " +
	"See docs/configuration.md."

// Stream implements provider.Provider with a script chosen from where the
// turn is: how many tool results follow the last user message.
func (p *Provider) Stream(ctx context.Context, req provider.Request, h provider.Handler) (*provider.Response, error) {
	prompt, results := turnState(req.Messages)
	tools := map[string]bool{}
	for _, t := range req.Tools {
		tools[t.Name] = true
	}
	var resp provider.Response
	switch {
	case len(tools) == 0 || !tools["read"]:
		resp.Content = fmt.Sprintf("This is SCV's built-in demo model; no real model is configured. You said: %q. "+
			"This session has no file tools, so there is nothing for me to show you here. %s", clip(prompt, 200), configureHint)
	case len(results) == 0:
		resp.Content = fmt.Sprintf("This is SCV's built-in demo model; no real model is configured, so I follow a script. You said: %q. "+
			"First I'll look around your workspace with the read tool.", clip(prompt, 200))
		resp.ToolCalls = []provider.ToolCall{call("demo_list", "read", map[string]any{"path": "."})}
	case len(results) == 1:
		resp.Content = "The workspace listing came back:\n\n" + clip(results[0], 600) +
			"\n\nNext, a call that needs your approval, so you can see how SCV asks before anything risky runs."
		resp.ToolCalls = []provider.ToolCall{approvalCall(tools)}
	default:
		outcome := "The call ran."
		last := results[len(results)-1]
		if strings.Contains(last, "denied") {
			outcome = "You denied the call, so nothing ran."
		}
		resp.Content = outcome + " That is the whole demo: streaming text, tool calls and approvals all work the same way with a real model. " + configureHint
	}
	if err := streamWords(ctx, resp.Content, h); err != nil {
		return nil, err
	}
	resp.Usage = &provider.Usage{InputTokens: estimate(req), OutputTokens: int64(len(resp.Content)+3) / 4}
	resp.FinishReason = "stop"
	if len(resp.ToolCalls) > 0 {
		resp.FinishReason = "tool_calls"
	}
	return &resp, nil
}

// approvalCall picks a call that asks for approval under on-risk with the
// tools at hand. Reading a secret-like name is filesystem risk; the file is
// one that does not normally exist.
func approvalCall(tools map[string]bool) provider.ToolCall {
	if tools["bash"] {
		return call("demo_approval", "bash", map[string]any{"command": "echo 'hello from the SCV demo'"})
	}
	return call("demo_approval", "read", map[string]any{"path": ".env.scv-demo"})
}

func call(id, name string, args map[string]any) provider.ToolCall {
	b, _ := json.Marshal(args)
	return provider.ToolCall{ID: id, Name: name, Arguments: string(b)}
}

// turnState returns the last user prompt and the tool results after it.
func turnState(msgs []provider.Message) (prompt string, results []string) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == provider.RoleUser {
			prompt = msgs[i].Content
			for _, m := range msgs[i+1:] {
				if m.Role == provider.RoleTool {
					results = append(results, m.Content)
				}
			}
			return prompt, results
		}
	}
	return "", nil
}

func streamWords(ctx context.Context, text string, h provider.Handler) error {
	for len(text) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := strings.IndexByte(text[min(1, len(text)):], ' ')
		if n < 0 {
			n = len(text)
		} else {
			n += 1
		}
		if err := h.OnDelta(text[:n]); err != nil {
			return err
		}
		text = text[n:]
	}
	return nil
}

func estimate(req provider.Request) int64 {
	n := len(req.System)
	for _, m := range req.Messages {
		n += len(m.Content) + len(m.Role)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	return int64(n+3) / 4
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return textcut.Prefix(s, n) + "…"
}
