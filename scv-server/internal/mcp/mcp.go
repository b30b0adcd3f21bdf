// Package mcp is SCV's client of Model Context Protocol servers: the
// servers of [mcp_servers.<name>] start with the server's session runtime
// (in parallel, each bounded by its startup timeout), their tools are
// offered to every tool-enabled session as mcp__<server>__<tool>, and they
// stop with the runtime. A server that fails never delays or fails a
// session: its status says why. A stdio server that exits is started again
// with backoff. The protocol is the official Go SDK's
// (github.com/modelcontextprotocol/go-sdk); this package adds the process
// rules, the child environment, the schema checks, approvals and output
// bounds (docs/mcp.md).
package mcp

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"slices"
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

// Manager owns the MCP servers of a server process.
type Manager struct {
	opts    Options
	log     *slog.Logger
	servers []*server // sorted by name
	gen     atomic.Uint64

	cancel context.CancelFunc
	wg     sync.WaitGroup
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
// at once; ctx bounds them all.
func (m *Manager) Start(ctx context.Context) {
	ctx, m.cancel = context.WithCancel(ctx)
	for _, s := range m.servers {
		if !s.cfg.Enabled {
			s.setState(StateDisabled, nil)
			continue
		}
		m.wg.Go(func() { s.run(ctx) })
	}
}

// Close stops every server (closing each connection, then its process
// tree) and waits for their goroutines.
func (m *Manager) Close() {
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
}

// Settle waits until no server is starting any more (each is ready,
// failed or disabled), or ctx ends. Each wait is bounded by the server's
// startup timeout, so the first model request of a session waits at most
// that long for tools that are on their way.
func (m *Manager) Settle(ctx context.Context) {
	for _, s := range m.servers {
		select {
		case <-s.settled:
		case <-ctx.Done():
			return
		}
	}
}

// Statuses returns every configured server's status, by name.
func (m *Manager) Statuses() []Status {
	out := make([]Status, 0, len(m.servers))
	for _, s := range m.servers {
		out = append(out, s.status())
	}
	return out
}

// Servers returns every configured server's status as session.started
// carries it (v4), by name; nil when none is configured. It is nil-safe:
// a runtime without MCP servers has no Manager.
func (m *Manager) Servers() []protocol.MCPServer {
	if m == nil || len(m.servers) == 0 {
		return nil
	}
	out := make([]protocol.MCPServer, 0, len(m.servers))
	for _, st := range m.Statuses() {
		out = append(out, protocol.MCPServer{Name: st.Name, State: st.State, Tools: append([]string{}, st.Tools...), Error: st.Error})
	}
	return out
}

// Tools returns the tools every ready server offers, by server name then
// tool name (tools.Source).
func (m *Manager) Tools() []tools.SourceTool {
	var out []tools.SourceTool
	for _, s := range m.servers {
		out = append(out, s.offered()...)
	}
	return out
}

// Generation changes whenever a server's tools change (tools.Source).
func (m *Manager) Generation() uint64 { return m.gen.Load() }

// Len is the number of configured servers.
func (m *Manager) Len() int { return len(m.servers) }
