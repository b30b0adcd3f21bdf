// Package agenttool holds the delegated-agent tools of a session: `agent`,
// which hands a brief to another agent CLI through its agents.Backend, and
// `agent_wait`, `agent_status` and `agent_cancel`, which manage the
// background jobs `agent` starts (tools.md, "Delegated agents").
//
// A Set belongs to one session. It chooses the agent of each call (the
// agent a `session` handle names, the `agent` argument, then the first
// offered agent of [agent] prefer), refuses bad calls in Prepare, before
// approval and before anything launches, keeps the session's conversation
// handles (codex-2) and the CLI session ids behind them, runs background
// jobs on a context it owns (a turn ending does not stop them), and asks
// the session, through Host, for a server-started turn that reports jobs
// the model has not seen yet. Close cancels every job and waits for them.
//
// Each job runs in one goroutine owned by the Set; it ends when its
// backend's Run returns, which it must once the job's context is
// cancelled (agent_cancel or Close).
package agenttool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/delegate"
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
	// rememberFinished is how many finished jobs a session remembers.
	rememberFinished = 16
	// reportBatch is how many jobs one report turn names.
	reportBatch = 4
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

// Host is the session the tools belong to.
type Host interface {
	// ScheduleServerTurn asks the session for a server-started turn once
	// it is idle and the user's queued prompts have run; build is called
	// when that turn is about to start and returns its origin and prompt,
	// or ok=false to skip it (e.g. the model already saw every result
	// through agent_wait/agent_status). The Set never holds its own lock
	// while calling it, and build may be called from inside it. It is
	// called from a job's goroutine, possibly while or just after the
	// session closes the Set, so it must not wait for anything the
	// caller of Close holds; a closed session refuses it.
	ScheduleServerTurn(build func() (origin protocol.Origin, prompt string, ok bool)) error
}

// unattended answers a request a background job's agent relays.
func (s *Set) unattended(risk protocol.Risk, _ string) bool {
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

	// ctx is the jobs' context: cancelled by Close, not by any turn.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per running job

	mu       sync.Mutex
	closed   bool                     // guarded by mu
	convs    map[string]*conversation // guarded by mu; by handle
	convNext map[string]int           // guarded by mu; last handle number per agent
	handles  map[string]bool          // guarded by mu; delegation handles issued
	jobs     map[string]*job          // guarded by mu; running and remembered jobs
	finished []*job                   // guarded by mu; remembered finished jobs, oldest first
	running  int                      // guarded by mu; jobs running
	jobNext  int                      // guarded by mu
	// forgotten are conversations to tell OnForget of (see unlock).
	forgotten []forgotten // guarded by mu
	// unreported are finished jobs waiting for a report turn, oldest
	// first; a job leaves when a report names it or the model sees it.
	unreported []*job // guarded by mu
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
	ctx, cancel := context.WithCancel(context.Background())
	s := &Set{
		opts: opts, byName: map[string]delegate.Backend{}, log: log, ctx: ctx, cancel: cancel,
		convs: map[string]*conversation{}, convNext: map[string]int{}, handles: map[string]bool{}, jobs: map[string]*job{},
	}
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
func (s *Set) Outstanding() int {
	s.mu.Lock()
	defer s.unlock()
	n := s.running
	for _, j := range s.unreported {
		if !j.seen {
			n++
		}
	}
	return n
}

// ScheduleReports asks the host for a report turn again when finished
// jobs the model has not seen are waiting, for a session that dropped its
// pending server-started turns (such as at session.clear). It reports
// whether it asked.
func (s *Set) ScheduleReports() bool {
	s.mu.Lock()
	waiting := false
	for _, j := range s.unreported {
		waiting = waiting || !j.seen
	}
	ask := waiting && !s.closed && s.opts.Host != nil
	s.unlock()
	if !ask {
		return false
	}
	if err := s.opts.Host.ScheduleServerTurn(s.buildReport); err != nil {
		s.log.Warn("Could not schedule the report of background agent jobs", "session", s.opts.SessionID, "err", err)
		return false
	}
	return true
}

// Close ends the session's jobs and conversations: it refuses new calls,
// cancels every running job (which stops its agent's processes), waits
// for them until ctx ends, and forgets the conversations. Jobs it cancels
// are not reported.
func (s *Set) Close(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	s.unlock()
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn("Background agent jobs did not stop before the session closed", "session", s.opts.SessionID, "err", ctx.Err())
	}
	// Handles end with the session.
	s.mu.Lock()
	for h, c := range s.convs {
		if !c.busy {
			s.forgetLocked(h)
		}
	}
	s.unlock()
}

// live holds the delegation handles of the runs under way in this
// process, across sessions: a record and a process tag are named after the
// handle, so two live runs must never share one.
var live = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

// claimHandle marks h live, or a fresh handle of agent when another run
// holds h, and returns the one claimed.
func claimHandle(agent, h string) string {
	live.Lock()
	defer live.Unlock()
	for live.m[h] {
		h = randomHandle(agent)
	}
	live.m[h] = true
	return h
}

func releaseHandle(h string) {
	live.Lock()
	delete(live.m, h)
	live.Unlock()
}

func randomHandle(agent string) string {
	var b [3]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return agent + "-" + hex.EncodeToString(b[:])
}

// newHandleLocked returns a delegation handle, <agent>-<6 hex>, not yet
// issued in this session nor held by a live run of this process. s.mu
// must be held.
func (s *Set) newHandleLocked(agent string) string {
	for {
		h := randomHandle(agent)
		live.Lock()
		taken := live.m[h]
		live.Unlock()
		if !s.handles[h] && !taken {
			s.handles[h] = true
			return h
		}
	}
}
