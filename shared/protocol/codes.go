package protocol

// ErrorCode is a stable code carried by an "error" event.
type ErrorCode string

// Stable request and server error codes.
const (
	ErrInvalidJSON      ErrorCode = "invalid_json"
	ErrNotInitialized   ErrorCode = "not_initialized"
	ErrVersionMismatch  ErrorCode = "version_mismatch"
	ErrInvalidRequest   ErrorCode = "invalid_request"
	ErrSessionNotFound  ErrorCode = "session_not_found"
	ErrTurnActive       ErrorCode = "turn_active"
	ErrTurnNotFound     ErrorCode = "turn_not_found"
	ErrApprovalNotFound ErrorCode = "approval_not_found"
	ErrQueueNotFound    ErrorCode = "queue_not_found"
	ErrQueueConflict    ErrorCode = "queue_conflict"
	// ErrQueueFull refuses a prompt that would take a session's queue past
	// MaxQueueEntries or MaxQueueBytes (new in this server version; only
	// v2 and v3 connections queue).
	ErrQueueFull ErrorCode = "queue_full"
	ErrInternal  ErrorCode = "internal_error"
)

// FailureCode is a stable code carried by a "turn.failed" event.
type FailureCode string

// Stable turn.failed codes.
const (
	FailProviderError FailureCode = "provider_error"
	FailContextLimit  FailureCode = "context_limit"
	FailStepLimit     FailureCode = "step_limit"
	FailHistoryLimit  FailureCode = "history_limit"
	FailResponseLimit FailureCode = "response_limit"
	FailToolLimit     FailureCode = "tool_limit"
	FailInternal      FailureCode = "internal_error"
)

// Risk is the declared risk of a tool call, shown in approval requests.
type Risk string

// Stable risk values.
const (
	RiskReadOnly   Risk = "read_only"
	RiskFilesystem Risk = "filesystem"
	RiskProcess    Risk = "process"
	RiskDelegate   Risk = "delegate"
	RiskNetwork    Risk = "network"
)

// ErrorCodes lists every stable error code, for documentation and tests.
var ErrorCodes = []ErrorCode{
	ErrInvalidJSON, ErrNotInitialized, ErrVersionMismatch, ErrInvalidRequest,
	ErrSessionNotFound, ErrTurnActive, ErrTurnNotFound, ErrApprovalNotFound,
	ErrQueueNotFound, ErrQueueConflict, ErrQueueFull, ErrInternal,
}

// FailureCodes lists every stable turn.failed code.
var FailureCodes = []FailureCode{
	FailProviderError, FailContextLimit, FailStepLimit, FailHistoryLimit,
	FailResponseLimit, FailToolLimit, FailInternal,
}

// Risks lists every stable risk value.
var Risks = []Risk{RiskReadOnly, RiskFilesystem, RiskProcess, RiskDelegate, RiskNetwork}
