package protocol

// ClientMessage is a message a client sends to the server. The set is
// closed: only the types in this package implement it.
type ClientMessage interface {
	// Kind is the message's "type" on the wire.
	Kind() string
	// Request returns the message's request_id.
	Request() string
	isClientMessage()
}

// ClientInfo names the client in initialize.
type ClientInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// Initialize opens the connection and declares the client's protocol version.
type Initialize struct {
	RequestID       string     `json:"request_id"`
	ProtocolVersion int        `json:"protocol_version"`
	Client          ClientInfo `json:"client,omitempty"`
}

// Channel names the chat conversation a session serves (protocol v3). It
// enables chat_attach in a tool-enabled session.
type Channel struct {
	Platform     string `json:"platform"`
	Account      string `json:"account,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	// Log says the conversation keeps a chat log (protocol v4): an account
	// owner's direct chat, whose log the server finds in the chat archive
	// (channels.archive) under platform, account and conversation, each
	// then a required plain name. It adds chat_history and chat_keep; a
	// client never names a directory.
	Log bool `json:"log,omitempty"`
}

// SessionStart starts a session in an absolute workspace directory. The
// fields after Cwd are protocol v3 options.
type SessionStart struct {
	RequestID       string   `json:"request_id"`
	Cwd             string   `json:"cwd"`
	Model           string   `json:"model,omitempty"`
	DelegationDepth *int     `json:"delegation_depth,omitempty"`
	AutoApprove     bool     `json:"auto_approve,omitempty"`
	Channel         *Channel `json:"channel,omitempty"`
	Tools           *bool    `json:"tools,omitempty"`
	// Resume names a stored session of this workspace to continue (v3):
	// its history and usage totals are restored and its transcript is
	// replayed with session.replay events.
	Resume string `json:"resume,omitempty"`
	// ApprovalPolicy is the session's approval policy (v4): "on-risk",
	// "never" or "auto", overriding tools.approval_policy for this session
	// only; empty keeps the server's. A daemon serves many clients, so a
	// client's own policy is per session.
	ApprovalPolicy string `json:"approval_policy,omitempty"`
}

// TurnStart starts a turn, or queues it (v2 and later) while another runs.
type TurnStart struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	Prompt    string `json:"prompt"`
}

// TurnCancel cancels the running turn.
type TurnCancel struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
}

// ApprovalResolve answers an approval.requested event.
type ApprovalResolve struct {
	RequestID  string `json:"request_id"`
	SessionID  string `json:"session_id"`
	ApprovalID string `json:"approval_id"`
	Approved   bool   `json:"approved"`
	// Scope is "once" (the default, and the only scope before v3) or
	// "session": approve this call and, for the rest of the session, every
	// call the request's rule covers; from v4 also "session_wider", the
	// same with the request's wider_rule.
	Scope string `json:"scope,omitempty"`
	// Feedback goes with a denial (v4): the user's reason, which the model
	// reads in the denied call's result (at most 4 KiB are kept).
	Feedback string `json:"feedback,omitempty"`
}

// Approval scopes.
const (
	ScopeOnce    = "once"
	ScopeSession = "session"
	// ScopeSessionWider grants the request's wider_rule instead (v4).
	ScopeSessionWider = "session_wider"
)

// SessionClear drops an idle session's history, usage and queue.
type SessionClear struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
}

// SessionPause stops or resumes automatic dequeue (v2 and later).
type SessionPause struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	Paused    bool   `json:"paused"`
}

// SessionCompact asks for context compaction now (v3).
type SessionCompact struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
}

// SessionList lists the stored sessions of a workspace, newest first (v3).
type SessionList struct {
	RequestID string `json:"request_id"`
	Cwd       string `json:"cwd"`
	// Limit bounds the answer (default 20, at most 200).
	Limit int `json:"limit,omitempty"`
}

// SessionRules lists the approval rules a session granted (v3).
type SessionRules struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
}

// QueueUpdate replaces a queued prompt (v2 and later).
type QueueUpdate struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	QueueID   string `json:"queue_id"`
	Revision  int64  `json:"revision"`
	Prompt    string `json:"prompt"`
}

// QueueMove moves a queued prompt before another, or to the end when
// BeforeQueueID is empty (v2 and later).
type QueueMove struct {
	RequestID     string `json:"request_id"`
	SessionID     string `json:"session_id"`
	QueueID       string `json:"queue_id"`
	Revision      int64  `json:"revision"`
	BeforeQueueID string `json:"before_queue_id,omitempty"`
}

// QueueRemove removes a queued prompt (v2 and later).
type QueueRemove struct {
	RequestID string `json:"request_id"`
	SessionID string `json:"session_id"`
	QueueID   string `json:"queue_id"`
	Revision  int64  `json:"revision"`
}

func (*Initialize) Kind() string      { return TypeInitialize }
func (*SessionStart) Kind() string    { return TypeSessionStart }
func (*TurnStart) Kind() string       { return TypeTurnStart }
func (*TurnCancel) Kind() string      { return TypeTurnCancel }
func (*ApprovalResolve) Kind() string { return TypeApprovalResolve }
func (*SessionClear) Kind() string    { return TypeSessionClear }
func (*SessionPause) Kind() string    { return TypeSessionPause }
func (*SessionCompact) Kind() string  { return TypeSessionCompact }
func (*QueueUpdate) Kind() string     { return TypeQueueUpdate }
func (*QueueMove) Kind() string       { return TypeQueueMove }
func (*QueueRemove) Kind() string     { return TypeQueueRemove }
func (*SessionRules) Kind() string    { return TypeSessionRules }
func (*SessionList) Kind() string     { return TypeSessionList }

func (m *Initialize) Request() string      { return m.RequestID }
func (m *SessionStart) Request() string    { return m.RequestID }
func (m *TurnStart) Request() string       { return m.RequestID }
func (m *TurnCancel) Request() string      { return m.RequestID }
func (m *ApprovalResolve) Request() string { return m.RequestID }
func (m *SessionClear) Request() string    { return m.RequestID }
func (m *SessionPause) Request() string    { return m.RequestID }
func (m *SessionCompact) Request() string  { return m.RequestID }
func (m *QueueUpdate) Request() string     { return m.RequestID }
func (m *QueueMove) Request() string       { return m.RequestID }
func (m *QueueRemove) Request() string     { return m.RequestID }
func (m *SessionRules) Request() string    { return m.RequestID }
func (m *SessionList) Request() string     { return m.RequestID }

func (*Initialize) isClientMessage()      {}
func (*SessionStart) isClientMessage()    {}
func (*TurnStart) isClientMessage()       {}
func (*TurnCancel) isClientMessage()      {}
func (*ApprovalResolve) isClientMessage() {}
func (*SessionClear) isClientMessage()    {}
func (*SessionPause) isClientMessage()    {}
func (*SessionCompact) isClientMessage()  {}
func (*QueueUpdate) isClientMessage()     {}
func (*QueueMove) isClientMessage()       {}
func (*QueueRemove) isClientMessage()     {}
func (*SessionRules) isClientMessage()    {}
func (*SessionList) isClientMessage()     {}

// clientMessageVersions maps each client message type to the first protocol
// version that has it, and to a constructor for decoding.
var clientMessages = map[string]struct {
	since int
	new   func() ClientMessage
}{
	TypeInitialize:      {Version1, func() ClientMessage { return new(Initialize) }},
	TypeSessionStart:    {Version1, func() ClientMessage { return new(SessionStart) }},
	TypeTurnStart:       {Version1, func() ClientMessage { return new(TurnStart) }},
	TypeTurnCancel:      {Version1, func() ClientMessage { return new(TurnCancel) }},
	TypeApprovalResolve: {Version1, func() ClientMessage { return new(ApprovalResolve) }},
	TypeSessionClear:    {Version1, func() ClientMessage { return new(SessionClear) }},
	TypeQueueUpdate:     {Version2, func() ClientMessage { return new(QueueUpdate) }},
	TypeQueueMove:       {Version2, func() ClientMessage { return new(QueueMove) }},
	TypeQueueRemove:     {Version2, func() ClientMessage { return new(QueueRemove) }},
	TypeSessionPause:    {Version2, func() ClientMessage { return new(SessionPause) }},
	TypeSessionCompact:  {Version3, func() ClientMessage { return new(SessionCompact) }},
	TypeSessionList:     {Version3, func() ClientMessage { return new(SessionList) }},
	TypeSessionRules:    {Version3, func() ClientMessage { return new(SessionRules) }},
	TypeSessionAttach:   {Version4, func() ClientMessage { return new(SessionAttach) }},
	TypeSessionDetach:   {Version4, func() ClientMessage { return new(SessionDetach) }},
	TypeDaemonStatus:    {Version4, func() ClientMessage { return new(DaemonStatus) }},
	TypeRuleRevoke:      {Version4, func() ClientMessage { return new(RuleRevoke) }},
	TypeSessionModels:   {Version4, func() ClientMessage { return new(SessionModels) }},
	TypeSetModel:        {Version4, func() ClientMessage { return new(SetModel) }},
}

// ClientMessageSince reports the first protocol version that has the client
// message type t, and false for a type no version has.
func ClientMessageSince(t string) (int, bool) {
	m, ok := clientMessages[t]
	return m.since, ok
}

// NewClientMessage returns a zero value of the client message type t, or nil.
func NewClientMessage(t string) ClientMessage {
	m, ok := clientMessages[t]
	if !ok {
		return nil
	}
	return m.new()
}
