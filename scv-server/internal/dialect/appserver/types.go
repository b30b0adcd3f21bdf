package appserver

import "encoding/json"

// The protocol's Go types. The JSON Schema and TypeScript bundles
// (schema.go, `scv app-server schema` and `generate-ts`) are generated from
// them, so a field added here is a field of the protocol.

// ProtocolVersion is the App Server protocol discriminator.
const ProtocolVersion = "v1"

// UserAgent names the server in initialize.
const UserAgent = "scv-app-server"

// ClientInfo names the client.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// ClientCapabilities are what the client says about itself.
type ClientCapabilities struct {
	ExperimentalAPI bool `json:"experimentalApi,omitempty"`
	// OptOutNotificationMethods are notification methods the server must
	// not send on this connection.
	OptOutNotificationMethods []string `json:"optOutNotificationMethods,omitempty"`
}

// InitializeParams are the params of initialize.
type InitializeParams struct {
	ClientInfo   *ClientInfo         `json:"clientInfo,omitempty"`
	Capabilities *ClientCapabilities `json:"capabilities,omitempty"`
}

// ServerCapabilities say what this server really does.
type ServerCapabilities struct {
	ModelList          bool `json:"modelList"`
	ThreadLifecycle    bool `json:"threadLifecycle"`
	NotificationOptOut bool `json:"notificationOptOut"`
	SchemaExport       bool `json:"schemaExport"`
	ApprovalResolve    bool `json:"approvalResolve"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	UserAgent       string             `json:"userAgent"`
	ProtocolVersion string             `json:"protocolVersion"`
	Capabilities    ServerCapabilities `json:"capabilities"`
}

// Thread statuses.
const (
	ThreadIdle    = "idle"
	ThreadRunning = "running"
	ThreadClosed  = "closed"
)

// Thread is an SCV session seen as an App Server thread.
type Thread struct {
	ThreadID  string         `json:"threadId"`
	AgentKey  string         `json:"agentKey"`
	Cwd       string         `json:"cwd"`
	CreatedAt int64          `json:"createdAt,omitempty"`
	UpdatedAt int64          `json:"updatedAt,omitempty"`
	Status    string         `json:"status" jsonschema:"enum=idle,enum=running,enum=closed"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// ThreadStartParams are the params of thread/start.
type ThreadStartParams struct {
	// AgentKey selects the configuration of the thread's turns
	// (docs/app-server.md); empty is "default".
	AgentKey string `json:"agentKey,omitempty"`
	// Cwd is the workspace; relative paths are resolved against the
	// server's working directory.
	Cwd      string         `json:"cwd"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// ThreadParams name a thread (thread/unsubscribe).
type ThreadParams struct {
	ThreadID string `json:"threadId"`
}

// ResumeParams are the params of thread/resume and thread/read. Cwd is
// needed only for an SCV session the App Server never ran (one the TUI
// started), to open it from its workspace.
type ResumeParams struct {
	ThreadID string `json:"threadId"`
	Cwd      string `json:"cwd,omitempty"`
}

// ThreadListParams are the params of thread/list.
type ThreadListParams struct {
	// Cwd lists the threads of one workspace (default: the server's
	// working directory).
	Cwd   string `json:"cwd,omitempty"`
	Limit int    `json:"limit,omitempty"`
}

// ThreadSummary is one entry of thread/list.
type ThreadSummary struct {
	ThreadID  string `json:"threadId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title,omitempty"`
	CreatedAt int64  `json:"createdAt,omitempty"`
	UpdatedAt int64  `json:"updatedAt,omitempty"`
	Turns     int    `json:"turns"`
	Status    string `json:"status"`
}

// ThreadListResult is the result of thread/list.
type ThreadListResult struct {
	Threads []ThreadSummary `json:"threads"`
}

// ThreadReadResult is the result of thread/read and thread/resume.
type ThreadReadResult struct {
	Thread Thread `json:"thread"`
	Turns  []Turn `json:"turns"`
	Items  []Item `json:"items"`
}

// ThreadUnsubscribeResult is the result of thread/unsubscribe.
type ThreadUnsubscribeResult struct {
	ThreadID   string `json:"threadId"`
	Subscribed bool   `json:"subscribed"`
	Closed     bool   `json:"closed"`
}

// ThreadClosedParams are the params of thread/closed.
type ThreadClosedParams struct {
	ThreadID string `json:"threadId"`
}

// ThreadStatusChangedParams are the params of thread/status/changed.
type ThreadStatusChangedParams struct {
	ThreadID string `json:"threadId"`
	Status   string `json:"status"`
}

// InputItem is one piece of a turn's input; only text is supported.
type InputItem struct {
	Type string `json:"type" jsonschema:"enum=text"`
	Text string `json:"text"`
}

// Turn statuses.
const (
	TurnRunning     = "running"
	TurnCompleted   = "completed"
	TurnFailed      = "failed"
	TurnInterrupted = "interrupted"
)

// Turn is one turn of a thread.
type Turn struct {
	TurnID      string      `json:"turnId"`
	ThreadID    string      `json:"threadId"`
	Status      string      `json:"status" jsonschema:"enum=running,enum=completed,enum=failed,enum=interrupted"`
	StartedAt   int64       `json:"startedAt,omitempty"`
	CompletedAt int64       `json:"completedAt,omitempty"`
	Input       []InputItem `json:"input"`
	Result      *TurnResult `json:"result,omitempty"`
}

// TurnResult is what a finished turn left: the same objects turn/completed
// carried.
type TurnResult struct {
	FinalOutput string      `json:"finalOutput,omitempty"`
	Error       *TurnError  `json:"error,omitempty"`
	TokenUsage  *TokenUsage `json:"tokenUsage,omitempty"`
}

// TurnError says why a turn failed.
type TurnError struct {
	// Code is SCV's failure code (docs/protocol.md), or "interrupted".
	Code    string `json:"code"`
	Message string `json:"message"`
}

// TurnStartParams are the params of turn/start.
type TurnStartParams struct {
	ThreadID string      `json:"threadId"`
	Input    []InputItem `json:"input"`
}

// TurnStartResult is the result of turn/start.
type TurnStartResult struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Status   string `json:"status"`
}

// TurnSteerParams are the params of turn/steer and turn/followUp.
type TurnSteerParams struct {
	ThreadID       string      `json:"threadId"`
	ExpectedTurnID string      `json:"expectedTurnId"`
	Input          []InputItem `json:"input"`
}

// TurnQueuedResult is the result of turn/steer and turn/followUp.
type TurnQueuedResult struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	Queued   bool   `json:"queued"`
}

// TurnInterruptParams are the params of turn/interrupt.
type TurnInterruptParams struct {
	ThreadID       string `json:"threadId"`
	ExpectedTurnID string `json:"expectedTurnId"`
}

// TurnInterruptResult is the result of turn/interrupt; turn/completed
// with status interrupted follows.
type TurnInterruptResult struct {
	ThreadID    string `json:"threadId"`
	TurnID      string `json:"turnId"`
	Interrupted bool   `json:"interrupted"`
}

// TurnStartedParams are the params of turn/started.
type TurnStartedParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

// TurnCompletedParams are the params of turn/completed.
type TurnCompletedParams struct {
	ThreadID    string      `json:"threadId"`
	TurnID      string      `json:"turnId"`
	Status      string      `json:"status" jsonschema:"enum=completed,enum=failed,enum=interrupted"`
	FinalOutput string      `json:"finalOutput,omitempty"`
	Error       *TurnError  `json:"error,omitempty"`
	TokenUsage  *TokenUsage `json:"tokenUsage,omitempty"`
}

// Token usage schema versions.
const (
	TaskUsageSchema = "scv.task-token-usage.v1"
	UsageSchema     = "scv.token-usage.v1"
)

// CacheUsage is cache accounting. Status accounting_missing with null
// counts means the provider did not report it: never a zero-percent hit.
type CacheUsage struct {
	Status              string `json:"status" jsonschema:"enum=provider_reported,enum=accounting_missing"`
	ReadInputTokens     *int64 `json:"read_input_tokens" jsonschema:"oneof_type=integer;null"`
	WriteInputTokens    *int64 `json:"write_input_tokens" jsonschema:"oneof_type=integer;null"`
	UncachedInputTokens *int64 `json:"uncached_input_tokens" jsonschema:"oneof_type=integer;null"`
	Source              string `json:"source"`
}

// CycleUsage is the usage of one model request.
type CycleUsage struct {
	SchemaVersion   string     `json:"schema_version"`
	InputTokens     int64      `json:"input_tokens"`
	OutputTokens    int64      `json:"output_tokens"`
	TotalTokens     int64      `json:"total_tokens"`
	ReasoningTokens *int64     `json:"reasoning_tokens" jsonschema:"oneof_type=integer;null"`
	UsageSource     string     `json:"usage_source"`
	CacheUsage      CacheUsage `json:"cache_usage"`
}

// Cycle is one model request of a turn.
type Cycle struct {
	CycleIndex int        `json:"cycle_index"`
	Usage      CycleUsage `json:"usage"`
}

// TokenUsage is a turn's usage: totals and one cycle per model request.
type TokenUsage struct {
	SchemaVersion   string     `json:"schema_version"`
	InputTokens     int64      `json:"input_tokens"`
	OutputTokens    int64      `json:"output_tokens"`
	TotalTokens     int64      `json:"total_tokens"`
	ReasoningTokens *int64     `json:"reasoning_tokens" jsonschema:"oneof_type=integer;null"`
	CacheUsage      CacheUsage `json:"cache_usage"`
	Cycles          []Cycle    `json:"cycles"`
}

// Item types and statuses.
const (
	ItemUserMessage       = "userMessage"
	ItemAgentMessage      = "agentMessage"
	ItemReasoning         = "reasoning"
	ItemToolCall          = "toolCall"
	ItemContextCompaction = "contextCompaction"

	ItemInProgress = "inProgress"
	ItemCompleted  = "completed"
	ItemFailed     = "failed"
)

// Item is one thing that happened in a turn. Payload's shape depends on
// Type: UserMessagePayload, AgentMessagePayload, ReasoningPayload,
// ToolCallPayload or ContextCompactionPayload.
type Item struct {
	ItemID    string          `json:"itemId"`
	ThreadID  string          `json:"threadId"`
	TurnID    string          `json:"turnId"`
	Type      string          `json:"type" jsonschema:"enum=userMessage,enum=agentMessage,enum=reasoning,enum=toolCall,enum=contextCompaction"`
	Status    string          `json:"status" jsonschema:"enum=inProgress,enum=completed,enum=failed"`
	Payload   json.RawMessage `json:"payload" jsonschema:"type=object"`
	CreatedAt int64           `json:"createdAt"`
	UpdatedAt int64           `json:"updatedAt"`
}

// ItemDeltaParams are the params of item/agentMessage/delta and
// item/toolCall/delta: the item as it stands, and the new text.
type ItemDeltaParams struct {
	Item
	Delta string `json:"delta"`
}

// UserMessagePayload is a userMessage item's payload.
type UserMessagePayload struct {
	Text  string      `json:"text"`
	Input []InputItem `json:"input,omitempty"`
}

// AgentMessagePayload is an agentMessage item's payload; in a delta
// notification Text is the delta, in item/completed the whole message.
type AgentMessagePayload struct {
	Text string `json:"text"`
}

// ReasoningPayload is a reasoning item's payload.
type ReasoningPayload struct {
	Text string `json:"text"`
}

// ContextCompactionPayload is a contextCompaction item's payload.
type ContextCompactionPayload struct {
	BeforeTokens    int64 `json:"beforeTokens"`
	AfterTokens     int64 `json:"afterTokens"`
	RemovedMessages int64 `json:"removedMessages"`
}

// ToolMetadata is derived from the risk the tool declared for the call.
type ToolMetadata struct {
	SideEffect     string   `json:"sideEffect" jsonschema:"enum=read,enum=write,enum=external"`
	Idempotency    string   `json:"idempotency" jsonschema:"enum=supported,enum=unknown"`
	Terminal       bool     `json:"terminal"`
	CapabilityTags []string `json:"capabilityTags"`
	CostDimensions []string `json:"costDimensions"`
}

// ToolCallPayload is a toolCall item's payload. Optional outcome fields
// are present only when known: errorCode, executionStarted and durationMs
// come from the live events and are never invented on replay.
type ToolCallPayload struct {
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	// Status is running, success or failed.
	Status    string `json:"status" jsonschema:"enum=running,enum=success,enum=failed"`
	Output    string `json:"output,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// ErrorCode is null for a call that succeeded, a code such as
	// tool_not_allowed or approval_denied for one that failed.
	ErrorCode json.RawMessage `json:"errorCode,omitempty" jsonschema:"oneof_type=string;null"`
	// ExecutionStarted says whether the call crossed the started boundary.
	ExecutionStarted *bool `json:"executionStarted,omitempty"`
	// DurationMs is the call's run time; null for a call that never
	// started.
	DurationMs   json.RawMessage `json:"durationMs,omitempty" jsonschema:"oneof_type=integer;null"`
	ToolMetadata *ToolMetadata   `json:"toolMetadata,omitempty"`
}

// Approval decisions.
const (
	DecisionAllow        = "allow"
	DecisionAllowSession = "allow_session"
	DecisionDeny         = "deny"
	DecisionTimeout      = "timeout"
)

// ApprovalRequestParams are the params of approval/requested and of the
// approval/request server request.
type ApprovalRequestParams struct {
	RequestID  string          `json:"requestId"`
	ThreadID   string          `json:"threadId"`
	TurnID     string          `json:"turnId"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	Preview    string          `json:"preview"`
	Arguments  json.RawMessage `json:"arguments,omitempty"`
	Risk       string          `json:"risk,omitempty"`
}

// ApprovalDecision is the client's answer to approval/request.
type ApprovalDecision struct {
	Decision string `json:"decision" jsonschema:"enum=allow,enum=allow_session,enum=deny,enum=timeout"`
}

// ApprovalResolveParams are the params of approval/resolve.
type ApprovalResolveParams struct {
	ThreadID  string `json:"threadId"`
	TurnID    string `json:"turnId,omitempty"`
	RequestID string `json:"requestId"`
	Decision  string `json:"decision" jsonschema:"enum=allow,enum=allow_session,enum=deny,enum=timeout"`
}

// ApprovalResolvedParams are the params of approval/resolved.
type ApprovalResolvedParams struct {
	ThreadID  string `json:"threadId"`
	TurnID    string `json:"turnId"`
	RequestID string `json:"requestId"`
	Decision  string `json:"decision"`
}

// ApprovalResolveResult is the result of approval/resolve.
type ApprovalResolveResult struct {
	RequestID string `json:"requestId"`
	Decision  string `json:"decision"`
}

// Model is one entry of model/list.
type Model struct {
	ID            string `json:"id"`
	Provider      string `json:"provider"`
	DisplayName   string `json:"displayName"`
	ContextLength int64  `json:"contextLength,omitempty"`
	SupportsTools bool   `json:"supportsTools"`
}

// ModelListResult is the result of model/list.
type ModelListResult struct {
	Models []Model `json:"models"`
}

// EmptyParams are the params of methods that take none.
type EmptyParams struct{}

// SchemaExportResult is the result of schema/export: the JSON Schema
// bundle and the TypeScript definitions, as the schema commands write
// them.
type SchemaExportResult struct {
	JSONSchema map[string]json.RawMessage `json:"jsonSchema"`
	TypeScript string                     `json:"typescript"`
}
