package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/loop"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/sessionstore"
	"github.com/scv-cli/scv/scv-server/internal/tokens"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
)

// Subscriber receives a session's events. Deliver must keep events in the
// order it is called and may block for backpressure until ctx ends. Room
// reports whether a frame of about size bytes would be taken now without
// waiting (a hint; see coalesce.go).
type Subscriber interface {
	Deliver(ctx context.Context, ev protocol.Sequenced) error
	Room(size int) bool
}

// ReasoningObserver is a Subscriber that also shows the model's reasoning
// as it streams (ACP's agent_thought_chunk). Reasoning is no protocol
// event: it takes no sequence number, is not stored, and subscribers that
// do not implement this interface (the NDJSON dialect) never see it.
// ObserveReasoning is called under the emit lock, in order with the
// turn's events, and may wait for room until ctx ends.
type ReasoningObserver interface {
	ObserveReasoning(ctx context.Context, turnID, text string) error
}

// Session is one conversation in one workspace.
type Session struct {
	id    string
	cwd   string
	model string // guarded by mu once the session has started
	// prov is the provider of model (guarded by mu once the session has
	// started): the manager's until a client switches provider.
	prov provider.Provider
	// startModel is the model the session started on (session.start's or
	// the provider's); it never changes.
	startModel string
	version    int
	depth      int
	channel    *protocol.Channel
	system     string // guarded by mu once the session has started
	mgr        *Manager
	root       *os.Root
	tools      *tools.Registry // guarded by mu once the session has started; nil: tool-free
	// hostedSearch offers the endpoint's hosted web search (guarded by mu
	// once the session has started).
	hostedSearch bool
	// toolsKey names the configuration the tools were last built from
	// (Retool); empty: the one the session opened with.
	toolsKey string // guarded by mu
	// extTools and extSystem are what the session's extension added, kept
	// so that Retool adds them to the rebuilt registry and prompt.
	extTools  []tools.Tool
	extSystem string
	warnings  []string        // of the configuration, for session.started
	allow     []protocol.Rule // the configuration's rules (tools.allow), in force unless revoked
	policy    approval.Policy // guarded by mu once the session has started
	// clientPolicy is the policy its client chose in session.start (v4
	// approval_policy), empty for the workspace's; a planned restart
	// keeps it.
	clientPolicy approval.Policy
	// toolEnv holds the session's tool timeouts and output limit (guarded
	// by mu once the session has started).
	toolEnv tools.Env
	// autoApprove answers every approval request yes without asking
	// (session.start auto_approve); calls the policy denies stay denied.
	autoApprove bool

	approvals *approval.Pending
	// closeExt stops the session extension's work at session end (nil:
	// none).
	closeExt func(ctx context.Context)
	// rec is the session's log (persist.go); nil when it is not stored.
	rec *recorder

	// emitLock serializes emission and the turn transitions that must not
	// interleave with it (a terminal event and the next turn.started). It is
	// a channel so waiting for it can honour a context.
	emitLock chan struct{}
	seq      uint64       // guarded by emitLock
	subs     []Subscriber // guarded by emitLock
	// ring keeps recent events for clients that attach (v4 sessions;
	// nil otherwise), and pendingApprovals the approval requests not yet
	// answered (attach.go). Guarded by emitLock.
	ring             *ring
	pendingApprovals []*protocol.ApprovalRequested
	// ended is set when the session ended for idleness (guarded by
	// emitLock); nsubs counts subs, lastUsed is when a subscriber or a
	// turn last came or went (unix nanoseconds), busy reports background
	// work that keeps the session alive (nil: none).
	ended    bool
	nsubs    atomic.Int32
	lastUsed atomic.Int64
	busy     func() bool

	mu      sync.Mutex
	active  *turn              // guarded by mu
	history []provider.Message // guarded by mu
	// historyTokens estimates the history's tokens, so a request is sized
	// without rescanning it; -1 means unknown. Guarded by mu.
	historyTokens int64
	usage         protocol.Usage // guarded by mu; session totals
	queue         []*queued      // guarded by mu
	paused        bool           // guarded by mu
	// restoredPaused is set when a resume restored queued prompts, which
	// wait paused; the first snapshot then says so (guarded by mu).
	restoredPaused bool
	// holdRestored keeps restored prompts waiting without holding up new
	// ones: until the user answers with session.pause, a new prompt runs
	// at once (as in a session that was never paused) instead of joining
	// the end of the restored queue, so `scv exec --continue` runs its
	// prompt. Guarded by mu.
	holdRestored bool
	// serverTurns wait for the user's queue to drain (guarded by mu).
	serverTurns []serverTurn
	// rules are the approval rules granted for the session, in order, one
	// per key (rules.go). Guarded by mu.
	rules []protocol.Rule
	// closed is set by Manager.CloseSession: no turn starts after it
	// (guarded by mu).
	closed bool
}

type turn struct {
	id        string
	requestID string
	origin    *protocol.Origin // set for a turn the server started
	ctx       context.Context  // the turn's; ends when it is cancelled
	cancel    context.CancelFunc
	rec       *turnRecord   // what the session log has of the turn; nil when not stored
	done      chan struct{} // closed once the turn has ended and emitted its end
	// steer is input steered into the turn that the loop has not taken yet
	// (guarded by the session's mu).
	steer []string

	// Streamed events coalesced while a subscriber lags (coalesce.go).
	pendMu     sync.Mutex
	pending    []pendingEvent // guarded by pendMu
	retry      *time.Timer    // guarded by pendMu
	retryArmed bool           // guarded by pendMu
	ended      bool           // guarded by pendMu; no retry after the end
}

// serverTurn is a turn the server asked for, waiting for an idle session.
type serverTurn struct {
	origin protocol.Origin
	prompt string
	// build, when not nil, gives origin and prompt when the turn is about
	// to start, or ok false to skip it.
	build func() (origin protocol.Origin, prompt string, ok bool)
}

type queued struct {
	entry     protocol.QueueEntry
	requestID string
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Cwd returns the canonical workspace.
func (s *Session) Cwd() string { return s.cwd }

// Model returns the session's model.
func (s *Session) Model() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.model
}

// ConfiguredModel returns the model the session started on, before any
// switch.
func (s *Session) ConfiguredModel() string { return s.startModel }

// SetModel changes the session's model (a client's model switch, such as
// ACP's session/set_config_option): it applies to every model request
// from now on, the running turn's next one included. The caller checks
// that the provider serves it. The switch is not stored: a resumed
// session starts on the configured model again.
func (s *Session) SetModel(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.model = model
}

// SetTarget switches the session to model of provider p (the TUI's
// /model across providers, session.set_model with a provider), from the
// next model request on, like SetModel. The caller checks that p can be
// used (its key is set). Not stored either.
func (s *Session) SetTarget(p provider.Provider, model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prov, s.model = p, model
}

// Provider returns the provider the session's requests go to.
func (s *Session) Provider() provider.Provider {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prov
}

// target is where the session's next model request goes.
func (s *Session) target() loop.Target {
	s.mu.Lock()
	p, model := s.prov, s.model
	s.mu.Unlock()
	return loop.Target{Provider: p, Model: model, ContextMaxTokens: s.mgr.contextFor(p, model)}
}

// Version returns the protocol version the session was started with.
func (s *Session) Version() int { return s.version }

// stateDir is the session's state directory, or "" when the server keeps
// no state.
func (s *Session) stateDir() string {
	if s.mgr.opts.StateDir == "" {
		return ""
	}
	return filepath.Join(s.mgr.opts.StateDir, "sessions", s.id)
}

// ContextMaxTokens returns the context size of the session's model now.
func (s *Session) ContextMaxTokens() int64 { return s.target().ContextMaxTokens }

// Subscribe attaches sub. The returned function detaches it; it waits for
// an emission in progress.
func (s *Session) Subscribe(ctx context.Context, sub Subscriber) (unsubscribe func(), err error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	s.subs = append(s.subs, sub)
	s.nsubs.Add(1)
	s.touch()
	s.unlock()
	return s.unsubscriber(sub), nil
}

func (s *Session) lock(ctx context.Context) error {
	select {
	case s.emitLock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Session) unlock() { <-s.emitLock }

// emitLocked assigns ev the next sequence number and delivers it to every
// subscriber. The emit lock must be held. When the first delivery fails
// the number is taken back, so no subscriber ever sees a gap.
func (s *Session) emitLocked(ctx context.Context, ev protocol.Sequenced) error {
	s.seq++
	ev.SetSeq(s.seq)
	for i, sub := range s.subs {
		if err := sub.Deliver(ctx, ev); err != nil {
			if i == 0 {
				s.seq--
			} else {
				s.rememberLocked(ev)
			}
			return err
		}
	}
	s.rememberLocked(ev)
	return nil
}

// EmitSnapshot emits queue.snapshot, for a client that just attached.
func (s *Session) EmitSnapshot(ctx context.Context, requestID string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	entries := s.entriesLocked()
	announce := s.restoredPaused
	s.restoredPaused = false
	s.mu.Unlock()
	if err := s.emitLocked(ctx, &protocol.QueueSnapshot{
		SessionHeader: protocol.SessionHeader{RequestID: requestID, SessionID: s.id},
		Entries:       entries,
	}); err != nil || !announce {
		return err
	}
	// A resumed session's queued prompts wait until the user resumes
	// the queue: the client learns it is paused right after the snapshot.
	return s.emitLocked(ctx, &protocol.SessionPaused{SessionHeader: protocol.SessionHeader{RequestID: requestID, SessionID: s.id}, Paused: true})
}

// Warnings returns what a person should know of the session's
// configuration (WorkspaceConfig.Warnings).
func (s *Session) Warnings() []string { return s.warnings }

// CheckPrompt validates a prompt for turn.start and queue.update.
func CheckPrompt(prompt string) error {
	if prompt == "" {
		return errorf(protocol.ErrInvalidRequest, "prompt is empty: send the text of the request")
	}
	if len(prompt) > protocol.MaxPromptBytes {
		return errorf(protocol.ErrInvalidRequest, "prompt is %d bytes, over the %d-byte limit: shorten it or put the long part in a workspace file and refer to it",
			len(prompt), protocol.MaxPromptBytes)
	}
	if !utf8.ValidString(prompt) {
		return errorf(protocol.ErrInvalidRequest, "prompt is not valid UTF-8")
	}
	return nil
}

// StartTurn starts a turn for prompt, or (protocol v2 and later) queues it
// while another turn runs. ctx bounds only the wait to emit turn.started or
// queue.enqueued; the turn itself runs until it ends or is cancelled.
// submitter is the client's name, recorded on a queue entry.
func (s *Session) StartTurn(ctx context.Context, requestID, prompt, submitter string) error {
	if err := CheckPrompt(prompt); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	// A paused session with queued prompts keeps their order: a new prompt
	// joins the end of the queue rather than running ahead of them.
	queueIt := s.active != nil || (s.paused && len(s.queue) > 0 && !s.holdRestored) || s.mgr.Draining()
	if queueIt {
		if s.version < protocol.Version2 && s.mgr.Draining() {
			s.mu.Unlock()
			return errorf(protocol.ErrTurnActive, "the daemon is restarting and starts no turn now; send the prompt again in a moment")
		}
		if s.version < protocol.Version2 {
			s.mu.Unlock()
			return errorf(protocol.ErrTurnActive, "a turn is already running in this session; wait for it to end or cancel it with turn.cancel")
		}
		if err := s.queueRoomLocked(1, len(prompt)); err != nil {
			s.mu.Unlock()
			return err
		}
		q := &queued{requestID: requestID, entry: protocol.QueueEntry{
			QueueID: uuid.NewString(), Revision: 1, Prompt: prompt, Submitter: submitter, Position: len(s.queue),
		}}
		s.queue = append(s.queue, q)
		entry := q.entry
		s.mu.Unlock()
		rec := queuedRecord(q)
		s.recordQueue(func(l *sessionstore.Log) error { return l.QueueAdded(rec) })
		return s.emitLocked(ctx, &protocol.QueueEnqueued{
			SessionHeader: protocol.SessionHeader{RequestID: requestID, SessionID: s.id}, Entry: entry})
	}
	s.mu.Unlock()
	return s.launchLocked(ctx, requestID, prompt, nil)
}

// StartServerTurn asks for a turn the server itself begins, such as a
// report of finished background jobs (protocol v3). It runs once the
// session is idle, not paused, and the user's queued prompts have run;
// its turn.started and terminal event carry origin and no request_id.
// Sessions of v1 and v2 clients, which know no origin, refuse it.
func (s *Session) StartServerTurn(ctx context.Context, origin protocol.Origin, prompt string) error {
	if s.version < protocol.Version3 {
		return errorf(protocol.ErrInvalidRequest, "server-started turns need protocol version 3; this session's client speaks version %d", s.version)
	}
	if origin.Kind == "" {
		return errorf(protocol.ErrInvalidRequest, "a server-started turn needs an origin kind")
	}
	if err := CheckPrompt(prompt); err != nil {
		return err
	}
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	s.serverTurns = append(s.serverTurns, serverTurn{origin: origin, prompt: prompt})
	s.mu.Unlock()
	s.dequeueLocked(ctx)
	return nil
}

// ScheduleServerTurn asks for a server-started turn whose origin and prompt
// are decided only when it is about to start: build runs then, under the
// session's emit lock, and returns ok false to skip the turn (its reason
// has gone, say a background job's result was read meanwhile). It is how
// background agent jobs report (delegate/agenttool's Host). build must not call
// back into the session.
func (s *Session) ScheduleServerTurn(build func() (origin protocol.Origin, prompt string, ok bool)) error {
	if s.version < protocol.Version3 {
		return errorf(protocol.ErrInvalidRequest, "server-started turns need protocol version 3; this session's client speaks version %d", s.version)
	}
	ctx := s.mgr.ctx
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	s.serverTurns = append(s.serverTurns, serverTurn{build: build})
	s.mu.Unlock()
	s.dequeueLocked(ctx)
	return nil
}

// launchLocked emits turn.started and starts a turn of the agent loop for
// prompt. The emit lock must be held and no turn may be active.
func (s *Session) launchLocked(ctx context.Context, requestID, prompt string, origin *protocol.Origin) error {
	return s.launchTurnLocked(ctx, requestID, origin, func(ctx context.Context, cfg loop.Config, history []provider.Message, sink loop.Sink) loop.Outcome {
		return loop.Run(ctx, cfg, history, prompt, sink)
	})
}

// turnFunc is the work of a turn: a run of the agent loop, or a compaction.
type turnFunc func(ctx context.Context, cfg loop.Config, history []provider.Message, sink loop.Sink) loop.Outcome

// launchTurnLocked emits turn.started and starts the turn's goroutine,
// which runs work. The emit lock must be held and no turn may be active.
func (s *Session) launchTurnLocked(ctx context.Context, requestID string, origin *protocol.Origin, work turnFunc) error {
	m := s.mgr
	if m.closing() {
		return errorf(protocol.ErrInternal, "the server is shutting down; no new turn starts")
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return errorf(protocol.ErrSessionNotFound, "session %s is closed; no new turn starts in it", s.id)
	}
	if m.opts.BeforeTurn != nil {
		m.opts.BeforeTurn()
	}
	turnCtx, cancel := context.WithCancel(m.ctx)
	t := &turn{id: uuid.NewString(), requestID: requestID, origin: origin, ctx: turnCtx, cancel: cancel, done: make(chan struct{})}
	started := &protocol.TurnStarted{TurnHeader: protocol.TurnHeader{RequestID: requestID, SessionID: s.id, TurnID: t.id}, Origin: origin}
	// Subscribers get turn.started before the turn reads the session's
	// model, policy and tools below: a dialect may settle a queued turn's
	// own there (the App Server's turn/followUp).
	if err := s.emitLocked(ctx, started); err != nil {
		cancel()
		return err
	}
	s.mu.Lock()
	s.active = t
	history := append([]provider.Message(nil), s.history...)
	historyTokens := s.historyTokens
	policy := s.policy
	model, prov := s.model, s.prov
	// The turn keeps the tools it starts with: a Retool applies to the
	// turns after it.
	reg, system, hostedSearch, toolEnv := s.tools, s.system, s.hostedSearch, s.toolEnv
	s.mu.Unlock()

	cfg := loop.Config{
		Provider:        prov,
		Model:           model,
		Now:             s.target,
		System:          system,
		Tools:           reg,
		HostedWebSearch: hostedSearch,
		Policy:          policy,
		PolicyNow:       s.Policy,
		AutoApprove:     s.autoApprove,
		Approvals:       s.approvals,
		Rules:           s.rulesFunc(),
		WiderRules:      s.version >= protocol.Version4,
		MaxSteps:        m.opts.MaxSteps,
		Progress:        s.version >= protocol.Version3,
		Retries:         s.version >= protocol.Version4,
		TakeSteer: func() []string {
			s.mu.Lock()
			defer s.mu.Unlock()
			in := t.steer
			t.steer = nil
			return in
		},
		OnReasoning: func(ctx context.Context, text string) error {
			return s.observeReasoning(ctx, t, text)
		},

		ContextMaxTokens: m.contextFor(prov, model),
		CompactShare:     m.opts.CompactShare,
		KeepTurns:        m.opts.KeepTurns,
		HistoryTokens:    historyTokens,
		WarmAfter:        loop.DefaultWarmAfter,
		ToolEnv: tools.Env{
			StateDir:    s.stateDir(),
			TurnID:      t.id,
			Workspace:   s.cwd,
			Root:        s.root,
			Timeout:     toolEnv.Timeout,
			MaxTimeout:  toolEnv.MaxTimeout,
			OutputLimit: toolEnv.OutputLimit,
		},
	}
	s.recordTurn(t, &cfg)
	m.turns.Add(1)
	go func() {
		defer m.turns.Done()
		defer close(t.done)
		defer cancel()
		out := s.runRecovering(t, func() loop.Outcome { return work(turnCtx, cfg, history, &turnSink{s: s, t: t}) })
		s.finish(t, out)
	}()
	return nil
}

// runRecovering runs a turn's work; a panic in it (a bug, in a tool say)
// fails the turn with internal_error instead of ending the server with
// every session in it. The turn's messages are then dropped, so the
// history stays valid; the panic and its stack go to the log.
func (s *Session) runRecovering(t *turn, work func() loop.Outcome) (out loop.Outcome) {
	defer func() {
		if r := recover(); r != nil {
			s.mgr.log.Error("A turn panicked; it fails with internal_error and the server goes on",
				"session", s.id, "turn", t.id, "panic", r, "stack", string(debug.Stack()))
			out = loop.Outcome{Err: &loop.Failure{Code: protocol.FailInternal,
				Message: fmt.Sprintf("internal error: the server failed unexpectedly during this turn (%v); the turn's messages were dropped, and the server log has the details", r)}}
		}
	}()
	return work()
}

// finish records a turn's outcome, emits its terminal event and starts the
// next queued prompt unless the session is paused.
func (s *Session) finish(t *turn, out loop.Outcome) {
	m := s.mgr
	out, history, trimmed := s.bound(t, out)
	// The log has the turn's end before the client hears of it.
	s.recordEnd(t, out, history)
	hdr := protocol.TurnHeader{RequestID: t.requestID, SessionID: s.id, TurnID: t.id}
	var terminal protocol.Sequenced
	var failure *loop.Failure
	switch {
	case out.Err == nil:
		terminal = &protocol.TurnCompleted{TurnHeader: hdr, Steps: out.Steps, Usage: out.Usage, Origin: t.origin, FinishReason: out.FinishReason}
	case errors.As(out.Err, &failure):
		terminal = &protocol.TurnFailed{TurnHeader: hdr, Code: failure.Code, Message: failure.Message, Origin: t.origin}
		m.log.Warn("Turn failed", "session", s.id, "turn", t.id, "code", failure.Code, "err", out.Err)
	default:
		terminal = &protocol.TurnCancelled{TurnHeader: hdr, Origin: t.origin}
	}
	// The terminal event waits for the client like any other, bounded by
	// the manager's lifetime rather than the (already ended) turn. The
	// turn's coalesced text goes first, unless it was cancelled: then,
	// like any event still waiting, it is not sent.
	_, cancelled := terminal.(*protocol.TurnCancelled)
	if err := s.lock(m.ctx); err != nil {
		s.dropPending(t)
		s.clearActive(t, out, history)
		return
	}
	defer s.unlock()
	s.endPendingLocked(m.ctx, t, cancelled)
	// Commit before the client hears of the end, so whatever it does next
	// sees the turn's history; holding the emit lock, no turn can start in
	// between.
	s.clearActive(t, out, history)
	if trimmed != nil {
		if err := s.emitLocked(m.ctx, trimmed); err != nil {
			m.log.Warn("Could not report a trimmed history", "session", s.id, "err", err)
		}
	}
	if err := s.emitLocked(m.ctx, terminal); err != nil {
		m.log.Warn("Could not deliver the end of a turn", "session", s.id, "turn", t.id, "err", err)
	}
	s.dequeueLocked(m.ctx)
}

// clearActive ends t and commits history, the session's new history with
// the turn's messages.
func (s *Session) clearActive(t *turn, out loop.Outcome, history []provider.Message) {
	s.touch()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == t {
		s.active = nil
	}
	s.history = history
	s.historyTokens = tokens.Messages(history)
	if out.Usage != nil {
		s.usage.Add(*out.Usage)
	}
}

// dequeueLocked starts the next queued prompt when the session is idle and
// not paused; with the user's queue empty, the next server-started turn.
// The emit lock must be held.
//
// While the manager drains for a planned restart, the user's prompts stay
// queued but server-started turns (reports of background jobs) still run:
// the restart waits for the jobs that count, and a finished job counts
// until it is reported.
func (s *Session) dequeueLocked(ctx context.Context) {
	if s.mgr.closing() {
		return // queued prompts stay queued through shutdown
	}
	draining := s.mgr.Draining()
	s.mu.Lock()
	if s.active != nil || (s.paused && !draining) {
		s.mu.Unlock()
		return
	}
	if len(s.queue) == 0 || draining {
		for {
			if len(s.serverTurns) == 0 {
				s.mu.Unlock()
				return
			}
			st := s.serverTurns[0]
			s.serverTurns = s.serverTurns[1:]
			s.mu.Unlock()
			origin, prompt := st.origin, st.prompt
			if st.build != nil {
				var ok bool
				if origin, prompt, ok = st.build(); !ok {
					s.mu.Lock()
					continue
				}
				if err := CheckPrompt(prompt); err != nil {
					s.mgr.log.Warn("Dropped a server turn with an invalid prompt", "session", s.id, "err", err)
					s.mu.Lock()
					continue
				}
			}
			if err := s.launchLocked(ctx, "", prompt, &origin); err != nil {
				s.mgr.log.Warn("Could not start a server turn", "session", s.id, "err", err)
			}
			return
		}
	}
	q := s.queue[0]
	s.queue = s.queue[1:]
	s.renumberLocked()
	entry := q.entry
	entry.Position = 0
	s.mu.Unlock()
	s.recordQueue(func(l *sessionstore.Log) error { return l.QueueRemoved(entry.QueueID) })
	if err := s.emitLocked(ctx, &protocol.QueueDequeued{
		SessionHeader: protocol.SessionHeader{RequestID: q.requestID, SessionID: s.id}, Entry: entry}); err != nil {
		return
	}
	if err := s.launchLocked(ctx, q.requestID, entry.Prompt, nil); err != nil {
		s.mgr.log.Warn("Could not start a queued turn", "session", s.id, "err", err)
	}
}

func (s *Session) cancelActive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active != nil {
		s.active.cancel()
	}
}

// CancelTurn cancels the running turn turnID.
func (s *Session) CancelTurn(turnID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil || s.active.id != turnID {
		return errorf(protocol.ErrTurnNotFound, "turn %q is not running in this session", turnID)
	}
	s.active.cancel()
	return nil
}

// Steer adds prompt to the running turn turnID: the model reads it before
// its next request (after the running tool calls), in the same turn.
func (s *Session) Steer(turnID, prompt string) error {
	if err := CheckPrompt(prompt); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil || s.active.id != turnID {
		return errorf(protocol.ErrTurnNotFound, "turn %q is not running in this session", turnID)
	}
	s.active.steer = append(s.active.steer, prompt)
	return nil
}

// ActiveTurn returns the running turn's id; empty when none runs.
func (s *Session) ActiveTurn() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		return ""
	}
	return s.active.id
}

// Active reports whether a turn is running.
func (s *Session) Active() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active != nil
}

// lockIdle takes the emit lock for a request that needs an idle session;
// no turn can start while the caller holds it. The caller unlocks.
func (s *Session) lockIdle(ctx context.Context, request string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	active := s.active != nil
	s.mu.Unlock()
	if active {
		s.unlock()
		return errorf(protocol.ErrTurnActive, "a turn is running; %s needs an idle session, so wait for the turn to end or cancel it", request)
	}
	return nil
}

// Clear drops the idle session's history, usage totals, queue, approval
// rules and fixed server turns, keeping the sequence, and emits
// session.cleared. Reports of background jobs (ScheduleServerTurn) stay:
// a job that finishes is news whatever the conversation was, and their
// prompt is decided when they start.
func (s *Session) Clear(ctx context.Context, requestID string) error {
	if err := s.lockIdle(ctx, "session.clear"); err != nil {
		return err
	}
	defer s.unlock()
	s.mu.Lock()
	s.history = nil
	s.historyTokens = 0
	s.usage = protocol.Usage{}
	s.queue = nil
	s.serverTurns = slices.DeleteFunc(s.serverTurns, func(st serverTurn) bool { return st.build == nil })
	s.rules = slices.Clone(s.allow) // the configuration's rules stay
	s.mu.Unlock()
	s.recordClear()
	return s.emitLocked(ctx, &protocol.SessionCleared{SessionHeader: protocol.SessionHeader{RequestID: requestID, SessionID: s.id}})
}

// History returns a copy of the session's history.
func (s *Session) History() []provider.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]provider.Message(nil), s.history...)
}

// Policy returns the session's approval policy.
func (s *Session) Policy() approval.Policy {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.policy
}

// SetPolicy changes the session's approval policy (a client's mode
// switch, such as ACP's session/set_mode): it applies to every tool call
// from now on, those of the running turn's next model reply included; a
// call already waiting for approval keeps waiting.
func (s *Session) SetPolicy(p approval.Policy) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.policy = p
}

// ContextTokens estimates the tokens of the session's history, the part of
// the context the conversation fills (the system prompt and tool schemas
// come on top); -1 when unknown, as right after a resume.
func (s *Session) ContextTokens() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.historyTokens
}

// Usage returns the session's usage totals.
func (s *Session) Usage() protocol.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usage
}

// observeReasoning hands reasoning text to the subscribers that show it,
// after the turn's coalesced events so the order holds.
func (s *Session) observeReasoning(ctx context.Context, t *turn, text string) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.unlock()
	if err := s.flushPendingLocked(ctx, t, true); err != nil {
		return err
	}
	for _, sub := range s.subs {
		if o, ok := sub.(ReasoningObserver); ok {
			if err := o.ObserveReasoning(ctx, t.id, text); err != nil {
				return fmt.Errorf("showing reasoning: %w", err)
			}
		}
	}
	return nil
}

// turnSink fills turn headers and emits under the session's lock.
type turnSink struct {
	s *Session
	t *turn
}

func (k *turnSink) Emit(ctx context.Context, ev protocol.TurnEvent) error {
	h := ev.Turn()
	h.RequestID, h.SessionID, h.TurnID = k.t.requestID, k.s.id, k.t.id
	k.s.noteEvent(k.t, ev)
	var err error
	if coalescing(ev) {
		err = k.s.emitStreamed(ctx, k.t, ev)
	} else {
		err = k.s.emitTurnEvent(ctx, k.t, ev)
	}
	if err != nil {
		return fmt.Errorf("emitting %s: %w", ev.Kind(), err)
	}
	return nil
}

// Retool rebuilds the session's tools from wc, the configuration as it is
// now (a dialect that resolves each turn's configuration, such as the App
// Server): the workspace's tools, the hosted web search, the tool
// timeouts and output limit, and the system prompt that lists them. The
// session's extension (delegated agents, chat tools) is bound to the
// session and is added to the new registry as it is. key names the
// configuration wc was made from: the same key as the last Retool's
// leaves the tools as they are, so per-session tool state (web_fetch's
// page cache, the login-shell snapshot) lasts while nothing changes.
// A running turn keeps the tools it started with; the next turn takes the
// new ones. A tool-free session stays tool-free. On error nothing changes.
func (s *Session) Retool(key string, wc WorkspaceConfig) error {
	s.mu.Lock()
	free, same := s.tools == nil, key != "" && key == s.toolsKey
	s.mu.Unlock()
	if free || same {
		return nil
	}
	if wc.Tools == nil {
		return fmt.Errorf("the configuration of %s has no tools for session %s", s.cwd, s.id)
	}
	reg, err := wc.Tools(s.cwd)
	if err == nil && reg == nil {
		err = errors.New("no tool registry")
	}
	if err != nil {
		return fmt.Errorf("setting up the tools of %s: %w", s.cwd, err)
	}
	for _, t := range s.extTools {
		if err = reg.Register(t); err != nil {
			break
		}
	}
	var system string
	if s.mgr.opts.System != nil {
		// Also on error: the SystemFunc takes what the ToolsFunc left for it.
		system = s.mgr.opts.System(s.cwd, reg)
	}
	if err != nil {
		return fmt.Errorf("adding the session's own tools: %w", err)
	}
	if s.extSystem != "" {
		system = strings.TrimRight(system, "\n") + "\n\n" + s.extSystem
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools, s.system, s.hostedSearch, s.toolsKey = reg, system, wc.HostedWebSearch, key
	s.toolEnv = tools.Env{Timeout: wc.ToolTimeout, MaxTimeout: wc.MaxToolTimeout, OutputLimit: wc.ToolOutputLimit}
	return nil
}
