package fakeopenai

import (
	"encoding/json"
	"net/http"
	"time"
)

// Reply is the scripted answer to one chat completions request: its steps
// run in order (see the package documentation for what each does).
type Reply struct {
	Steps []Step
}

// Script returns a Reply made of steps.
func Script(steps ...Step) Reply { return Reply{Steps: steps} }

// Step is one instruction of a Reply. Build steps with the constructors of
// this package; the zero Step does nothing.
type Step struct {
	kind  stepKind
	strs  []string
	a, b  string
	raw   []byte
	n     int
	d     time.Duration
	in    int64
	out   int64
	cache *int64 // CachedUsage's cached input tokens
	code  int
	index int // tool call index, assigned when the reply is prepared
}

type stepKind uint8

const (
	kindNone stepKind = iota
	kindText
	kindToolCall
	kindFinish
	kindEvent
	kindRaw
	kindRepeat
	kindDelay
	kindPace
	kindHang
	kindHeader
	kindUsage
	kindNoDone
	kindStatus
	kindWebSearch
	kindCitation
	kindIncomplete
	kindFailed
	kindReasoning
)

// Text streams each chunk as one event with choices[0].delta.content.
func Text(chunks ...string) Step { return Step{kind: kindText, strs: chunks} }

// ToolCall streams one tool call: an event with its id and function name,
// then one event per argument fragment. Calls get indexes 0, 1, ... in the
// order of the reply's ToolCall steps.
func ToolCall(id, name string, fragments ...string) Step {
	return Step{kind: kindToolCall, a: id, b: name, strs: fragments}
}

// Finish sends an event with choices[0].finish_reason = reason, and stops
// the tail from sending its own.
func Finish(reason string) Step { return Step{kind: kindFinish, a: reason} }

// Event sends one "data: <payload>" event with payload verbatim.
func Event(payload string) Step { return Step{kind: kindEvent, a: payload} }

// Raw writes b verbatim, for malformed or oversized streams.
func Raw(b []byte) Step { return Step{kind: kindRaw, raw: b} }

// Repeat streams n text deltas of chunk, encoded once and flushed once at
// the end, so large counts are cheap.
func Repeat(n int, chunk string) Step { return Step{kind: kindRepeat, n: n, a: chunk} }

// Delay waits d before the next step.
func Delay(d time.Duration) Step { return Step{kind: kindDelay, d: d} }

// Pace waits d before every later event of the reply.
func Pace(d time.Duration) Step { return Step{kind: kindPace, d: d} }

// Hang stops sending and blocks until the client goes away or the server
// closes.
func Hang() Step { return Step{kind: kindHang} }

// Header sets a response header.
func Header(key, value string) Step { return Step{kind: kindHeader, a: key, b: value} }

// Usage sets the token usage reported in the final chunk, which is sent
// only when the request asked for it with stream_options.include_usage.
func Usage(promptTokens, completionTokens int64) Step {
	return Step{kind: kindUsage, in: promptTokens, out: completionTokens}
}

// CachedUsage is Usage with cached of the prompt tokens read from the
// provider's prompt cache: the chat wire's
// usage.prompt_tokens_details.cached_tokens and the Responses wire's
// usage.input_tokens_details.cached_tokens (which Usage sends as 0).
func CachedUsage(promptTokens, completionTokens, cached int64) Step {
	return Step{kind: kindUsage, in: promptTokens, out: completionTokens, cache: &cached}
}

// NoDone drops the tail (automatic finish_reason, usage and "data: [DONE]"):
// the body ends after the last step.
func NoDone() Step { return Step{kind: kindNoDone} }

// Status makes the reply a plain HTTP response with that status and body.
func Status(code int, body string) Step { return Step{kind: kindStatus, code: code, a: body} }

// APIError makes the reply an HTTP error with an OpenAI-style body:
// {"error":{"message":message,"type":...,"code":...}}.
func APIError(code int, message string) Step {
	return Status(code, errorBody(code, message))
}

// WebSearch, on the Responses wire, runs a hosted web search: a
// web_search_call output item (added, in_progress, searching, completed,
// done) whose action searched for query. The chat wire ignores it.
func WebSearch(query string) Step { return Step{kind: kindWebSearch, a: query} }

// Citation, on the Responses wire, annotates the current message (opening
// one if none is open) with a url_citation of url and title: a
// response.output_text.annotation.added event, and the annotation in the
// message's done item and the final response. The chat wire ignores it.
func Citation(url, title string) Step { return Step{kind: kindCitation, a: url, b: title} }

// Reasoning, on the Responses wire, sends a reasoning output item (id
// "rs_fake_<n>") whose summary is one summary_text part of summary (none
// when it is empty) and whose encrypted_content is encrypted (null when
// it is empty), as a reasoning model sends it when the request includes
// "reasoning.encrypted_content": output_item.added without the encrypted
// content, the summary part events, output_item.done with everything.
// The chat wire ignores it.
func Reasoning(summary, encrypted string) Step {
	return Step{kind: kindReasoning, a: summary, b: encrypted}
}

// Incomplete, on the Responses wire, ends the reply with
// response.incomplete and incomplete_details.reason = reason (such as
// "max_output_tokens") instead of response.completed. The chat wire
// ignores it.
func Incomplete(reason string) Step { return Step{kind: kindIncomplete, a: reason} }

// Failed, on the Responses wire, ends the reply with response.failed
// carrying error {code, message} instead of response.completed. The chat
// wire ignores it.
func Failed(code, message string) Step { return Step{kind: kindFailed, a: code, b: message} }

// errorBody renders an OpenAI-style error object.
func errorBody(code int, message string) string {
	typ := "invalid_request_error"
	switch {
	case code == http.StatusUnauthorized:
		typ = "authentication_error"
	case code == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case code >= 500:
		typ = "server_error"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": message,
		"type":    typ,
		"param":   nil,
		"code":    nil,
	}})
	return string(b)
}

// plan is a Reply prepared for serving: settings pulled out of the steps.
type plan struct {
	steps       []Step
	headers     [][2]string
	status      int
	statusBody  string
	usage       *Step
	noDone      bool
	hasFinish   bool
	hasToolCall bool
	// terminal is the Incomplete or Failed step ending a Responses reply.
	terminal *Step
}

func prepare(r Reply) plan {
	var p plan
	next := 0
	for _, s := range r.Steps {
		switch s.kind {
		case kindHeader:
			p.headers = append(p.headers, [2]string{s.a, s.b})
		case kindUsage:
			u := s
			p.usage = &u
		case kindNoDone:
			p.noDone = true
		case kindStatus:
			p.status, p.statusBody = s.code, s.a
		case kindToolCall:
			s.index = next
			next++
			p.hasToolCall = true
			p.steps = append(p.steps, s)
		case kindFinish:
			p.hasFinish = true
			p.steps = append(p.steps, s)
		case kindIncomplete, kindFailed:
			t := s
			p.terminal = &t
		case kindNone:
		default:
			p.steps = append(p.steps, s)
		}
	}
	return p
}
