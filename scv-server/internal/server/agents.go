package server

import (
	"context"
	"log/slog"
	"maps"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/agenttool"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport/acp"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport/nested"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport/oneshot"
	"github.com/scv-cli/scv/scv-server/internal/instructions"
	"github.com/scv-cli/scv/scv-server/internal/mcp"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/paths"
)

// extensions builds the session-bound tools of delegated agents: the
// `agent` tool and its job tools, over the agents installed (and, where
// SCV can tell from a file, signed in) when each session starts.
type extensions struct {
	home string
	opts Options
	log  *slog.Logger
	// depth is the server's own delegation depth (SCV_DELEGATION_DEPTH,
	// set when a delegated agent runs scv), a floor for every session's.
	depth int
	// mcp runs the [mcp_servers] of the configuration, whose tools every
	// tool-enabled session offers. It always exists, also with no server
	// configured: the App Server reconciles it with the configuration at
	// each turn/start (appHost.tools).
	mcp *mcp.Manager
	// mcpServers is the [mcp_servers] the runtime last reconciled mcp
	// with (reconcileMCP): what the NDJSON sessions' live views offer.
	mcpServers atomic.Pointer[map[string]config.MCPServer]
}

// reconcileMCP makes the running MCP servers those of servers, a newer
// configuration's, and the live views of NDJSON sessions follow them.
func (e *extensions) reconcileMCP(servers map[string]config.MCPServer) {
	e.mcpServers.Store(&servers)
	e.mcp.Reconcile(servers)
}

// withMCP adds the MCP servers' tools to the registries fn builds: those
// of the running servers that servers (the [mcp_servers] of the
// configuration the registry is built from) offers. A server removed or
// disabled in servers, or a tool turned off there, is not offered; nor is
// a server added there that the runtime does not run (yet). With live
// (the NDJSON protocol's sessions, which do not rebuild their tools per
// turn as App Server threads do) the view follows the configuration the
// runtime last reconciled with instead (configwatch.go).
func (e *extensions) withMCP(fn session.ToolsFunc, servers map[string]config.MCPServer, live bool) session.ToolsFunc {
	if e.mcp == nil || fn == nil || (len(servers) == 0 && !live) {
		return fn
	}
	src := mcpView{m: e.mcp, servers: servers}
	if live {
		src = mcpView{m: e.mcp, live: &e.mcpServers}
	}
	return func(ws string) (*tools.Registry, error) {
		reg, err := fn(ws)
		if reg != nil {
			reg.AddSource(src)
		}
		return reg, err
	}
}

// mcpView is the part of the running MCP servers' tools that a
// configuration offers. It only narrows: it keeps a registry built from
// one configuration to that configuration's servers and tools while the
// Manager follows a newer one (a running App Server turn, a session that
// started before a reconcile).
type mcpView struct {
	m       *mcp.Manager
	servers map[string]config.MCPServer
	// live, when set, replaces servers with the runtime's latest.
	live *atomic.Pointer[map[string]config.MCPServer]
}

// Tools is the tools.Source list, filtered.
func (v mcpView) Tools() []tools.SourceTool {
	servers := v.servers
	if v.live != nil {
		if p := v.live.Load(); p != nil {
			servers = *p
		}
	}
	var out []tools.SourceTool
	for _, t := range v.m.Tools() {
		if offers(servers, t.Spec.Name) {
			out = append(out, t)
		}
	}
	return out
}

// offers reports whether the configured server of servers whose prefix
// is the longest match of the tool name is enabled and allows the tool.
func offers(servers map[string]config.MCPServer, name string) bool {
	best, tool := "", ""
	for server := range servers {
		if rest, ok := strings.CutPrefix(name, mcp.ToolName(server, "")); ok && len(server) >= len(best) {
			best, tool = server, rest
		}
	}
	sc, ok := servers[best]
	return ok && tool != "" && sc.Enabled && sc.ToolAllowed(tool)
}

// Generation is the tools.Source generation: the servers' own.
func (v mcpView) Generation() uint64 { return v.m.Generation() }

// Settle waits for servers still starting (tools.Registry.Settle).
func (v mcpView) Settle(ctx context.Context) { v.m.Settle(ctx) }

func newExtensions(home string, opts Options, log *slog.Logger) *extensions {
	e := &extensions{home: home, opts: opts, log: log}
	env := opts.Env
	if env == nil {
		env = paths.OSEnv()
	}
	if v := strings.TrimSpace(env.Getenv(delegate.DepthVar)); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 0 {
			// An unreadable depth must not lift the limit: count it as
			// the deepest, which offers no agent tool.
			log.Warn("SCV_DELEGATION_DEPTH is not a non-negative integer; offering no agent tool", "value", v)
			d = math.MaxInt32
		}
		e.depth = d
	}
	return e
}

// extendFunc returns the ExtendFunc of sessions configured by cfg. Tests
// that replace the built-in tools get no agent tools unless they give
// fake adapters.
func (e *extensions) extendFunc(cfg *config.Config) session.ExtendFunc {
	if e.opts.Tools != nil && e.opts.Adapters == nil {
		return nil
	}
	perms := map[string]string{}
	full := map[string]bool{}
	defaults := map[string]agenttool.AgentDefaults{}
	for name, a := range cfg.Agents {
		if a.Permissions != "" {
			perms[name] = a.Permissions
			full[name] = a.Permissions == "full"
		}
		defaults[name] = agenttool.AgentDefaults{UseFor: a.UseFor, Model: a.Model, Effort: a.Effort}
	}
	return func(info session.SessionInfo) (session.Extension, error) {
		info.Depth = max(info.Depth, e.depth)
		if info.Depth >= cfg.Agent.MaxDelegationDepth {
			return session.Extension{}, nil
		}
		rs := e.newRunners(cfg, perms, info.ID)
		if len(rs.offered) == 0 {
			rs.close()
			return session.Extension{}, nil
		}
		var host agenttool.Host
		if info.Version >= 3 {
			host = info.Session
		}
		set := agenttool.New(agenttool.Options{
			Backends:         rs.offered,
			Prefer:           cfg.Agent.Prefer,
			Defaults:         defaults,
			Permissions:      full,
			Workspace:        info.Workspace,
			SessionID:        info.ID,
			Depth:            info.Depth,
			MaxDepth:         cfg.Agent.MaxDelegationDepth,
			DefaultTimeout:   cfg.Tools.AgentTimeout(),
			MaxTimeout:       cfg.Tools.MaxTimeout(),
			MaxBackground:    cfg.Agent.MaxBackground,
			MaxConversations: cfg.Agent.MaxConversations,
			ConversationIdle: cfg.Agent.ConversationIdle(),
			OutputLimit:      int(cfg.Tools.OutputLimitBytes),
			Host:             host,
			Policy:           info.Policy,
			AutoApprove:      info.AutoApprove,
			OnForget: func(agent, cliSession string) {
				if agent == delegate.SCV {
					rs.nr.Forget(cliSession)
					return
				}
				// An ACP conversation's key names its live server.
				rs.ar.Forget(cliSession)
				if err := records.UnmarkConversation(e.home, cliSession); err != nil {
					e.log.Warn("Could not remove a conversation marker", "err", err)
				}
			},
			Logger: e.log.With("session", info.ID),
		})
		var system string
		if body := set.SystemSection(); body != "" {
			system = instructions.ExtraSection(instructions.Section{Title: agenttool.SectionTitle, Body: body})
		}
		closeAll := func(ctx context.Context) {
			set.Close(ctx)
			rs.close()
		}
		return session.Extension{Tools: set.Tools(), System: system, Close: closeAll,
			// Jobs running or not yet reported keep the session open
			// without clients and hold a planned restart, and so do a
			// nested SCV's own jobs.
			Busy: func() bool { return set.Outstanding() > 0 || rs.nr.Busy() }}, nil
	}
}

// sessionRunners are one session's backends: the agent CLIs once per turn,
// their ACP servers and nested SCVs once per conversation.
type sessionRunners struct {
	ar      *acp.Runner
	nr      *nested.Runner
	offered []delegate.Backend
}

// newRunners builds the backends a session starting now offers, by each
// agent's transport, the nested SCV last.
func (e *extensions) newRunners(cfg *config.Config, perms map[string]string, sessionID string) sessionRunners {
	table := withCommands(e.opts.Adapters, cfg.Agents)
	r := oneshot.New(oneshot.Options{
		Home:        e.home,
		Env:         e.opts.Env,
		BaseEnv:     e.opts.AgentEnv,
		Permissions: maps.Clone(perms),
		OutputLimit: int(cfg.Tools.OutputLimitBytes),
		Adapters:    table,
		Logger:      e.log,
	})
	ar := acp.New(acp.Options{
		Home:        e.home,
		Env:         e.opts.Env,
		BaseEnv:     e.opts.AgentEnv,
		Permissions: maps.Clone(perms),
		OutputLimit: int(cfg.Tools.OutputLimitBytes),
		Adapters:    e.opts.Adapters,
		Logger:      e.log,
		Idle:        cfg.Agent.ConversationIdle(),
	})
	offered := chooseBackends(r, ar, cfg.Agents, e.opts.Env)
	// The nested SCV is a session's own: one scv server --stdio per
	// conversation, ended with its conversation or the session.
	nr := nested.New(nested.Options{
		Home:        e.home,
		Env:         e.opts.Env,
		BaseEnv:     e.opts.AgentEnv,
		OutputLimit: int(cfg.Tools.OutputLimitBytes),
		Idle:        cfg.Agent.ConversationIdle(),
		Logger:      e.log.With("session", sessionID),
	})
	if nr.Offered() {
		offered = append(offered, nr)
	}
	return sessionRunners{ar: ar, nr: nr, offered: offered}
}

// close ends the session's ACP servers and nested SCVs.
func (s sessionRunners) close() {
	s.ar.Close()
	s.nr.Close()
}

// chooseBackends returns the backends a session starting now offers, in
// adapter order, one per agent by its [agents.<name>] transport (tools.md,
// "Agent Client Protocol transport"): "auto" runs the agent's ACP server
// when it resolves and no custom command is set, else its CLI once per
// turn; "acp" only its ACP server (the agent is not offered without it);
// "resume" only its CLI.
func chooseBackends(r *oneshot.Runner, ar *acp.Runner, agents map[string]config.AgentSettings, env paths.Env) []delegate.Backend {
	perTurn := map[string]delegate.Backend{}
	for _, b := range r.Offered(env) {
		perTurn[b.Descriptor().Name] = b
	}
	var out []delegate.Backend
	for _, name := range r.Names() {
		a := agents[name]
		transport := a.EffectiveTransport()
		overACP := false
		if _, hasACP := ar.Backend(name); hasACP {
			switch transport {
			case config.TransportACP:
				overACP = true
			case config.TransportAuto:
				overACP = a.Command == "" && ar.Installed(name, env)
			}
		}
		switch {
		case overACP && ar.Offerable(name, env):
			b, _ := ar.Backend(name)
			out = append(out, b)
		case overACP || transport == config.TransportACP:
			// Required and missing, or signed out by a file check.
		case perTurn[name] != nil:
			out = append(out, perTurn[name])
		}
	}
	return out
}

// withCommands returns the adapter table (nil: the built-in one) with
// each [agents.<name>] command in place of the built-in executable: an
// absolute path as is, a name looked up like the built-in one.
func withCommands(table []adapters.Adapter, agents map[string]config.AgentSettings) []adapters.Adapter {
	custom := false
	for _, a := range agents {
		custom = custom || a.Command != ""
	}
	if !custom {
		return table
	}
	if table == nil {
		table = adapters.All()
	}
	out := make([]adapters.Adapter, len(table))
	for i, a := range table {
		if c := agents[a.Name].Command; c != "" {
			if filepath.IsAbs(c) {
				a.Path = c
			} else {
				a.Executable, a.Path = c, ""
			}
		}
		out[i] = a
	}
	return out
}
