// Package nested is the nested-SCV transport of delegated agents (tools.md,
// "Nested SCV"): the `scv` agent, a delegate.Backend that keeps one
// `scv server --stdio` per conversation in SCV's private home
// $SCV_HOME/agents/scv and speaks SCV's own protocol to it through the one
// client connection (shared/client): initialize (v3), session.start
// {cwd, delegation_depth: parent+1, model?}, then turn.start per call.
//
// A Runner belongs to one session, as the conversations it serves do. Each
// live nested SCV (live.go) has two goroutines, both ending when its
// process does: the reader, which decodes its events, hands the events of
// the running call's turn to that call (turn.go) and, between calls, denies
// the approval requests of the report turns its own background jobs start
// and counts those jobs; and the watcher, which waits on the process from
// the start, so a nested SCV that exits between turns (by itself or through
// `scv agents kill`) is collected at once, the rest of its process tree is
// stopped and its record removed.
package nested

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/scv-cli/scv/shared/paths"
)

// Defaults and bounds.
const (
	// StopGrace is how long a nested SCV gets after its stdin closes, and
	// a cancelled turn to settle, before its process group is killed.
	StopGrace = 2 * time.Second
	// StderrTail is how much of a nested SCV's stderr is kept for a
	// failure.
	StderrTail = 2 << 10
	// DefaultStartTimeout bounds the handshake of a new nested SCV.
	DefaultStartTimeout = 30 * time.Second
	// ProtocolVersion is the version the nested connection speaks: v3
	// has delegation_depth, tool.progress and the background-report
	// origins; v4 only adds several clients on one session, which a
	// private child never has.
	ProtocolVersion = 3
)

// Descriptor is what the `agent` tool knows of the nested SCV.
var Descriptor = delegate.Descriptor{
	Name:         delegate.SCV,
	Product:      "SCV",
	Summary:      "a nested session for a self-contained sub-task kept out of this context, or work in another project",
	TakesModel:   true,
	TakesSession: true,
}

// adapter describes the `scv` executable for the lookup and the private
// environment the CLI adapters use: searched in ~/.cargo/bin (where
// cargo install puts it), then on PATH.
var adapter = adapters.Adapter{
	Name: delegate.SCV, Product: "SCV", Executable: "scv", InstallDirs: []string{".cargo/bin"},
}

// Options configure a Runner.
type Options struct {
	// Home is SCV_HOME (absolute); the nested SCV's home is
	// Home/agents/scv, records go under Home/state.
	Home string
	// Env is the server's environment for finding `scv` (HOME and PATH);
	// nil is the process environment.
	Env paths.Env
	// BaseEnv is the environment the nested SCV inherits before the scrub
	// (KEY=value); nil is the process environment at each start.
	BaseEnv []string
	// Path, when set, is the absolute program to run instead of the `scv`
	// found on PATH, and Args its arguments instead of "server --stdio"
	// (tests run scv-server --stdio directly).
	Path string
	Args []string
	// Instance names this SCV instance in SCV_PARENT; empty is Home.
	Instance string
	// OutputLimit bounds a reply (tools.output_limit_bytes); 0 is 64 KiB.
	OutputLimit int
	// Idle is agent.conversation_idle_seconds: a nested SCV idle that long
	// with no job of its own counting is shut down. 0 is one day.
	Idle time.Duration
	// StartTimeout bounds the handshake; 0 is DefaultStartTimeout.
	StartTimeout time.Duration
	// Logger receives warnings; nil discards.
	Logger *slog.Logger
}

// Runner is the `scv` backend of one session: it keeps that session's
// nested SCVs, one per conversation, by the nested session's id (the
// conversation's CLI session).
type Runner struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex
	lives  map[string]*live // guarded by mu; by nested session id
	closed bool             // guarded by mu
}

// New returns a Runner.
func New(opts Options) *Runner {
	if opts.Env == nil {
		opts.Env = paths.OSEnv()
	}
	if opts.Instance == "" {
		opts.Instance = opts.Home
	}
	if opts.OutputLimit <= 0 {
		opts.OutputLimit = 64 << 10
	}
	if opts.Idle <= 0 {
		opts.Idle = 24 * time.Hour
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{opts: opts, log: log, lives: map[string]*live{}}
}

// Offered reports whether a session starting now offers the nested SCV:
// its executable resolves and its private home has a provider
// (`scv agents import scv`).
func (r *Runner) Offered() bool {
	if _, err := r.lookup(); err != nil {
		return false
	}
	st := signin.Check(r.opts.Home, delegate.SCV, r.opts.Env)
	return !st.Checked || st.SignedIn
}

func (r *Runner) lookup() (string, error) {
	if r.opts.Path != "" {
		a := adapter
		a.Path = r.opts.Path
		return a.Lookup(r.opts.Env)
	}
	return adapter.Lookup(r.opts.Env)
}

func (r *Runner) args() []string {
	if r.opts.Args != nil {
		return slices.Clone(r.opts.Args)
	}
	return []string{"server", "--stdio"}
}

// Descriptor implements delegate.Backend.
func (r *Runner) Descriptor() delegate.Descriptor { return Descriptor }

// Plan implements delegate.Backend: the `scv server --stdio` a new
// conversation starts, in the call's directory. A missing executable
// wraps delegate.ErrUnavailable; effort is refused.
func (r *Runner) Plan(call delegate.Call) (delegate.Launch, error) {
	if call.Agent != "" && call.Agent != delegate.SCV {
		return delegate.Launch{}, fmt.Errorf("call for %s handed to the scv backend", call.Agent)
	}
	if call.Effort != "" {
		return delegate.Launch{}, errors.New("scv does not take effort; omit it")
	}
	exe, err := r.lookup()
	if err != nil {
		return delegate.Launch{}, fmt.Errorf("%w: %w", delegate.ErrUnavailable, err)
	}
	if !filepath.IsAbs(call.Dir) {
		return delegate.Launch{}, fmt.Errorf("the directory to run scv in, %q, is not an absolute path", call.Dir)
	}
	return delegate.Launch{Executable: exe, Args: r.args(), Dir: call.Dir}, nil
}

// Forget ends the nested SCV of a conversation the session forgot
// (evicted, expired, or at the session's end), given its CLI session (the
// nested session id). It returns once the process is gone.
func (r *Runner) Forget(session string) {
	r.mu.Lock()
	l := r.lives[session]
	delete(r.lives, session)
	r.mu.Unlock()
	if l != nil {
		l.stop()
	}
}

// Close ends every nested SCV of the session and refuses new ones.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	all := make([]*live, 0, len(r.lives))
	for _, l := range r.lives {
		all = append(all, l)
	}
	clear(r.lives)
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range all {
		wg.Go(l.stop)
	}
	wg.Wait()
}

// Busy reports whether a nested SCV has background jobs of its own
// counting: a planned restart waits for them as for a running turn.
func (r *Runner) Busy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lives {
		if l.jobCount() > 0 {
			return true
		}
	}
	return false
}

// drop forgets l when it is still the live nested SCV of its session.
func (r *Runner) drop(l *live) {
	r.mu.Lock()
	if r.lives[l.session] == l {
		delete(r.lives, l.session)
	}
	r.mu.Unlock()
}

// env returns the nested SCV's environment for call: the private
// environment of a delegated agent (the allow-list, the scrub, HOME and
// XDG directories in $SCV_HOME/agents/scv) with SCV_HOME the private home
// itself, where `scv agents import scv` wrote its config.toml, and the
// delegation chain one level down.
func (r *Runner) env(call delegate.Call, home string) ([]string, error) {
	base := r.opts.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	env, err := adapter.PrivateEnv(base, r.opts.Home)
	if err != nil {
		return nil, err
	}
	env = slices.DeleteFunc(env, func(kv string) bool {
		return len(kv) > len(paths.HomeEnv) && kv[:len(paths.HomeEnv)+1] == paths.HomeEnv+"="
	})
	env = append(env, paths.HomeEnv+"="+home)
	self := r.opts.Instance + "/" + call.SessionID + "/" + call.Handle
	return delegate.ChainEnv(env, self, call.Depth), nil
}

// Run implements delegate.Backend: it runs the call as one turn of its
// conversation's nested SCV, starting it for a new conversation.
func (r *Runner) Run(ctx context.Context, call delegate.Call, progress func(string)) delegate.Result {
	res := delegate.Result{Agent: delegate.SCV, Session: call.Conversation, Turn: call.Turn}
	l, res, ok := r.conversation(ctx, call, res)
	if !ok {
		return res
	}
	res.CLISession = l.session
	return l.runTurn(ctx, call, progress, res)
}

// conversation returns the live nested SCV of call's conversation: the
// one its CLI session names, or a new one.
func (r *Runner) conversation(ctx context.Context, call delegate.Call, res delegate.Result) (*live, delegate.Result, bool) {
	if call.ResumeCLISession != "" {
		r.mu.Lock()
		l := r.lives[call.ResumeCLISession]
		r.mu.Unlock()
		if l == nil || l.exited() {
			res.CLISession = call.ResumeCLISession
			return nil, fail(res, delegate.ErrorUnavailable, fmt.Sprintf("conversation %s has ended: its server exited (its nested SCV is gone); omit session to start a new conversation", call.Conversation)), false
		}
		return l, res, true
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return nil, fail(res, delegate.ErrorNone, "this session is closing, so no nested SCV starts; the call was not run"), false
	}
	l, kind, err := r.start(ctx, call)
	if err != nil {
		return nil, fail(res, kind, err.Error()), false
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		l.stop()
		return nil, fail(res, delegate.ErrorNone, "this session is closing, so no nested SCV starts; the call was not run"), false
	}
	r.lives[l.session] = l
	r.mu.Unlock()
	return l, res, true
}

// fail returns res as a failure of kind with the error msg.
func fail(res delegate.Result, kind delegate.ErrorKind, msg string) delegate.Result {
	res.Status, res.Kind, res.Error = delegate.StatusFailed, kind, msg
	if kind == delegate.ErrorSignedOut {
		res.Hint = delegate.SignInHint("SCV", delegate.SCV)
	}
	return res
}
