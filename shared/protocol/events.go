package protocol

import "encoding/json"

// Event is an event the server sends to a client. The set is closed.
type Event interface {
	// Kind is the event's "type" on the wire.
	Kind() string
	isEvent()
}

// Sequenced is an event that carries its session's sequence number. The
// session assigns the number when it emits the event.
type Sequenced interface {
	Event
	SetSeq(seq uint64)
	SeqNum() uint64
	Session() string
}

// ServerInfo names the server in initialized.
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// SessionHeader is the envelope of a session event that belongs to no turn.
type SessionHeader struct {
	RequestID string `json:"request_id,omitempty"`
	SessionID string `json:"session_id"`
	Seq       uint64 `json:"seq"`
}

// TurnHeader is the envelope of every event of a turn. RequestID is the
// turn.start that began the turn; a server-started turn has none.
type TurnHeader struct {
	RequestID string `json:"request_id,omitempty"`
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	Seq       uint64 `json:"seq"`
}

// SetSeq sets the sequence number.
func (h *SessionHeader) SetSeq(seq uint64) { h.Seq = seq }

// SeqNum returns the sequence number.
func (h *SessionHeader) SeqNum() uint64 { return h.Seq }

// Session returns the session id.
func (h *SessionHeader) Session() string { return h.SessionID }

// SetSeq sets the sequence number.
func (h *TurnHeader) SetSeq(seq uint64) { h.Seq = seq }

// SeqNum returns the sequence number.
func (h *TurnHeader) SeqNum() uint64 { return h.Seq }

// Session returns the session id.
func (h *TurnHeader) Session() string { return h.SessionID }

// Initialized answers initialize. ProtocolVersion echoes the client's.
type Initialized struct {
	RequestID       string     `json:"request_id"`
	ProtocolVersion int        `json:"protocol_version"`
	Server          ServerInfo `json:"server"`
}

// SessionStarted answers session.start with the session's limits.
type SessionStarted struct {
	RequestID             string `json:"request_id"`
	SessionID             string `json:"session_id"`
	Cwd                   string `json:"cwd"`
	Model                 string `json:"model"`
	ContextMaxTokens      int64  `json:"context_max_tokens"`
	MaxServerFrameBytes   int64  `json:"max_server_frame_bytes"`
	MaxTranscriptBytes    int64  `json:"max_transcript_bytes"`
	MaxTranscriptItems    int64  `json:"max_transcript_items"`
	MaxPromptHistoryBytes int64  `json:"max_prompt_history_bytes"`
	MaxPromptHistoryItems int64  `json:"max_prompt_history_items"`
	// Resumed is true when the session continues a stored one (v3); its
	// transcript follows in session.replay events.
	Resumed bool `json:"resumed,omitempty"`
	// Usage is the session's usage total so far (v3, resumed sessions).
	Usage *Usage `json:"usage,omitempty"`
	// MCPServers are the configured MCP servers as the session starts,
	// by name (v4 only; absent when none is configured).
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
	// Warnings are what a person should know of the configuration the
	// session runs with, one sentence each (v4 only; absent when none).
	Warnings []string `json:"warnings,omitempty"`
	// Provider names the configured provider of Model, and Price is the
	// model's configured price (v4 only; Price absent when none is).
	Provider string `json:"provider,omitempty"`
	Price    *Price `json:"price,omitempty"`
}

// OriginBackground is the origin kind of a turn that reports finished
// background jobs.
const OriginBackground = "background"

// Origin says why the server started a turn by itself (v3).
type Origin struct {
	Kind string   `json:"kind"`
	Jobs []string `json:"jobs,omitempty"`
}

// TurnStarted opens a turn.
type TurnStarted struct {
	TurnHeader
	Origin *Origin `json:"origin,omitempty"`
}

// AssistantDelta is append-only streamed assistant text.
type AssistantDelta struct {
	TurnHeader
	Content string `json:"content"`
}

// AssistantCompleted is the canonical complete assistant message of one
// model response; Content is empty when the response only requests tools.
type AssistantCompleted struct {
	TurnHeader
	Content string `json:"content"`
	// Usage is the provider's report of this one model request (nil when
	// it gave none). It is for dialects that report usage per request
	// (the App Server's token-usage cycles) and never on the NDJSON wire.
	Usage *Usage `json:"-"`
}

// ToolProposed announces a tool call the model asked for.
type ToolProposed struct {
	TurnHeader
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ApprovalRequested asks the client to approve a tool call.
type ApprovalRequested struct {
	TurnHeader
	ApprovalID string `json:"approval_id"`
	CallID     string `json:"call_id"`
	Name       string `json:"name"`
	Risk       Risk   `json:"risk"`
	Cwd        string `json:"cwd"`
	Summary    string `json:"summary"`
	// Rule is what approving with scope "session" would allow from then
	// on (v3); absent when the call can only be approved once.
	Rule *Rule `json:"rule,omitempty"`
	// WiderRule is a broader rule approving with scope "session_wider"
	// would allow instead (v4), such as every tool of one MCP server;
	// absent when there is none.
	WiderRule *Rule `json:"wider_rule,omitempty"`
	// Diff is the change a write or edit call would make, as a unified
	// diff bounded to about 200 lines (v4); absent for other calls.
	Diff string `json:"diff,omitempty"`
}

// Rule is an approval rule: the calls a session approval covers.
type Rule struct {
	// Tool is the tool the rule is for.
	Tool string `json:"tool"`
	// Key identifies the rule, such as "bash:go test"; a call is covered
	// when one of its keys equals a rule's.
	Key string `json:"key"`
	// Description says in words what the rule allows.
	Description string `json:"description"`
}

// ToolStarted says a tool call began executing.
type ToolStarted struct {
	TurnHeader
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	// Rule is the session rule that let the call run without asking (v3).
	Rule *Rule `json:"rule,omitempty"`
	// Risk is the risk the tool declared for this call. It is for dialects
	// that show it (the App Server's toolMetadata) and never on the NDJSON
	// wire.
	Risk Risk `json:"-"`
}

// ToolProgress is one progress line of a running call (v3). It is never
// part of the model's history.
type ToolProgress struct {
	TurnHeader
	CallID string `json:"call_id"`
	Name   string `json:"name"`
	Line   string `json:"line"`
}

// ToolCompleted ends a tool call.
type ToolCompleted struct {
	TurnHeader
	CallID    string   `json:"call_id"`
	Name      string   `json:"name"`
	Success   bool     `json:"success"`
	Output    string   `json:"output"`
	Truncated bool     `json:"truncated"`
	Jobs      []string `json:"jobs,omitempty"`
	// SettledJobs are background jobs whose final result this call gave
	// the model (agent_wait or agent_status of a finished job,
	// agent_cancel): the server will not report them in a turn of its
	// own (v3).
	SettledJobs []string `json:"settled_jobs,omitempty"`
	// ErrorCode classifies a failed call (ToolError*; empty on success).
	// It is for dialects that report it (the App Server's errorCode) and
	// never on the NDJSON wire.
	ErrorCode string `json:"-"`
}

// Error codes of failed tool calls (ToolCompleted.ErrorCode).
const (
	// ToolErrorNotAllowed: the approval policy denies the call without
	// asking, or the session has no such tool; it never started.
	ToolErrorNotAllowed = "tool_not_allowed"
	// ToolErrorApprovalDenied: the user (or the approval timeout) denied
	// the call; it never started.
	ToolErrorApprovalDenied = "approval_denied"
	// ToolErrorInvalidArguments: the arguments failed validation; the
	// call never started.
	ToolErrorInvalidArguments = "invalid_arguments"
	// ToolErrorFailed: the call ran and failed.
	ToolErrorFailed = "tool_failed"
	// ToolErrorCancelled: the turn ended while the call ran.
	ToolErrorCancelled = "cancelled"
)

// ContextCompacted reports a compaction of the session's history.
type ContextCompacted struct {
	TurnHeader
	BeforeTokens    int64 `json:"before_tokens"`
	AfterTokens     int64 `json:"after_tokens"`
	RemovedMessages int64 `json:"removed_messages"`
}

// Usage is a turn's token usage over all its provider requests.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CachedInputTokens is the part of InputTokens the provider read from
	// its prompt cache (OpenAI's prompt_tokens_details.cached_tokens),
	// which providers bill at a lower price. It is absent when no request
	// of the turn reported it, and 0 when they reported none cached.
	CachedInputTokens *int64 `json:"cached_input_tokens,omitempty"`
}

// Add counts o into u: the sum of two turns, or of a turn's requests. The
// cached count is present in the sum when it is in either.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	if o.CachedInputTokens != nil {
		n := *o.CachedInputTokens
		if u.CachedInputTokens != nil {
			n += *u.CachedInputTokens
		}
		u.CachedInputTokens = &n
	}
}

// TurnCompleted ends a turn that finished.
type TurnCompleted struct {
	TurnHeader
	Steps  int     `json:"steps"`
	Usage  *Usage  `json:"usage,omitempty"`
	Origin *Origin `json:"origin,omitempty"`
	// FinishReason is the provider's finish reason of the turn's last
	// model reply ("stop", "length", "content_filter", …; empty when it
	// gave none). It is for dialects that report why a turn stopped
	// (ACP's stopReason) and is never on the NDJSON wire, so clients of
	// versions 1 to 3 see the same bytes as before.
	FinishReason string `json:"-"`
}

// TurnCancelled ends a cancelled turn.
type TurnCancelled struct {
	TurnHeader
	Origin *Origin `json:"origin,omitempty"`
}

// TurnFailed ends a turn that failed.
type TurnFailed struct {
	TurnHeader
	Code    FailureCode `json:"code"`
	Message string      `json:"message"`
	Origin  *Origin     `json:"origin,omitempty"`
}

// SessionTrimmed reports that old history was dropped to stay within bounds.
type SessionTrimmed struct {
	SessionHeader
	RemovedMessages int64 `json:"removed_messages"`
	HistoryBytes    int64 `json:"history_bytes"`
}

// SessionCleared answers session.clear.
type SessionCleared struct {
	SessionHeader
}

// SessionPaused answers session.pause.
type SessionPaused struct {
	SessionHeader
	Paused bool `json:"paused"`
}

// ReplayItem is one entry of a resumed session's transcript.
type ReplayItem struct {
	// Kind is "user" (a prompt), "assistant" (a model message), "tool" (a
	// tool call with its result) or "notice" (a compaction, a clear, an
	// interrupted turn).
	Kind   string `json:"kind"`
	TurnID string `json:"turn_id,omitempty"`
	Text   string `json:"text,omitempty"`
	// The fields below are set for a tool item.
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Success   *bool           `json:"success,omitempty"`
	// Interrupted marks an item of a turn the server stopped without
	// finishing (a crash or kill), such as a call that has no result.
	Interrupted bool `json:"interrupted,omitempty"`
}

// SessionReplay carries part of a resumed session's transcript, oldest
// first, right after session.started (v3). Done is true on the last one.
type SessionReplay struct {
	RequestID string       `json:"request_id"`
	SessionID string       `json:"session_id"`
	Items     []ReplayItem `json:"items"`
	Done      bool         `json:"done"`
}

// SessionSummary describes a stored session.
type SessionSummary struct {
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd"`
	// Title is the session's first prompt, shortened.
	Title     string `json:"title"`
	CreatedAt string `json:"created_at"` // RFC 3339
	UpdatedAt string `json:"updated_at"` // RFC 3339
	Turns     int    `json:"turns"`
	Bytes     int64  `json:"bytes"`
}

// SessionListed answers session.list, newest first.
type SessionListed struct {
	RequestID string           `json:"request_id"`
	Sessions  []SessionSummary `json:"sessions"`
	// Live are the sessions the server holds open in the workspace (all
	// of them when session.list has no cwd), with their clients (v4).
	Live []LiveSession `json:"live,omitempty"`
}

// RulesListed answers session.rules.
type RulesListed struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	Rules     []Rule `json:"rules"`
}

// QueueEntry is one queued prompt.
type QueueEntry struct {
	QueueID   string `json:"queue_id"`
	Revision  int64  `json:"revision"`
	Prompt    string `json:"prompt"`
	Submitter string `json:"submitter"`
	Position  int    `json:"position"`
}

// QueueSnapshot lists the queue in order, on session start.
type QueueSnapshot struct {
	SessionHeader
	Entries []QueueEntry `json:"entries"`
}

// QueueEnqueued reports a prompt added to the queue.
type QueueEnqueued struct {
	SessionHeader
	Entry QueueEntry `json:"entry"`
}

// QueueUpdated reports a queued prompt replaced.
type QueueUpdated struct {
	SessionHeader
	Entry QueueEntry `json:"entry"`
}

// QueueMoved reports a queued prompt moved.
type QueueMoved struct {
	SessionHeader
	Entry QueueEntry `json:"entry"`
}

// QueueRemoved reports a queued prompt removed.
type QueueRemoved struct {
	SessionHeader
	Entry QueueEntry `json:"entry"`
}

// QueueDequeued reports a queued prompt taken off the queue to run.
type QueueDequeued struct {
	SessionHeader
	Entry QueueEntry `json:"entry"`
}

// Error reports a request the server refused, or a server failure. Only
// version_mismatch is fatal.
type Error struct {
	RequestID string      `json:"request_id,omitempty"`
	Code      ErrorCode   `json:"code"`
	Message   string      `json:"message"`
	Fatal     bool        `json:"fatal"`
	Entry     *QueueEntry `json:"entry,omitempty"`
}

func (*Initialized) Kind() string        { return TypeInitialized }
func (*SessionStarted) Kind() string     { return TypeSessionStarted }
func (*TurnStarted) Kind() string        { return TypeTurnStarted }
func (*AssistantDelta) Kind() string     { return TypeAssistantDelta }
func (*AssistantCompleted) Kind() string { return TypeAssistantCompleted }
func (*ToolProposed) Kind() string       { return TypeToolProposed }
func (*ApprovalRequested) Kind() string  { return TypeApprovalRequested }
func (*ToolStarted) Kind() string        { return TypeToolStarted }
func (*ToolProgress) Kind() string       { return TypeToolProgress }
func (*ToolCompleted) Kind() string      { return TypeToolCompleted }
func (*ContextCompacted) Kind() string   { return TypeContextCompacted }
func (*TurnCompleted) Kind() string      { return TypeTurnCompleted }
func (*TurnCancelled) Kind() string      { return TypeTurnCancelled }
func (*TurnFailed) Kind() string         { return TypeTurnFailed }
func (*SessionTrimmed) Kind() string     { return TypeSessionTrimmed }
func (*SessionCleared) Kind() string     { return TypeSessionCleared }
func (*SessionPaused) Kind() string      { return TypeSessionPaused }
func (*QueueSnapshot) Kind() string      { return TypeQueueSnapshot }
func (*QueueEnqueued) Kind() string      { return TypeQueueEnqueued }
func (*QueueUpdated) Kind() string       { return TypeQueueUpdated }
func (*QueueMoved) Kind() string         { return TypeQueueMoved }
func (*QueueRemoved) Kind() string       { return TypeQueueRemoved }
func (*QueueDequeued) Kind() string      { return TypeQueueDequeued }
func (*Error) Kind() string              { return TypeError }
func (*RulesListed) Kind() string        { return TypeRulesListed }
func (*SessionListed) Kind() string      { return TypeSessionListed }
func (*SessionReplay) Kind() string      { return TypeSessionReplay }

func (*Initialized) isEvent()        {}
func (*SessionStarted) isEvent()     {}
func (*TurnStarted) isEvent()        {}
func (*AssistantDelta) isEvent()     {}
func (*AssistantCompleted) isEvent() {}
func (*ToolProposed) isEvent()       {}
func (*ApprovalRequested) isEvent()  {}
func (*ToolStarted) isEvent()        {}
func (*ToolProgress) isEvent()       {}
func (*ToolCompleted) isEvent()      {}
func (*ContextCompacted) isEvent()   {}
func (*TurnCompleted) isEvent()      {}
func (*TurnCancelled) isEvent()      {}
func (*TurnFailed) isEvent()         {}
func (*SessionTrimmed) isEvent()     {}
func (*SessionCleared) isEvent()     {}
func (*SessionPaused) isEvent()      {}
func (*QueueSnapshot) isEvent()      {}
func (*QueueEnqueued) isEvent()      {}
func (*QueueUpdated) isEvent()       {}
func (*QueueMoved) isEvent()         {}
func (*QueueRemoved) isEvent()       {}
func (*QueueDequeued) isEvent()      {}
func (*Error) isEvent()              {}
func (*RulesListed) isEvent()        {}
func (*SessionListed) isEvent()      {}
func (*SessionReplay) isEvent()      {}

// IsTerminal reports whether e ends a turn.
func IsTerminal(e Event) bool {
	switch e.(type) {
	case *TurnCompleted, *TurnCancelled, *TurnFailed:
		return true
	}
	return false
}

var events = map[string]func() Event{
	TypeInitialized:        func() Event { return new(Initialized) },
	TypeSessionStarted:     func() Event { return new(SessionStarted) },
	TypeTurnStarted:        func() Event { return new(TurnStarted) },
	TypeAssistantDelta:     func() Event { return new(AssistantDelta) },
	TypeAssistantCompleted: func() Event { return new(AssistantCompleted) },
	TypeToolProposed:       func() Event { return new(ToolProposed) },
	TypeApprovalRequested:  func() Event { return new(ApprovalRequested) },
	TypeToolStarted:        func() Event { return new(ToolStarted) },
	TypeToolProgress:       func() Event { return new(ToolProgress) },
	TypeToolCompleted:      func() Event { return new(ToolCompleted) },
	TypeContextCompacted:   func() Event { return new(ContextCompacted) },
	TypeTurnCompleted:      func() Event { return new(TurnCompleted) },
	TypeTurnCancelled:      func() Event { return new(TurnCancelled) },
	TypeTurnFailed:         func() Event { return new(TurnFailed) },
	TypeSessionTrimmed:     func() Event { return new(SessionTrimmed) },
	TypeSessionCleared:     func() Event { return new(SessionCleared) },
	TypeSessionPaused:      func() Event { return new(SessionPaused) },
	TypeQueueSnapshot:      func() Event { return new(QueueSnapshot) },
	TypeQueueEnqueued:      func() Event { return new(QueueEnqueued) },
	TypeQueueUpdated:       func() Event { return new(QueueUpdated) },
	TypeQueueMoved:         func() Event { return new(QueueMoved) },
	TypeQueueRemoved:       func() Event { return new(QueueRemoved) },
	TypeQueueDequeued:      func() Event { return new(QueueDequeued) },
	TypeError:              func() Event { return new(Error) },
	TypeSessionReplay:      func() Event { return new(SessionReplay) },
	TypeSessionListed:      func() Event { return new(SessionListed) },
	TypeRulesListed:        func() Event { return new(RulesListed) },
	TypeSessionAttached:    func() Event { return new(SessionAttached) },
	TypeSessionDetached:    func() Event { return new(SessionDetached) },
	TypeApprovalResolved:   func() Event { return new(ApprovalResolved) },
	TypeDaemonStatusIs:     func() Event { return new(DaemonStatusReported) },
	TypeTurnRetrying:       func() Event { return new(TurnRetrying) },
	TypeSessionModel:       func() Event { return new(SessionModel) },
}

// NewEvent returns a zero value of the event type t, or nil.
func NewEvent(t string) Event {
	if f, ok := events[t]; ok {
		return f()
	}
	return nil
}

// EventTypes returns every server event type.
func EventTypes() []string {
	out := make([]string, 0, len(events))
	for t := range events {
		out = append(out, t)
	}
	return out
}

// ClientMessageTypes returns every client message type.
func ClientMessageTypes() []string {
	out := make([]string, 0, len(clientMessages))
	for t := range clientMessages {
		out = append(out, t)
	}
	return out
}

// Turn returns the header, so code that fills headers can treat every turn
// event alike.
func (h *TurnHeader) Turn() *TurnHeader { return h }

// TurnEvent is an event of a turn.
type TurnEvent interface {
	Sequenced
	Turn() *TurnHeader
}
