package protocol

// Client message types.
const (
	TypeInitialize      = "initialize"
	TypeSessionStart    = "session.start"
	TypeTurnStart       = "turn.start"
	TypeTurnCancel      = "turn.cancel"
	TypeApprovalResolve = "approval.resolve"
	TypeSessionClear    = "session.clear"
	TypeSessionPause    = "session.pause"
	TypeSessionCompact  = "session.compact"
	TypeSessionList     = "session.list"
	TypeSessionRules    = "session.rules"
	TypeQueueUpdate     = "queue.update"
	TypeQueueMove       = "queue.move"
	TypeQueueRemove     = "queue.remove"
)

// Server event types.
const (
	TypeInitialized        = "initialized"
	TypeSessionStarted     = "session.started"
	TypeTurnStarted        = "turn.started"
	TypeAssistantDelta     = "assistant.delta"
	TypeAssistantCompleted = "assistant.completed"
	TypeToolProposed       = "tool.proposed"
	TypeApprovalRequested  = "approval.requested"
	TypeToolStarted        = "tool.started"
	TypeToolProgress       = "tool.progress"
	TypeToolCompleted      = "tool.completed"
	TypeContextCompacted   = "context.compacted"
	TypeTurnCompleted      = "turn.completed"
	TypeTurnCancelled      = "turn.cancelled"
	TypeTurnFailed         = "turn.failed"
	TypeSessionTrimmed     = "session.trimmed"
	TypeSessionCleared     = "session.cleared"
	TypeSessionPaused      = "session.paused"
	TypeSessionReplay      = "session.replay"
	TypeSessionListed      = "session.listed"
	TypeRulesListed        = "session.rules_listed"
	TypeQueueSnapshot      = "queue.snapshot"
	TypeQueueEnqueued      = "queue.enqueued"
	TypeQueueUpdated       = "queue.updated"
	TypeQueueMoved         = "queue.moved"
	TypeQueueRemoved       = "queue.removed"
	TypeQueueDequeued      = "queue.dequeued"
	TypeError              = "error"
)

// Protocol versions this package speaks. The server implements Latest and
// serves clients that declare any version from Oldest to Latest with that
// version's semantics.
const (
	Version1 = 1
	Version2 = 2
	Version3 = 3
	Oldest   = Version1
	Latest   = Version4
)

// Limits of the protocol. Frame limits count encoded JSON bytes without the
// newline; the prompt limit counts UTF-8 bytes.
const (
	MaxClientFrameBytes = 1 << 20 // 1 MiB
	MaxServerFrameBytes = 8 << 20 // 8 MiB
	MaxPromptBytes      = 256 << 10

	// MaxQueueEntries and MaxQueueBytes bound a session's prompt queue:
	// its entries, and the UTF-8 bytes of their prompts together. Past
	// them a prompt is refused with queue_full. The byte bound keeps a
	// queue.snapshot of a full queue within a server frame even when every
	// byte needs a six-byte JSON escape.
	MaxQueueEntries = 64
	MaxQueueBytes   = 1 << 20 // 1 MiB

	DefaultMaxTranscriptBytes    = 8 << 20
	DefaultMaxTranscriptItems    = 10000
	DefaultMaxPromptHistoryBytes = 1 << 20
	DefaultMaxPromptHistoryItems = 200
)
