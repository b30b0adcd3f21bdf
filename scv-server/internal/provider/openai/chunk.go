package openai

import (
	"encoding/json"
	"strings"
)

// chunk is the part of a chat.completion.chunk this package uses. Its
// JSON tags are what encoding/json decodes; decodeChunk's fast path
// produces the same values.
type chunk struct {
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage"`
	// Error is set by servers that report a failure mid-stream as an
	// event: {"error":{"message":...}}.
	Error json.RawMessage `json:"error"`
}

type choice struct {
	Index        int    `json:"index"`
	Delta        delta  `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

type delta struct {
	Content   string      `json:"content"`
	Refusal   string      `json:"refusal"`
	ToolCalls []toolDelta `json:"tool_calls"`
}

type toolDelta struct {
	Index    optInt `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type usage struct {
	PromptTokens        int64         `json:"prompt_tokens"`
	CompletionTokens    int64         `json:"completion_tokens"`
	PromptTokensDetails *tokenDetails `json:"prompt_tokens_details"`
}

// tokenDetails is the chat wire's prompt_tokens_details and the Responses
// wire's input_tokens_details: of the input, how much came from the
// provider's prompt cache (nil when not said).
type tokenDetails struct {
	CachedTokens *int64 `json:"cached_tokens"`
}

// cached is prompt_tokens_details.cached_tokens; nil when absent.
func (u *usage) cached() *int64 {
	if u.PromptTokensDetails == nil {
		return nil
	}
	return u.PromptTokensDetails.CachedTokens
}

// optInt is an int that may be absent or null, without the allocation of
// a *int.
type optInt struct {
	V   int
	Set bool
}

func (o *optInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*o = optInt{}
		return nil
	}
	var v int
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = optInt{V: v, Set: true}
	return nil
}

// hasError reports whether the chunk carries a mid-stream error.
func (c *chunk) hasError() bool { return len(c.Error) > 0 && string(c.Error) != "null" }

// errorMessage is the provider's text of a mid-stream error: error.message
// (a string, or strings joined as go-openai did), a string error, or the
// error's JSON itself.
func (c *chunk) errorMessage() string {
	var obj struct {
		Message json.RawMessage `json:"message"`
	}
	var s string
	var ss []string
	switch {
	case json.Unmarshal(c.Error, &obj) == nil && json.Unmarshal(obj.Message, &s) == nil && s != "":
		return s
	case obj.Message != nil && json.Unmarshal(obj.Message, &ss) == nil && len(ss) > 0:
		return strings.Join(ss, ", ")
	case json.Unmarshal(c.Error, &s) == nil && s != "":
		return s
	}
	return string(c.Error)
}

// decodeChunk decodes one event's data into c, reusing c's memory.
//
// A hand-written parser handles the chunks every server sends, with no
// allocation beyond the strings it returns; whatever it is not sure of
// (invalid JSON, a type it does not expect, a duplicate or case-folded
// key, an escaped key, deep nesting) it leaves to encoding/json, whose
// result, or error, then stands. FuzzChunk checks the two agree.
func decodeChunk(data []byte, c *chunk) error {
	choices := c.Choices[:0]
	*c = chunk{Choices: choices}
	d := chunkDecoder{data: data}
	if d.chunk(c) {
		return nil
	}
	*c = chunk{}
	return json.Unmarshal(data, c)
}

// chunkDecoder is the fast path of decodeChunk. Each method reports false
// when encoding/json must decide instead.
type chunkDecoder struct {
	data []byte
	i    int
}

// maxSkipDepth bounds the nesting of values the fast path skips.
const maxSkipDepth = 64

func (d *chunkDecoder) chunk(c *chunk) bool {
	d.ws()
	if d.literal("null") {
		// encoding/json leaves the value as it was.
		return d.end()
	}
	var seen uint8
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			return once(&seen, 1) && d.choices(c)
		case "usage":
			if !once(&seen, 2) {
				return false
			}
			if d.literal("null") {
				c.Usage = nil
				return true
			}
			c.Usage = new(usage)
			return d.usage(c.Usage)
		case "error":
			// A mid-stream error is rare: encoding/json decodes it.
			return once(&seen, 4) && d.literal("null")
		}
		return d.skipUnknown(key, "choices", "usage", "error")
	})
	return ok && d.end()
}

func (d *chunkDecoder) choices(c *chunk) bool {
	if d.literal("null") {
		c.Choices = nil
		return true
	}
	return d.array(func() bool {
		// Keep the tool call slice of the element this one replaces.
		n := len(c.Choices)
		var calls []toolDelta
		if n < cap(c.Choices) {
			calls = c.Choices[:n+1][n].Delta.ToolCalls[:0]
		}
		c.Choices = append(c.Choices, choice{Delta: delta{ToolCalls: calls}})
		return d.choice(&c.Choices[n])
	})
}

func (d *chunkDecoder) choice(ch *choice) bool {
	if d.literal("null") {
		return true
	}
	var seen uint8
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			return once(&seen, 1) && d.intValue(&ch.Index)
		case "delta":
			return once(&seen, 2) && d.delta(&ch.Delta)
		case "finish_reason":
			return once(&seen, 4) && d.str(&ch.FinishReason)
		}
		return d.skipUnknown(key, "index", "delta", "finish_reason")
	})
}

func (d *chunkDecoder) delta(dl *delta) bool {
	if d.literal("null") {
		return true
	}
	var seen uint8
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "content":
			return once(&seen, 1) && d.str(&dl.Content)
		case "refusal":
			return once(&seen, 2) && d.str(&dl.Refusal)
		case "tool_calls":
			if !once(&seen, 4) {
				return false
			}
			if d.literal("null") {
				dl.ToolCalls = nil
				return true
			}
			return d.array(func() bool {
				dl.ToolCalls = append(dl.ToolCalls, toolDelta{})
				return d.toolDelta(&dl.ToolCalls[len(dl.ToolCalls)-1])
			})
		}
		return d.skipUnknown(key, "content", "refusal", "tool_calls")
	})
}

func (d *chunkDecoder) toolDelta(t *toolDelta) bool {
	if d.literal("null") {
		return true
	}
	var seen uint8
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			if !once(&seen, 1) {
				return false
			}
			if d.literal("null") {
				t.Index = optInt{}
				return true
			}
			t.Index.Set = true
			return d.intValue(&t.Index.V)
		case "id":
			return once(&seen, 2) && d.str(&t.ID)
		case "type":
			return once(&seen, 4) && d.str(&t.Type)
		case "function":
			if !once(&seen, 8) {
				return false
			}
			if d.literal("null") {
				return true
			}
			var fseen uint8
			return d.object(func(key []byte) bool {
				switch string(key) {
				case "name":
					return once(&fseen, 1) && d.str(&t.Function.Name)
				case "arguments":
					return once(&fseen, 2) && d.str(&t.Function.Arguments)
				}
				return d.skipUnknown(key, "name", "arguments")
			})
		}
		return d.skipUnknown(key, "index", "id", "type", "function")
	})
}

func (d *chunkDecoder) usage(u *usage) bool {
	var seen uint8
	return d.object(func(key []byte) bool {
		switch string(key) {
		case "prompt_tokens":
			return once(&seen, 1) && d.int64Value(&u.PromptTokens)
		case "completion_tokens":
			return once(&seen, 2) && d.int64Value(&u.CompletionTokens)
		case "prompt_tokens_details":
			if !once(&seen, 4) {
				return false
			}
			if d.literal("null") {
				return true
			}
			u.PromptTokensDetails = new(tokenDetails)
			var dseen uint8
			return d.object(func(key []byte) bool {
				if string(key) == "cached_tokens" {
					if !once(&dseen, 1) {
						return false
					}
					if d.literal("null") {
						return true
					}
					u.PromptTokensDetails.CachedTokens = new(int64)
					return d.int64Value(u.PromptTokensDetails.CachedTokens)
				}
				return d.skipUnknown(key, "cached_tokens")
			})
		}
		return d.skipUnknown(key, "prompt_tokens", "completion_tokens", "prompt_tokens_details")
	})
}
