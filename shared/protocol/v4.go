package protocol

// Protocol version 4: several clients on one session, for the daemon
// (docs/daemon.md). Only connections that declare version 4 may send these
// messages; only sessions started by a version-4 client emit
// approval.resolved, so a session of an older client sends exactly the
// events it always did.

// Client message types of version 4.
const (
	TypeSessionAttach = "session.attach"
	TypeSessionDetach = "session.detach"
	TypeDaemonStatus  = "daemon.status"
	TypeRuleRevoke    = "rule.revoke"
	TypeSessionModels = "session.models"
	TypeSetModel      = "session.set_model"
)

// Server event types of version 4.
const (
	TypeSessionAttached  = "session.attached"
	TypeSessionDetached  = "session.detached"
	TypeApprovalResolved = "approval.resolved"
	TypeDaemonStatusIs   = "daemon.status_reported"
	TypeTurnRetrying     = "turn.retrying"
	TypeSessionModel     = "session.model"
)

// Version4 adds session.attach, session.detach, daemon.status and
// approval.resolved.
const Version4 = 4

// SessionAttach subscribes the connection to a live session (v4). With
// AfterSeq the events after that seq are replayed from the session's ring
// of recent events before the live ones; without it nothing is replayed.
type SessionAttach struct {
	RequestID string  `json:"request_id"`
	SessionID string  `json:"session_id"`
	AfterSeq  *uint64 `json:"after_seq,omitempty"`
}

// SessionDetach unsubscribes the connection from a session (v4); the
// session and its turns go on.
type SessionDetach struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
}

// RuleRevoke removes an approval rule from a session (v4): one granted with
// scope "session", or one of the configuration's (tools.allow) for this
// session only. It is answered by session.rules_listed with the rules
// left.
type RuleRevoke struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	Key       string `json:"key"`
}

// SessionModels asks which model a session uses and which it may switch
// to (v4); it is answered by session.model.
type SessionModels struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
}

// SetModel switches a session's model (v4): every model request from now
// on uses it, the running turn's next one included. The model must be one
// session.models lists for that provider. It is answered by session.model.
// The switch is not stored: a resumed session starts on the configured
// model again.
type SetModel struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"`
	// Provider names the configured provider ([providers.NAME]) whose
	// model this is; empty keeps the session's provider. A provider whose
	// API key is not set is refused with a message naming the variable.
	Provider string `json:"provider,omitempty"`
}

// Price is what a model costs as configured (providers.NAME.models.MODEL
// input_price, output_price and cached_input_price), in US dollars per
// million tokens.
type Price struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
	// CachedInputPerMTok is the price of an input token read from the
	// provider's prompt cache; absent when none is configured, and then
	// such tokens cost InputPerMTok.
	CachedInputPerMTok *float64 `json:"cached_input_per_mtok,omitempty"`
}

// ModelInfo is one model a session may use.
type ModelInfo struct {
	ID string `json:"id"`
	// ContextMaxTokens is the model's context window as configured
	// (providers.NAME.models.MODEL.context_max_tokens, else
	// providers.NAME.context_max_tokens).
	ContextMaxTokens int64 `json:"context_max_tokens"`
	// Provider is the configured provider serving the model; absent from
	// servers that list only the session's own provider.
	Provider string `json:"provider,omitempty"`
	// Price is the model's configured price; absent when none is.
	Price *Price `json:"price,omitempty"`
	// Unavailable says why the model cannot be switched to now (its
	// provider's API key is not set); empty when it can.
	Unavailable string `json:"unavailable,omitempty"`
}

// SessionModel answers session.models and session.set_model: the model the
// session uses now, its provider, context window and price, and the models
// it may switch to (the session's provider first, its configured model
// first, then the models its endpoint lists; then every other configured
// provider's in the same way).
type SessionModel struct {
	RequestID        string      `json:"request_id"`
	SessionID        string      `json:"session_id"`
	Model            string      `json:"model"`
	ContextMaxTokens int64       `json:"context_max_tokens"`
	Models           []ModelInfo `json:"models"`
	Provider         string      `json:"provider,omitempty"`
	Price            *Price      `json:"price,omitempty"`
}

// DaemonStatus asks a daemon for its state (v4).
type DaemonStatus struct {
	RequestID string `json:"request_id"`
}

// SessionAttached answers session.attach with the session's state as of
// LastSeq. The replayed events (seq after AfterSeq up to LastSeq) follow
// it, then the live events from LastSeq+1.
type SessionAttached struct {
	RequestID           string `json:"request_id"`
	SessionID           string `json:"session_id"`
	Cwd                 string `json:"cwd"`
	Model               string `json:"model"`
	ContextMaxTokens    int64  `json:"context_max_tokens"`
	MaxServerFrameBytes int64  `json:"max_server_frame_bytes"`
	// LastSeq is the seq of the session's last event before this attach.
	LastSeq uint64 `json:"last_seq"`
	// TurnID is the running turn's id; empty when the session is idle.
	TurnID string `json:"turn_id,omitempty"`
	// Queue is the prompt queue in order, and Paused whether it waits.
	Queue  []QueueEntry `json:"queue"`
	Paused bool         `json:"paused"`
	// PendingApprovals are the approval requests nobody has answered yet.
	PendingApprovals []ApprovalRequested `json:"pending_approvals"`
	// Replayed is how many events follow from the ring; ReplayTruncated is
	// true when events after after_seq are gone from the ring (the client
	// missed some and should rebuild its view from this state).
	Replayed        int  `json:"replayed"`
	ReplayTruncated bool `json:"replay_truncated,omitempty"`
	// Clients is how many connections are attached, this one included.
	Clients int `json:"clients"`
	// Provider names the configured provider of Model, and Price is the
	// model's configured price (absent when none is).
	Provider string `json:"provider,omitempty"`
	Price    *Price `json:"price,omitempty"`
}

// SessionDetached answers session.detach.
type SessionDetached struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
}

// ApprovalResolved tells every client of a session that an approval was
// answered (v4 sessions), by any of them.
type ApprovalResolved struct {
	TurnHeader
	ApprovalID string `json:"approval_id"`
	Approved   bool   `json:"approved"`
	// Scope is "once" or "session".
	Scope string `json:"scope"`
	// By names the client that answered (its initialize client name).
	By string `json:"by,omitempty"`
}

// TurnRetrying says that a model request failed and will be sent again
// (v4 sessions): the provider's own status and message, which attempt
// comes next of how many, and after how long. It is not part of the
// model's history or the session log.
type TurnRetrying struct {
	TurnHeader
	// Attempt is the attempt about to be made (2 for the first retry) and
	// MaxAttempts how many there are in all.
	Attempt     int `json:"attempt"`
	MaxAttempts int `json:"max_attempts"`
	// DelayMS is how long the server waits before that attempt.
	DelayMS int64 `json:"delay_ms"`
	// Status is the HTTP status of the failed attempt; 0 when none came
	// (a connection error or a timeout).
	Status int `json:"status,omitempty"`
	// Message is the provider's own error message, redacted and bounded.
	Message string `json:"message"`
}

// LiveSession describes a session a daemon holds open.
type LiveSession struct {
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd"`
	Model     string `json:"model"`
	// Clients is how many connections are attached.
	Clients int `json:"clients"`
	// TurnID is the running turn's id, empty when idle.
	TurnID string `json:"turn_id,omitempty"`
	Queued int    `json:"queued"`
	Paused bool   `json:"paused"`
	// PendingApprovals counts the unanswered approval requests.
	PendingApprovals int `json:"pending_approvals"`
}

// DaemonStatusReported answers daemon.status.
type DaemonStatusReported struct {
	RequestID string `json:"request_id"`
	Pid       int    `json:"pid"`
	Version   string `json:"version"`
	StartedAt string `json:"started_at"` // RFC 3339
	Socket    string `json:"socket"`
	// Clients is how many connections the daemon serves, the asking one
	// included.
	Clients  int           `json:"clients"`
	Sessions []LiveSession `json:"sessions"`
	// OrphansStopped counts the orphaned runs reconcile stopped since the
	// daemon started.
	OrphansStopped int64 `json:"orphans_stopped"`
	// Draining is true while a planned restart waits for turns to end.
	Draining bool `json:"draining,omitempty"`
}

func (*SessionAttach) Kind() string { return TypeSessionAttach }
func (*SessionDetach) Kind() string { return TypeSessionDetach }
func (*DaemonStatus) Kind() string  { return TypeDaemonStatus }
func (*RuleRevoke) Kind() string    { return TypeRuleRevoke }
func (*SessionModels) Kind() string { return TypeSessionModels }
func (*SetModel) Kind() string      { return TypeSetModel }

func (m *SessionAttach) Request() string { return m.RequestID }
func (m *SessionDetach) Request() string { return m.RequestID }
func (m *DaemonStatus) Request() string  { return m.RequestID }
func (m *RuleRevoke) Request() string    { return m.RequestID }
func (m *SessionModels) Request() string { return m.RequestID }
func (m *SetModel) Request() string      { return m.RequestID }

func (*SessionAttach) isClientMessage() {}
func (*SessionDetach) isClientMessage() {}
func (*DaemonStatus) isClientMessage()  {}
func (*RuleRevoke) isClientMessage()    {}
func (*SessionModels) isClientMessage() {}
func (*SetModel) isClientMessage()      {}

func (*SessionAttached) Kind() string      { return TypeSessionAttached }
func (*SessionDetached) Kind() string      { return TypeSessionDetached }
func (*ApprovalResolved) Kind() string     { return TypeApprovalResolved }
func (*DaemonStatusReported) Kind() string { return TypeDaemonStatusIs }
func (*TurnRetrying) Kind() string         { return TypeTurnRetrying }
func (*SessionModel) Kind() string         { return TypeSessionModel }

func (*SessionAttached) isEvent()      {}
func (*SessionDetached) isEvent()      {}
func (*ApprovalResolved) isEvent()     {}
func (*DaemonStatusReported) isEvent() {}
func (*TurnRetrying) isEvent()         {}
func (*SessionModel) isEvent()         {}

// MCP server states (MCPServer.State).
const (
	MCPStarting   = "starting"
	MCPReady      = "ready"
	MCPRestarting = "restarting"
	MCPFailed     = "failed"
	MCPDisabled   = "disabled"
	MCPStopped    = "stopped"
)

// MCPServer is one configured MCP server's status, in session.started
// (v4): whether its tools are offered, which, and why not.
type MCPServer struct {
	Name string `json:"name"`
	// State is one of the MCP* states.
	State string `json:"state"`
	// Tools are the names the model sees (mcp__<server>__<tool>); empty
	// unless the server is ready.
	Tools []string `json:"tools"`
	// Error says why a failed or restarting server is not ready.
	Error string `json:"error,omitempty"`
}
