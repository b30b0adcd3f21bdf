// Package session is SCV's session runtime: sessions, their turns, their
// history and their event streams. It knows nothing of connections or wire
// dialects. A client attaches to a session by subscribing to it; the
// session assigns every event its sequence number and delivers it, in
// order, to every subscriber, so several clients can watch one session.
//
// Goroutines: the Manager owns one goroutine per running turn. Close
// cancels them and waits for them to finish; each turn still emits its
// terminal event unless the manager's context ends first.
package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/scv-cli/scv/shared/paths"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/sessionstore"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
)

// ToolsFunc builds the tool registry of a new session.
type ToolsFunc func(workspace string) (*tools.Registry, error)

// SystemFunc builds a session's system prompt.
type SystemFunc func(workspace string, reg *tools.Registry) string

// WorkspaceConfig is the configuration of the sessions of one workspace,
// such as the server's merged with the workspace's project file.
type WorkspaceConfig struct {
	Tools           ToolsFunc // nil: the session is tool-free
	Policy          approval.Policy
	ToolTimeout     time.Duration
	MaxToolTimeout  time.Duration
	ToolOutputLimit int
	// Extend, when not nil, adds session-bound tools and prompt sections
	// to each tool-enabled session (delegated agents).
	Extend ExtendFunc
	// HostedWebSearch offers the endpoint's hosted web search to
	// tool-enabled sessions (web.search = "provider").
	HostedWebSearch bool
	// Warnings are what a person should know of the configuration the
	// session runs with (a key file others can read, an option a project
	// file may not set, the auto policy): v4 clients get them in
	// session.started, and the log has them too.
	Warnings []string
	// Allow are the rules of the configuration (tools.allow), in force in
	// every session from protocol v3 as if granted, until revoked.
	Allow []protocol.Rule
}

// SessionInfo describes a new session to an ExtendFunc.
type SessionInfo struct {
	ID        string
	Workspace string
	// Depth is the session's delegation depth (session.start).
	Depth int
	// Version is the client's protocol version; server-started turns need
	// version 3.
	Version int
	// Policy is the session's approval policy, and AutoApprove whether its
	// client approves every request unasked (session.start auto_approve).
	Policy      approval.Policy
	AutoApprove bool
	// Session is the session itself: its ScheduleServerTurn is the host of
	// background reports.
	Session *Session
	// Channel is the chat conversation the session serves (session.start
	// channel, checked); nil for none.
	Channel *protocol.Channel
}

// Extension is what an ExtendFunc adds to a session.
type Extension struct {
	// Tools are registered after the workspace's tools.
	Tools []tools.Tool
	// System is appended to the system prompt.
	System string
	// Close runs when the session ends (the server shuts down): it stops
	// whatever the tools still run, such as background jobs.
	Close func(ctx context.Context)
	// Busy, when not nil, reports work that keeps the session alive with
	// no client attached (background jobs that still count).
	Busy func() bool
}

// ExtendFunc builds the extension of a new session. An error refuses
// session.start.
type ExtendFunc func(info SessionInfo) (Extension, error)

// WorkspaceFunc returns the configuration of a new session in workspace
// (canonical, absolute). An error refuses session.start: a *Error is
// returned as is, any other error as invalid_request with its text.
type WorkspaceFunc func(workspace string) (WorkspaceConfig, error)

// Options configure a Manager.
type Options struct {
	Provider provider.Provider
	// ModelContext, when not nil, gives the context window configured for
	// one model of a provider (providers.NAME.models.MODEL), 0 when none
	// is: the provider's own applies then.
	ModelContext func(providerName, model string) int64
	Tools        ToolsFunc  // nil: every session is tool-free
	System       SystemFunc // nil: no system prompt
	Policy       approval.Policy
	MaxSteps     int

	// CompactShare and KeepTurns tune compaction (agent.Config); zero
	// values take the agent's defaults.
	CompactShare float64
	KeepTurns    int
	// MaxHistoryBytes and MaxHistoryItems bound a session's history; older
	// turns are trimmed past them (session.trimmed). Zero values take the
	// protocol's transcript bounds.
	MaxHistoryBytes int64
	MaxHistoryItems int

	// StateDir is SCV_HOME's state directory; each session's tools get
	// StateDir/sessions/<id>. Empty: no per-session state.
	StateDir string

	ToolTimeout     time.Duration
	MaxToolTimeout  time.Duration
	ToolOutputLimit int

	// Workspace, when not nil, replaces Tools, Policy, ToolTimeout,
	// MaxToolTimeout and ToolOutputLimit per session with what it returns
	// for the session's workspace.
	Workspace WorkspaceFunc

	// BeforeTurn, when not nil, is called as each turn starts, before the
	// turn reads the session's tools: the server follows changes of the
	// configuration file there (its MCP servers). It must return at once.
	BeforeTurn func()

	Logger *slog.Logger
}

// Manager owns the sessions of a server process.
type Manager struct {
	opts Options
	log  *slog.Logger

	// ctx bounds every turn; cancel aborts them after the grace period.
	ctx    context.Context
	cancel context.CancelFunc
	turns  sync.WaitGroup

	// draining is set by Drain (a planned restart): no turn starts.
	draining atomic.Bool

	mu       sync.Mutex
	sessions map[string]*Session // guarded by mu
	closed   bool                // guarded by mu
	// opening reserves the ids of sessions being started, so that one
	// stored session is never opened twice (guarded by mu).
	opening map[string]bool

	store *sessionstore.Store // nil: sessions are not stored
}

// NewManager returns a manager.
func NewManager(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Policy == "" {
		opts.Policy = approval.OnRisk
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel, sessions: map[string]*Session{},
		opening: map[string]bool{}, store: newStore(opts.StateDir)}
}

// StartOptions are the client's choices for a new session.
type StartOptions struct {
	Cwd             string
	Model           string
	ProtocolVersion int
	AutoApprove     bool
	ToolsOff        bool
	DelegationDepth int
	Channel         *protocol.Channel
	// Resume continues the stored session with this id (v3 resume):
	// the session takes its id, history and usage totals.
	Resume string
	// Policy overrides the workspace's approval policy for this session
	// (v4 session.start approval_policy); empty keeps it.
	Policy approval.Policy
}

// workspaceConfig is what the configuration sets for sessions in cwd.
func (m *Manager) workspaceConfig(cwd string) (WorkspaceConfig, error) {
	wc := WorkspaceConfig{Tools: m.opts.Tools, Policy: m.opts.Policy, ToolTimeout: m.opts.ToolTimeout,
		MaxToolTimeout: m.opts.MaxToolTimeout, ToolOutputLimit: m.opts.ToolOutputLimit}
	if m.opts.Workspace == nil {
		return wc, nil
	}
	wc, err := m.opts.Workspace(cwd)
	if err != nil {
		var se *Error
		if errors.As(err, &se) {
			return wc, se
		}
		return wc, errorf(protocol.ErrInvalidRequest, "%v", err)
	}
	if wc.Policy == "" {
		wc.Policy = approval.OnRisk
	}
	return wc, nil
}

// extend adds the session's extension (its delegated agents) to s and
// reg. On failure the session is abandoned.
func (m *Manager) extend(s *Session, reg *tools.Registry, extendFn ExtendFunc) (Extension, error) {
	ext, err := extendFn(SessionInfo{ID: s.id, Workspace: s.cwd, Depth: s.depth, Version: s.version,
		Policy: s.policy, AutoApprove: s.autoApprove, Session: s, Channel: s.channel})
	if err == nil {
		for _, t := range ext.Tools {
			if err = reg.Register(t); err != nil {
				break
			}
		}
	}
	if err != nil {
		if ext.Close != nil {
			ext.Close(context.Background())
		}
		m.abandon(s)
		return ext, fmt.Errorf("setting up the session's delegated agents: %w", err)
	}
	if closeExt := ext.Close; closeExt != nil {
		var once sync.Once
		// Once: an idle end (EndIdle) may race the manager's Close.
		s.closeExt = func(ctx context.Context) { once.Do(func() { closeExt(ctx) }) }
	}
	s.busy = ext.Busy
	s.extTools, s.extSystem = ext.Tools, ext.System
	return ext, nil
}

// Start creates a session in opts.Cwd, which must be an absolute path to a
// directory; it is canonicalized.
func (m *Manager) Start(opts StartOptions) (*Session, error) {
	cwd, err := canonicalWorkspace(opts.Cwd)
	if err != nil {
		return nil, err
	}
	wc, err := m.workspaceConfig(cwd)
	if err != nil {
		return nil, err
	}
	var reg *tools.Registry
	if !opts.ToolsOff && wc.Tools != nil {
		reg, err = wc.Tools(cwd)
		if err != nil {
			return nil, fmt.Errorf("setting up the tools of %s: %w", cwd, err)
		}
	}
	root, err := os.OpenRoot(cwd)
	if err != nil {
		return nil, errorf(protocol.ErrInvalidRequest, "cannot open the workspace %s: %v", cwd, err)
	}
	model := opts.Model
	if model == "" {
		model = m.opts.Provider.Model()
	}
	policy := wc.Policy
	if opts.Policy != "" {
		policy = opts.Policy
	}
	s := &Session{
		id:           uuid.NewString(),
		cwd:          cwd,
		model:        model,
		prov:         m.opts.Provider,
		startModel:   model,
		version:      opts.ProtocolVersion,
		depth:        opts.DelegationDepth,
		channel:      opts.Channel,
		mgr:          m,
		root:         root,
		tools:        reg,
		hostedSearch: reg != nil && wc.HostedWebSearch,
		warnings:     wc.Warnings,
		allow:        wc.Allow,
		policy:       policy,
		clientPolicy: opts.Policy,
		toolEnv:      tools.Env{Timeout: wc.ToolTimeout, MaxTimeout: wc.MaxToolTimeout, OutputLimit: wc.ToolOutputLimit},
		autoApprove:  opts.AutoApprove,
		approvals:    approval.NewPending(),
		emitLock:     make(chan struct{}, 1),
	}
	if opts.ProtocolVersion >= protocol.Version4 {
		s.ring = &ring{}
	}
	if opts.ProtocolVersion >= protocol.Version3 {
		s.rules = slices.Clone(wc.Allow)
	} else {
		s.allow = nil // rules are a v3 feature
	}
	s.touch()
	if err := m.persist(s, opts.Resume); err != nil {
		_ = root.Close()
		return nil, err
	}
	var ext Extension
	if reg != nil && wc.Extend != nil {
		if ext, err = m.extend(s, reg, wc.Extend); err != nil {
			return nil, err
		}
	}
	if m.opts.System != nil {
		s.system = m.opts.System(cwd, reg)
	}
	if ext.System != "" {
		s.system = strings.TrimRight(s.system, "\n") + "\n\n" + ext.System
	}
	if s.Resumed() {
		s.historyTokens = -1 // unknown: the loop measures the restored history once
	}
	m.mu.Lock()
	delete(m.opening, s.id)
	closed := m.closed
	if !closed {
		m.sessions[s.id] = s
	}
	m.mu.Unlock()
	if closed {
		m.abandon(s)
		return nil, errorf(protocol.ErrInternal, "the server is shutting down")
	}
	m.log.Info("Session started", "session", s.id, "cwd", cwd, "model", model, "policy", policy)
	return s, nil
}

// Get returns the session with id.
func (m *Manager) Get(id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return nil, errorf(protocol.ErrSessionNotFound, "no session has id %q; start one with session.start", id)
	}
	return s, nil
}

// Provider returns the provider sessions run on.
func (m *Manager) Provider() provider.Provider { return m.opts.Provider }

// contextFor is the context window of model on p.
func (m *Manager) contextFor(p provider.Provider, model string) int64 {
	if m.opts.ModelContext != nil {
		if n := m.opts.ModelContext(p.Name(), model); n > 0 {
			return n
		}
	}
	return p.ContextMaxTokens()
}

// CancelAll cancels every running turn. Turns still emit their terminal
// events.
func (m *Manager) CancelAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		s.cancelActive()
	}
}

// Close cancels every turn and waits for them to end. When ctx ends first,
// the turns' remaining emission is aborted and Close still waits for their
// goroutines, which then return promptly.
func (m *Manager) Close(ctx context.Context) {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.CancelAll()
	done := make(chan struct{})
	go func() { m.turns.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		m.log.Warn("Turns did not finish within the grace period; aborting them")
		m.cancel()
		<-done
	}
	m.cancel()
	m.mu.Lock()
	sessions := slices.Collect(maps.Values(m.sessions))
	m.mu.Unlock()
	for _, s := range sessions {
		if s.closeExt != nil {
			s.closeExt(ctx)
		}
		_ = s.root.Close()
		s.closeLog()
	}
}

// CloseSession ends one session before the server does (ACP's
// session/close): queued prompts and server turns are dropped, the running
// turn is cancelled and waited for (it still emits its terminal event,
// unless ctx ends first), then the session's extension, workspace and log
// are released and the session is forgotten. Its stored log stays, so it
// can be resumed later. Closing a session that is not open is an error.
func (m *Manager) CloseSession(ctx context.Context, id string) error {
	m.mu.Lock()
	s, ok := m.sessions[id]
	if ok {
		delete(m.sessions, id)
	}
	m.mu.Unlock()
	if !ok {
		return errorf(protocol.ErrSessionNotFound, "no session has id %q; it was never started or is closed already", id)
	}
	s.mu.Lock()
	s.closed = true
	s.queue = nil
	s.serverTurns = nil
	t := s.active
	if t != nil {
		t.cancel()
	}
	s.mu.Unlock()
	if t != nil {
		select {
		case <-t.done:
		case <-ctx.Done():
			// The turn's emission may be stuck behind a client that is
			// gone; the manager's Close still joins it.
			m.log.Warn("A closed session's turn did not end in time; releasing the session anyway", "session", id)
		}
	}
	if s.closeExt != nil {
		s.closeExt(ctx)
	}
	_ = s.root.Close()
	s.closeLog()
	m.log.Info("Session closed", "session", id)
	return nil
}

// abandon releases a session that failed to start after it was stored.
func (m *Manager) abandon(s *Session) {
	if s.closeExt != nil {
		s.closeExt(context.Background())
	}
	m.mu.Lock()
	delete(m.opening, s.id)
	m.mu.Unlock()
	_ = s.root.Close()
	s.closeLog()
}

// closing reports whether Close has begun; no turn starts after that.
func (m *Manager) closing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Drain stops turns from starting, for a planned restart: a new prompt is
// queued (v2 and later; refused before) and queued prompts stay queued,
// while running turns go on. The queues are in the sessions' logs.
func (m *Manager) Drain() { m.draining.Store(true) }

// Draining reports whether Drain was called.
func (m *Manager) Draining() bool { return m.draining.Load() }

// WaitTurns waits until no turn runs and no background job counts (see
// Extension.Busy), or ctx ends; it reports whether they ended.
func (m *Manager) WaitTurns(ctx context.Context) bool {
	for {
		busy := false
		m.mu.Lock()
		for _, s := range m.sessions {
			if s.Active() || (s.busy != nil && s.busy()) {
				busy = true
				break
			}
		}
		m.mu.Unlock()
		if !busy {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Open describes an open session for a planned restart.
type Open struct {
	SessionID string `json:"session_id"`
	Cwd       string `json:"cwd"`
	Paused    bool   `json:"paused"`
	// Version is the protocol version the session was started with.
	Version int `json:"version"`
	// Policy is the session's approval policy, so a client's own
	// (session.start approval_policy) survives a planned restart.
	Policy approval.Policy `json:"approval_policy,omitempty"`
}

// OpenSessions lists the open sessions that are stored (those a new
// process can resume).
func (m *Manager) OpenSessions() []Open {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Open
	for _, s := range m.sessions {
		if s.rec == nil {
			continue
		}
		s.mu.Lock()
		out = append(out, Open{SessionID: s.id, Cwd: s.cwd, Paused: s.paused, Version: s.version, Policy: s.clientPolicy})
		s.mu.Unlock()
	}
	return out
}

// Abort ends every turn's emission at once. Close must still be called.
func (m *Manager) Abort() { m.cancel() }

func canonicalWorkspace(cwd string) (string, error) {
	if cwd == "" {
		return "", errorf(protocol.ErrInvalidRequest, "cwd is missing: send the workspace as an absolute path")
	}
	if !filepath.IsAbs(cwd) {
		return "", errorf(protocol.ErrInvalidRequest, "cwd %q is not an absolute path: send the workspace as an absolute path", cwd)
	}
	real, err := paths.ResolveWorkspace(cwd, true)
	var we *paths.WorkspaceError
	if errors.As(err, &we) {
		switch we.Step {
		case paths.WorkspaceNotDir:
			return "", errorf(protocol.ErrInvalidRequest, "cwd is not a directory: %s", cwd)
		case paths.WorkspaceStat:
			return "", errorf(protocol.ErrInvalidRequest, "cwd %s cannot be read: %v", cwd, we.Err)
		}
		if errors.Is(err, os.ErrNotExist) {
			return "", errorf(protocol.ErrInvalidRequest, "cwd %s does not exist", cwd)
		}
		return "", errorf(protocol.ErrInvalidRequest, "cwd %s cannot be resolved: %v", cwd, we.Err)
	}
	if err != nil {
		return "", errorf(protocol.ErrInvalidRequest, "cwd %s cannot be resolved: %v", cwd, err)
	}
	return filepath.Clean(real), nil
}
