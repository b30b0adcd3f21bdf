// Package provider defines how the agent loop talks to a model: one
// streaming request at a time, with the reply's text delivered as it
// arrives and its tool calls delivered whole at the end.
//
// Implementations live in subpackages: openai (any OpenAI-compatible Chat
// Completions or Responses endpoint) and demo (the built-in scripted
// model).
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Role is the author of a message in the history.
type Role string

// Roles of history messages.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one entry of the conversation sent to the model.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID links a tool message to the call it answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Reasoning are the opaque reasoning items of an assistant message
	// (Response.Reasoning), sent back with it so a reasoning model keeps
	// its reasoning across tool calls. Only the wire that produced them
	// reads them; they are stored with the session like the rest.
	Reasoning []json.RawMessage `json:"reasoning,omitempty"`
}

// ToolCall is one tool call the model asked for. Arguments is the raw JSON
// text the model produced; it may be invalid, and the loop reports that to
// the model rather than failing the turn.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ArgumentsJSON returns the call's arguments as a JSON value for clients
// (tool.proposed, a session's replay): the value itself when the model's
// text is valid JSON, else the text as a JSON string; {} when empty.
func (c ToolCall) ArgumentsJSON() json.RawMessage {
	if strings.TrimSpace(c.Arguments) == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(c.Arguments)) {
		return json.RawMessage(c.Arguments)
	}
	b, _ := json.Marshal(c.Arguments)
	return b
}

// ToolSpec is a tool offered to the model.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON Schema of the arguments object
}

// Request is one model request.
type Request struct {
	Model    string
	System   string
	Messages []Message
	Tools    []ToolSpec
	// HostedWebSearch also offers the endpoint's own web search tool, run
	// by the provider (web.search = "provider"): the reply then carries
	// cited sources, and no tool call of the loop is involved. Providers
	// that have no such tool ignore it.
	HostedWebSearch bool
}

// Usage is the token usage a provider reported for one request.
type Usage struct {
	InputTokens  int64
	OutputTokens int64
	// CachedInputTokens is the part of InputTokens read from the
	// provider's prompt cache; nil when the provider did not say.
	CachedInputTokens *int64
}

// Response is a complete model reply.
type Response struct {
	Content   string
	ToolCalls []ToolCall
	// Usage is nil when the provider reported none.
	Usage        *Usage
	FinishReason string
	// Reasoning are the model's reasoning items, opaque JSON objects to
	// be carried on the assistant Message and sent back as they are
	// (the OpenAI Responses wire's encrypted reasoning); nil on wires
	// without them.
	Reasoning []json.RawMessage
}

// Handler receives streamed text. A non-nil error from OnDelta stops the
// stream and is returned by Stream unchanged.
type Handler interface {
	OnDelta(text string) error
}

// ReasoningHandler is a Handler that also takes the model's reasoning as
// it streams, as text a person can read (the Responses wire's reasoning
// summary deltas). Providers call OnReasoning only on handlers that
// implement it; a non-nil error stops the stream like OnDelta's. The text
// is for display only: the reply keeps its reasoning as opaque items
// (Response.Reasoning) either way.
type ReasoningHandler interface {
	Handler
	OnReasoning(text string) error
}

// Retry describes a failed model request that is about to be sent again.
type Retry struct {
	// Attempt is the attempt about to be made (2 for the first retry) of
	// MaxAttempts in all.
	Attempt, MaxAttempts int
	// Wait is the delay before that attempt.
	Wait time.Duration
	// Status is the failed attempt's HTTP status, 0 when none came.
	Status int
	// Message is the provider's own message, redacted and bounded.
	Message string
}

// RetryHandler is a Handler that is told before a failed request is sent
// again, so a person sees the wait rather than a silent pause. Providers
// call OnRetry only on handlers that implement it, on the goroutine of
// Stream; it must not block.
type RetryHandler interface {
	Handler
	OnRetry(Retry)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(text string) error

// OnDelta calls f.
func (f HandlerFunc) OnDelta(text string) error { return f(text) }

// Provider is a model endpoint.
type Provider interface {
	// Name is the configured provider name, such as "openai" or "demo".
	Name() string
	// Model is the default model.
	Model() string
	// ContextMaxTokens is the model's context size.
	ContextMaxTokens() int64
	// Stream sends req and streams the reply. It returns the complete reply,
	// or an error: a *Error for failures the turn reports with a stable
	// code, ctx.Err() when cancelled, or the handler's error.
	Stream(ctx context.Context, req Request, h Handler) (*Response, error)
}

// ModelLister is a Provider whose endpoint lists the models it serves
// (OpenAI's GET /models). Clients offer them as a per-session choice.
type ModelLister interface {
	// ListModels returns the ids of the endpoint's models, sorted and
	// without duplicates, or an error when the endpoint lists none.
	ListModels(ctx context.Context) ([]string, error)
}

// Code classifies a provider failure; the values are the turn.failed codes
// the failure maps to.
type Code string

// Failure codes.
const (
	CodeProviderError Code = "provider_error"
	CodeResponseLimit Code = "response_limit"
	CodeToolLimit     Code = "tool_limit"
)

// Error is a provider failure with a stable code and a bounded message a
// person can act on. It never contains a credential.
type Error struct {
	Code    Code
	Message string
	// Status is the HTTP status, when there was one.
	Status int
	Err    error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code c.
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Message: fmt.Sprintf(format, args...)}
}

// AsError returns err as a *Error when it is one.
func AsError(err error) (*Error, bool) {
	var pe *Error
	ok := errors.As(err, &pe)
	return pe, ok
}

// Limits of a streamed reply (protocol-v1.md, "Ordering and backpressure").
const (
	MaxSSEEventBytes     = 1 << 20
	MaxResponseBytes     = 4 << 20
	MaxAssistantBytes    = 1 << 20
	MaxToolArgumentBytes = 256 << 10
	MaxToolCalls         = 32
	// MaxReasoningItemBytes bounds one reasoning item kept for the next
	// request; larger ones are dropped.
	MaxReasoningItemBytes = 1 << 20
)

// Limits bounds one streamed reply. The zero value means the defaults above.
type Limits struct {
	SSEEventBytes     int
	ResponseBytes     int
	AssistantBytes    int
	ToolArgumentBytes int
	ToolCalls         int
	// ReasoningItemBytes bounds each kept reasoning item.
	ReasoningItemBytes int
}

// WithDefaults fills zero fields with the protocol's limits.
func (l Limits) WithDefaults() Limits {
	if l.SSEEventBytes <= 0 {
		l.SSEEventBytes = MaxSSEEventBytes
	}
	if l.ResponseBytes <= 0 {
		l.ResponseBytes = MaxResponseBytes
	}
	if l.AssistantBytes <= 0 {
		l.AssistantBytes = MaxAssistantBytes
	}
	if l.ToolArgumentBytes <= 0 {
		l.ToolArgumentBytes = MaxToolArgumentBytes
	}
	if l.ToolCalls <= 0 {
		l.ToolCalls = MaxToolCalls
	}
	if l.ReasoningItemBytes <= 0 {
		l.ReasoningItemBytes = MaxReasoningItemBytes
	}
	return l
}
