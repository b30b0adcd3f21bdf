// Package agenttool is the tool surface of delegation in a session:
// `agent`, which hands a brief to another agent CLI through its
// delegate.Backend, and `agent_wait`, `agent_status` and `agent_cancel`,
// which manage the background jobs `agent` starts (tools.md, "Delegated
// agents"), with everything the model reads of them: the schemas and
// descriptions, the system prompt's section, the refusals, the results
// fitted to the output limit, and the prompts of report turns.
//
// A Set belongs to one session. It chooses the agent of each call (the
// agent a `session` handle names, the `agent` argument, then the first
// offered agent of [agent] prefer), refuses bad calls in Prepare, before
// approval and before anything launches, and runs a call on its backend.
// The session's conversations (delegate/conversations) and background
// jobs (delegate/jobs) are its parts: the Set's lock serialises the
// conversation table and orders it with starting a job, so a call refused
// for want of a job slot never holds a conversation. Close cancels every
// job and waits for them.
package agenttool

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/conversations"
	"github.com/scv-cli/scv/scv-server/internal/delegate/jobs"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
)

// Tool names.
const (
	NameAgent  = "agent"
	NameWait   = "agent_wait"
	NameStatus = "agent_status"
	NameCancel = "agent_cancel"
)

// SectionTitle is the title of the system-prompt section SystemSection
// returns the body of.
const SectionTitle = "Delegating work"

// Defaults of Options fields left zero.
const (
	DefaultTimeout          = 3600 * time.Second
	DefaultMaxTimeout       = 14400 * time.Second
	DefaultMaxConversations = 8
	DefaultConversationIdle = 86400 * time.Second
	defaultOutputLimit      = 64 << 10
	// cancelWait bounds how long agent_cancel waits for a job to settle.
	cancelWait = 10 * time.Second
	// promptShown bounds the prompt in an approval summary.
	promptShown = 2000
)

// runGrace is how long past its timeout a run may take before the Set
// cancels it itself: the backend enforces the timeout, this only bounds a
// backend that does not. A variable for tests.
var runGrace = 30 * time.Second

// Options configure the agent tools of one session.
type Options struct {
	// Backends are the agents this session offers, in adapter order. Empty:
	// no tools.
	Backends []delegate.Backend
	// Prefer is [agent] prefer; only offered names count, and the first of
	// them runs a call that names no agent.
	Prefer []string
	// Defaults are the [agents.<name>] use_for, model and effort notes.
	Defaults map[string]AgentDefaults
	// Permissions marks the agents configured with permissions = "full",
	// for the approval summary (the backend's Launch says it too).
	Permissions map[string]bool
	// Workspace is the session's canonical absolute workspace; a call's
	// tools.Env.Workspace is used when it is empty.
	Workspace string
	// SessionID is the session's id, passed to backends for records.
	SessionID string
	// Depth is the session's delegation depth; the tools are offered only
	// while Depth < MaxDepth (agent.max_delegation_depth, pass the
	// configured value: 0 offers none).
	Depth, MaxDepth int
	// DefaultTimeout (tools.agent_timeout_seconds) and MaxTimeout
	// (tools.max_timeout_seconds) bound runs and agent_wait.
	DefaultTimeout, MaxTimeout time.Duration
	// MaxBackground is agent.max_background: jobs running at once; 0
	// turns background calls and the three job tools off.
	MaxBackground int
	// MaxConversations is agent.max_conversations (default 8).
	MaxConversations int
	// ConversationIdle is agent.conversation_idle_seconds (default 1 day).
	ConversationIdle time.Duration
	// OutputLimit is tools.output_limit_bytes, which bounds the replies in
	// report turns and job listings (a backend bounds its own reply).
	OutputLimit int
	// Policy and AutoApprove are the session's approval policy and its
	// client's auto_approve: a background job has no person to ask, so the
	// requests its agent relays get Policy.Unattended's answer.
	Policy      approval.Policy
	AutoApprove bool
	// OnForget, when set, is called with the agent and CLI session id of
	// each conversation the session forgets (evicted, expired, or at
	// Close), so the conversation marker that keeps `scv agents gc` off
	// its transcript can go (records.UnmarkConversation). It is called
	// without the Set's lock held.
	OnForget func(agent, cliSession string)
	// Host is the session, which starts report turns; nil sends no
	// reports (results stay available through agent_status).
	Host Host
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// Logger logs what the model cannot act on; nil discards.
	Logger *slog.Logger
}

// AgentDefaults are the user's notes on one agent ([agents.<name>]).
type AgentDefaults struct {
	// UseFor is the user's one-line note on when to use the agent.
	UseFor string
	// Model and Effort are the selections to pass for that work, or for
	// every call when UseFor is empty.
	Model, Effort string
}

// Host is the session the tools belong to, which starts the turns that
// report background jobs (jobs.Host).
type Host = jobs.Host

// unattended answers a request a background job's agent relays.
func (s *Set) unattended(_ context.Context, risk protocol.Risk, _ string) bool {
	p := s.opts.Policy
	if p == "" {
		p = approval.OnRisk
	}
	return p.Unattended(risk, s.opts.AutoApprove)
}

// Set is the agent tools of one session.
type Set struct {
	opts    Options
	offered []delegate.Backend
	byName  map[string]delegate.Backend
	names   []string // offered agent names, in adapter order
	def     string   // the default agent, "" for none
	spec    tools.Spec
	tools   []tools.Tool
	log     *slog.Logger
	jobs    *jobs.Manager

	mu      sync.Mutex
	closed  bool                 // guarded by mu
	convs   *conversations.Table // guarded by mu
	handles map[string]bool      // guarded by mu; delegation handles issued
}

// New returns the agent tools of a session.
func New(opts Options) *Set {
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = DefaultMaxTimeout
	}
	opts.MaxTimeout = max(opts.MaxTimeout, time.Second)
	opts.DefaultTimeout = min(opts.DefaultTimeout, opts.MaxTimeout)
	if opts.MaxConversations <= 0 {
		opts.MaxConversations = DefaultMaxConversations
	}
	if opts.ConversationIdle <= 0 {
		opts.ConversationIdle = DefaultConversationIdle
	}
	if opts.MaxBackground < 0 {
		opts.MaxBackground = 0
	}
	if opts.OutputLimit <= 0 {
		opts.OutputLimit = defaultOutputLimit
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Set{opts: opts, byName: map[string]delegate.Backend{}, log: log, handles: map[string]bool{}}
	if opts.Depth < opts.MaxDepth {
		for _, b := range opts.Backends {
			name := b.Descriptor().Name
			if name == "" || s.byName[name] != nil {
				continue
			}
			s.byName[name] = b
			s.offered = append(s.offered, b)
			s.names = append(s.names, name)
		}
	}
	s.convs = conversations.New(conversations.Options{
		Max: opts.MaxConversations, Idle: opts.ConversationIdle, Agents: s.takers(takesSession), Now: opts.Now,
	})
	s.jobs = jobs.New(jobs.Options{
		Max: opts.MaxBackground, Host: opts.Host, Report: s.reportPrompt, SessionID: opts.SessionID, Now: opts.Now, Logger: log,
	})
	for _, p := range opts.Prefer {
		if s.byName[p] != nil {
			s.def = p
			break
		}
	}
	if len(s.offered) > 0 {
		s.spec = s.agentSpec()
		s.tools = []tools.Tool{&agentTool{s}}
		if opts.MaxBackground > 0 {
			s.tools = append(s.tools, &waitTool{s}, &statusTool{s}, &cancelTool{s})
		}
	}
	return s
}

// Tools returns the session's agent tools: agent, and with background
// jobs on agent_wait, agent_status and agent_cancel; none when no agent is
// offered or the depth limit is reached.
func (s *Set) Tools() []tools.Tool { return slices.Clone(s.tools) }

// Offered returns the names of the offered agents, in adapter order.
func (s *Set) Offered() []string { return slices.Clone(s.names) }

// Default returns the agent a call naming none runs on, or "".
func (s *Set) Default() string { return s.def }

// Outstanding returns how many jobs are running or finished but not yet
// reported to the model, for a client (scv exec) that stays open until
// every job it started has been reported.
func (s *Set) Outstanding() int { return s.jobs.Outstanding() }

// ScheduleReports asks the host for a report turn again when finished
// jobs the model has not seen are waiting, for a session that dropped its
// pending server-started turns (such as at session.clear). It reports
// whether it asked.
func (s *Set) ScheduleReports() bool { return s.jobs.ScheduleReports() }

// Close ends the session's jobs and conversations: it refuses new calls,
// cancels every running job (which stops its agent's processes), waits
// for them until ctx ends, and forgets the conversations. Jobs it cancels
// are not reported.
func (s *Set) Close(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	s.unlock()
	s.jobs.Close(ctx)
	// Handles end with the session.
	s.mu.Lock()
	s.convs.Close()
	s.unlock()
}

// unlock releases s.mu, then tells OnForget of the conversations
// forgotten meanwhile, outside the lock since it touches files.
func (s *Set) unlock() {
	forgotten := s.convs.TakeForgotten()
	s.mu.Unlock()
	if s.opts.OnForget == nil {
		return
	}
	for _, f := range forgotten {
		s.opts.OnForget(f.Agent, f.CLI)
	}
}
