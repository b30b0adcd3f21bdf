// Package mcp is SCV's client of Model Context Protocol servers: the
// servers of [mcp_servers.<name>] start with the server's session runtime
// (in parallel, each bounded by its startup timeout), their tools are
// offered to every tool-enabled session as mcp__<server>__<tool>, and they
// stop with the runtime; Manager.Reconcile starts, restarts and stops them
// to follow a changed configuration without a restart. A server that
// fails never delays or fails a session: its status says why. A stdio
// server that exits is started again with backoff. The protocol is the
// official Go SDK's (github.com/modelcontextprotocol/go-sdk); this package
// adds the process rules, the child environment, the schema checks,
// approvals and output bounds (docs/mcp.md).
package mcp

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
)

// Server states, as status reports them: the protocol's (session.started
// carries them to clients).
const (
	StateStarting   = protocol.MCPStarting
	StateReady      = protocol.MCPReady
	StateFailed     = protocol.MCPFailed
	StateRestarting = protocol.MCPRestarting
	StateDisabled   = protocol.MCPDisabled
	StateStopped    = protocol.MCPStopped
)

// Options configure a Manager.
type Options struct {
	// Servers are the configured servers by name.
	Servers map[string]config.MCPServer
	// Environ is the environment a stdio server's is filtered from
	// (childenv's allow-list plus HOME); nil means os.Environ().
	Environ []string
	// Env resolves values that name variables ($NAME) in env and headers;
	// nil means the process environment.
	Env paths.Env
	// Dir is the directory relative cwd values are resolved against and
	// the working directory of servers without one; empty means the
	// server process's.
	Dir string
	// Backoff is the first delay before a crashed server is started
	// again; it doubles up to MaxBackoff. Zero means 1 s (and 30 s).
	Backoff, MaxBackoff time.Duration
	// MaxRestarts bounds the restarts in a row without a successful start
	// in between; past it the server stays failed. Zero means 5.
	MaxRestarts int
	// SpillMaxBytes bounds the file that keeps a result cut to
	// tools.output_limit_bytes in full (tools.spill_max_bytes, as for
	// the bash tool); zero keeps no file.
	SpillMaxBytes int64
	Logger        *slog.Logger
}

// Status is what clients learn about one server.
type Status struct {
	Name  string
	State string
	// Error says why a failed (or restarting) server is not ready.
	Error string
	// Tools are the names of the tools offered (mcp__<server>__<tool>).
	Tools []string
	// Skipped are the server's tools not offered, with why.
	Skipped []string
	// Restarts counts the starts after the first that succeeded.
	Restarts int
}

// Manager owns the MCP servers of a server process. It exists even with
// no server configured, so that Reconcile can start servers added later.
type Manager struct {
	opts Options
	log  *slog.Logger
	gen  atomic.Uint64

	// mu guards the fields below; Reconcile holds it throughout, so two
	// reconciliations never interleave.
	mu      sync.Mutex
	servers []*server // sorted by name
	ctx     context.Context
	cancel  context.CancelFunc // nil until Start
	closed  bool

	wg sync.WaitGroup
}

// New returns a Manager of the servers in opts; Start starts them.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Env == nil {
		opts.Env = paths.OSEnv()
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.MaxRestarts <= 0 {
		opts.MaxRestarts = 5
	}
	m := &Manager{opts: opts, log: opts.Logger}
	for _, name := range slices.Sorted(maps.Keys(opts.Servers)) {
		m.servers = append(m.servers, newServer(m, name, opts.Servers[name]))
	}
	return m
}

// Start starts every enabled server on a goroutine of its own and returns
// at once; ctx bounds them all, and the servers Reconcile adds later.
func (m *Manager) Start(ctx context.Context) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cancel != nil || m.closed {
		return
	}
	m.ctx, m.cancel = context.WithCancel(ctx)
	for _, s := range m.servers {
		m.launch(s, nil)
	}
}

// launch runs s (a disabled server only gets its state) on a goroutine
// of m.wg, with a context of its own so that Reconcile can stop it alone.
// When after is not nil, s starts only once after is closed: a replaced
// server's process is gone before its successor's starts. m.mu is held.
func (m *Manager) launch(s *server, after <-chan struct{}) {
	if !s.cfg.Enabled {
		s.setState(StateDisabled, nil)
		close(s.done)
		return
	}
	ctx, cancel := context.WithCancel(m.ctx)
	s.cancel = cancel
	m.wg.Go(func() {
		defer close(s.done)
		defer cancel()
		if after != nil {
			select {
			case <-after:
			case <-ctx.Done():
				s.setState(StateStopped, nil)
				return
			}
		}
		s.run(ctx)
	})
}

// Reconcile makes the running servers those of servers, the
// configuration as it is now, without a restart of the runtime: a server
// added (or enabled) starts, one whose settings changed in any way is
// stopped and started again with the new ones, one removed (or disabled)
// is stopped, and the others keep running untouched. It returns at once;
// stopping and starting happen on the servers' goroutines (a successor
// starts once its predecessor has stopped), and the tools' generation
// changes so that each session's next model request sees the new list.
// Before Start it only replaces the configuration Start will start;
// after Close it does nothing.
func (m *Manager) Reconcile(servers map[string]config.MCPServer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	old := make(map[string]*server, len(m.servers))
	for _, s := range m.servers {
		old[s.name] = s
	}
	next := make([]*server, 0, len(servers))
	changed := false
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		cfg := servers[name]
		prev := old[name]
		delete(old, name)
		if prev != nil && reflect.DeepEqual(prev.cfg, cfg) {
			next = append(next, prev)
			continue
		}
		changed = true
		s := newServer(m, name, cfg)
		next = append(next, s)
		if m.cancel == nil {
			continue
		}
		var after <-chan struct{}
		if prev != nil {
			prev.stop()
			after = prev.done
			m.log.Info("MCP server settings changed: starting it again with the new ones", "mcp_server", name, "enabled", cfg.Enabled)
		} else {
			m.log.Info("MCP server added to the configuration", "mcp_server", name, "enabled", cfg.Enabled)
		}
		m.launch(s, after)
	}
	for _, prev := range slices.SortedFunc(maps.Values(old), func(a, b *server) int { return strings.Compare(a.name, b.name) }) {
		changed = true
		prev.stop()
		m.log.Info("MCP server removed from the configuration: stopping it", "mcp_server", prev.name)
	}
	m.servers = next
	if changed {
		m.gen.Add(1)
	}
}

// Close stops every server (closing each connection, then its process
// tree) and waits for their goroutines, those of servers Reconcile
// stopped included.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	if m.cancel != nil {
		m.cancel()
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// list is a snapshot of the configured servers.
func (m *Manager) list() []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servers
}

// Settle waits until no server is starting any more (each is ready,
// failed or disabled), or ctx ends. Each wait is bounded by the server's
// startup timeout (and, for a server Reconcile replaced, by its
// predecessor's stop), so the first model request of a session waits at
// most that long for tools that are on their way.
func (m *Manager) Settle(ctx context.Context) {
	for _, s := range m.list() {
		select {
		case <-s.settled:
		case <-ctx.Done():
			return
		}
	}
}

// Statuses returns every configured server's status, by name.
func (m *Manager) Statuses() []Status {
	servers := m.list()
	out := make([]Status, 0, len(servers))
	for _, s := range servers {
		out = append(out, s.status())
	}
	return out
}

// Servers returns every configured server's status as session.started
// carries it (v4), by name; nil when none is configured. It is nil-safe:
// a runtime may have no Manager.
func (m *Manager) Servers() []protocol.MCPServer {
	if m == nil {
		return nil
	}
	sts := m.Statuses()
	if len(sts) == 0 {
		return nil
	}
	out := make([]protocol.MCPServer, 0, len(sts))
	for _, st := range sts {
		out = append(out, protocol.MCPServer{Name: st.Name, State: st.State, Tools: append([]string{}, st.Tools...), Error: st.Error})
	}
	return out
}

// Tools returns the tools every ready server offers, by server name then
// tool name (tools.Source).
func (m *Manager) Tools() []tools.SourceTool {
	var out []tools.SourceTool
	for _, s := range m.list() {
		out = append(out, s.offered()...)
	}
	return out
}

// Generation changes whenever a server's tools change (tools.Source).
func (m *Manager) Generation() uint64 { return m.gen.Load() }

// Len is the number of configured servers.
func (m *Manager) Len() int { return len(m.list()) }
