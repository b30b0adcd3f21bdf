// Package tokens estimates how many tokens a model request takes, for
// deciding when to compact a session's history. It needs no tokenizer:
// ASCII text counts one token per 3.5 bytes and every other character one
// token. On the reference corpus (the web pages of the spec pack, the spec
// itself, this repository's docs and Go code) measured against OpenAI's
// o200k_base tokenizer, that overestimates by 17% in total and
// underestimates a single document by at most 8% (tokens_test.go measures
// it). Overestimating is the safe side: compaction starts a little early.
// When the provider reports usage, the agent loop calibrates with it and
// estimates only what was added since.
package tokens

import (
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

// asciiBytesPerToken is the divisor for ASCII text.
const asciiBytesPerToken = 3.5

// perMessage is the framing a chat message costs besides its content.
const perMessage = 4

// Estimate returns the estimated tokens of s.
func Estimate(s string) int64 {
	var ascii, other int64
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			// Count a run of ASCII at once.
			j := i + 1
			for j < len(s) && s[j] < utf8.RuneSelf {
				j++
			}
			ascii += int64(j - i)
			i = j
			continue
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
		other++
	}
	return int64(float64(ascii)/asciiBytesPerToken+0.999) + other
}

// Message returns the estimated tokens of one history message.
func Message(m provider.Message) int64 {
	n := perMessage + Estimate(m.Content)
	for _, c := range m.ToolCalls {
		n += perMessage + Estimate(c.Name) + Estimate(c.Arguments)
	}
	return n
}

// Messages returns the estimated tokens of msgs.
func Messages(msgs []provider.Message) int64 {
	var n int64
	for _, m := range msgs {
		n += Message(m)
	}
	return n
}

// Request returns the estimated tokens of a whole request: system prompt,
// messages and tool schemas.
func Request(r provider.Request) int64 {
	n := perMessage + Estimate(r.System) + Messages(r.Messages)
	for _, t := range r.Tools {
		n += Estimate(t.Name) + Estimate(t.Description) + Estimate(string(t.Parameters))
	}
	return n
}
