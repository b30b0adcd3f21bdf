// Package acp is the Agent Client Protocol transport of delegated agents
// (tools.md, "Agent Client Protocol transport"): a delegate.Backend per
// agent with an ACP server (Claude Code's claude-agent-acp, Codex's
// codex-acp, grok agent stdio, dsh --profile acp) that keeps one server
// process per conversation and sends each call of that conversation as a
// session/prompt, through the ACP Go SDK (github.com/coder/acp-go-sdk).
//
// The Runner (this file) makes the backends and owns the live servers of
// one SCV session; server.go starts, records and stops a server;
// client.go answers the agent's requests (permissions through the
// caller's approval gate, method-not-found for fs/* and terminal/*) and
// turns session/update into progress lines; turn.go runs one call.
//
// The conversation table of the `agent` tool (delegate/conversations)
// decides when a conversation ends: each turn's result names its server by
// Result.CLISession (the server's delegation handle), and the table's
// OnForget hands that key to Forget, which shuts the server down.
package acp

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/scv-cli/scv/shared/paths"
)

// Timing of a server's life (tools.md): a cancelled turn gets CancelGrace
// to answer session/cancel with its stopReason; a server being shut down
// gets StopGrace after its stdin closes, and another after TERM, before
// its group is killed.
const (
	CancelGrace = 2 * time.Second
	StopGrace   = 2 * time.Second
)

// HandshakeTimeout bounds initialize, session/new (with authenticate)
// and the full-access mode of a new conversation: claude-agent-acp starts
// Claude Code in session/new, which takes seconds, never minutes.
var HandshakeTimeout = 2 * time.Minute

// StderrTail is how much of a server's stderr a failed result keeps.
const StderrTail = 2 << 10

// maxError bounds a result's error text.
const maxError = 2 << 10

// Options configure a Runner (every transport takes the same).
type Options = transport.Options

// Runner runs delegated agents over ACP for one SCV session: it owns the
// session's live servers.
type Runner struct {
	opts     Options
	backends []*backend
	log      *slog.Logger

	mu     sync.Mutex
	live   map[string]*server // by key (the server's delegation handle)
	closed bool
	// stops tracks servers being shut down in the background (Forget).
	stops sync.WaitGroup
}

// New returns a Runner.
func New(opts Options) *Runner {
	if opts.Env == nil {
		opts.Env = paths.OSEnv()
	}
	if opts.Instance == "" {
		opts.Instance = opts.Home
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	table := opts.Adapters
	if table == nil {
		table = adapters.All()
	}
	r := &Runner{opts: opts, log: log, live: map[string]*server{}}
	for _, a := range table {
		if a.ACP != nil {
			r.backends = append(r.backends, &backend{r: r, a: a})
		}
	}
	return r
}

// Backend returns the ACP backend of the agent name, whether or not its
// server is installed (Plan reports a missing one); false for an agent
// without an ACP server.
func (r *Runner) Backend(name string) (delegate.Backend, bool) {
	for _, b := range r.backends {
		if b.a.Name == name {
			return b, true
		}
	}
	return nil, false
}

// Installed reports whether the ACP server of the agent name resolves in
// env (nil: the runner's Env).
func (r *Runner) Installed(name string, env paths.Env) bool {
	if env == nil {
		env = r.opts.Env
	}
	b, ok := r.Backend(name)
	if !ok {
		return false
	}
	_, err := b.(*backend).a.LookupACP(env)
	return err == nil
}

// Offerable reports whether a session starting now may offer the agent
// name over ACP: its server resolves, and the sign-in SCV can check from a
// file (signin.Check) does not say it is signed out.
func (r *Runner) Offerable(name string, env paths.Env) bool {
	if !r.Installed(name, env) {
		return false
	}
	if env == nil {
		env = r.opts.Env
	}
	st := signin.Check(r.opts.Home, name, env)
	return !st.Checked || st.SignedIn
}

// Live returns the keys of the live servers, sorted (tests, status).
func (r *Runner) Live() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for k := range r.live {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Forget shuts down the server of a conversation the session forgot
// (key is the conversation's CLISession). It returns at once; Close
// waits for the shutdown. An unknown key is ignored.
func (r *Runner) Forget(key string) {
	r.mu.Lock()
	s := r.live[key]
	delete(r.live, key)
	if s != nil {
		r.stops.Add(1)
	}
	r.mu.Unlock()
	if s == nil {
		return
	}
	go func() {
		defer r.stops.Done()
		s.shutdown()
	}()
}

// Close shuts down every live server and waits for every shutdown.
// Starting a server afterwards fails.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	servers := make([]*server, 0, len(r.live))
	for k, s := range r.live {
		servers = append(servers, s)
		delete(r.live, k)
	}
	r.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.shutdown)
	}
	wg.Wait()
	r.stops.Wait()
}

// errClosed refuses a start after Close.
var errClosed = errors.New("this session is closing, so no ACP server starts")

// add registers a started server under its key.
func (r *Runner) add(s *server) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	r.live[s.key] = s
	return nil
}

// lookup returns the live server of key.
func (r *Runner) lookup(key string) *server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live[key]
}

// drop forgets s (it exited, or its conversation ends) without stopping
// it; it reports whether s was still registered.
func (r *Runner) drop(s *server) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live[s.key] != s {
		return false
	}
	delete(r.live, s.key)
	return true
}

// backend runs one agent over ACP.
type backend struct {
	r *Runner
	a adapters.Adapter
}

// Descriptor implements delegate.Backend: every agent over ACP takes
// session; model and effort as its adapter does (not DeepSeek Harness).
func (b *backend) Descriptor() delegate.Descriptor { return transport.Descriptor(b.a, true) }

func (b *backend) fullPermissions() bool { return b.r.opts.FullPermissions(b.a.Name) }

// Plan implements delegate.Backend: the ACP server a new conversation
// starts (a continued one runs on the server already started, which is
// the same program).
func (b *backend) Plan(call delegate.Call) (delegate.Launch, error) {
	if call.Agent != "" && call.Agent != b.a.Name {
		return delegate.Launch{}, fmt.Errorf("call for %s handed to the %s backend", call.Agent, b.a.Name)
	}
	if call.Model != "" && !b.a.TakesModel() {
		return delegate.Launch{}, fmt.Errorf("%s does not take model: %w", b.a.Name, adapters.ErrUnsupportedOption)
	}
	if call.Effort != "" && !b.a.TakesEffort() {
		return delegate.Launch{}, fmt.Errorf("%s does not take effort: %w", b.a.Name, adapters.ErrUnsupportedOption)
	}
	exe, err := b.a.LookupACP(b.r.opts.Env)
	if err != nil {
		return delegate.Launch{}, fmt.Errorf("%w: %w", delegate.ErrUnavailable, err)
	}
	if call.Dir == "" || call.Dir[0] != '/' {
		return delegate.Launch{}, fmt.Errorf("the directory to run %s in, %q, is not an absolute path", b.a.Name, call.Dir)
	}
	return delegate.Launch{Executable: exe, Args: b.a.ACPArgs(b.fullPermissions()), Dir: call.Dir,
		FullPermissions: b.fullPermissions()}, nil
}
