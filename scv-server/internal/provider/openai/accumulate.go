package openai

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

// accumulator builds a Response from decoded chunks, forwarding text to
// the Handler and enforcing the text, argument and tool call limits.
type accumulator struct {
	p      *Provider
	h      provider.Handler
	lim    provider.Limits
	text   strings.Builder
	calls  []*toolAcc // in order of first appearance
	usage  *provider.Usage
	finish string
}

type toolAcc struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

func newAccumulator(p *Provider, h provider.Handler) *accumulator {
	return &accumulator{p: p, h: h, lim: p.limits}
}

func (a *accumulator) add(c *chunk) error {
	if u := c.Usage; u != nil {
		a.usage = &provider.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, CachedInputTokens: u.cached()}
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // we never ask for n > 1
		}
		if err := a.addText(ch.Delta.Content); err != nil {
			return err
		}
		// A refusal is what the model says instead of an answer: show it.
		if err := a.addText(ch.Delta.Refusal); err != nil {
			return err
		}
		for j := range ch.Delta.ToolCalls {
			if err := a.addTool(&ch.Delta.ToolCalls[j]); err != nil {
				return err
			}
		}
		if ch.FinishReason != "" {
			a.finish = ch.FinishReason
		}
	}
	return nil
}

func (a *accumulator) addText(d string) error {
	if d == "" {
		return nil
	}
	if a.text.Len()+len(d) > a.lim.AssistantBytes {
		return a.p.errorf(provider.CodeResponseLimit, "assistant text exceeds %d bytes", a.lim.AssistantBytes)
	}
	a.text.WriteString(d)
	if a.h == nil {
		return nil
	}
	// The handler's error is returned unchanged, as provider.Handler says.
	return a.h.OnDelta(d)
}

func (a *accumulator) addTool(tc *toolDelta) error {
	var t *toolAcc
	if tc.Index.Set {
		for _, c := range a.calls {
			if c.index == tc.Index.V {
				t = c
				break
			}
		}
	} else if n := len(a.calls); n > 0 && (tc.ID == "" || tc.ID == a.calls[n-1].id) {
		// Some servers omit index: a fragment without a new id continues
		// the last call.
		t = a.calls[n-1]
	}
	if t == nil {
		idx := len(a.calls)
		if tc.Index.Set {
			idx = tc.Index.V
		}
		var err error
		if t, err = a.newCall(idx); err != nil {
			return err
		}
	}
	if t.id == "" {
		t.id = tc.ID
	}
	// OpenAI sends the name once; some servers repeat it whole in every
	// fragment, a few split it.
	if n := tc.Function.Name; n != "" && n != t.name {
		t.name += n
	}
	return a.appendArgs(t, tc.Function.Arguments)
}

// newCall starts a tool call at index, within the tool call limit.
func (a *accumulator) newCall(index int) (*toolAcc, error) {
	if len(a.calls) >= a.lim.ToolCalls {
		return nil, a.p.errorf(provider.CodeToolLimit, "the reply has more than %d tool calls", a.lim.ToolCalls)
	}
	t := &toolAcc{index: index}
	a.calls = append(a.calls, t)
	return t, nil
}

// appendArgs adds a fragment to a call's arguments, within the limit.
func (a *accumulator) appendArgs(t *toolAcc, args string) error {
	if args == "" {
		return nil
	}
	if t.args.Len()+len(args) > a.lim.ToolArgumentBytes {
		return a.p.errorf(provider.CodeResponseLimit, "arguments of tool call %q exceed %d bytes", t.name, a.lim.ToolArgumentBytes)
	}
	t.args.WriteString(args)
	return nil
}

func (a *accumulator) response() *provider.Response {
	r := &provider.Response{Content: a.text.String(), Usage: a.usage, FinishReason: a.finish}
	calls := slices.Clone(a.calls)
	slices.SortStableFunc(calls, func(x, y *toolAcc) int { return cmp.Compare(x.index, y.index) })
	for _, c := range calls {
		id := c.id
		if id == "" {
			// The loop needs an id to answer the call with.
			id = "call_" + strconv.Itoa(c.index)
		}
		r.ToolCalls = append(r.ToolCalls, provider.ToolCall{ID: id, Name: c.name, Arguments: c.args.String()})
	}
	return r
}
