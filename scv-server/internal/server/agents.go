package server

import (
	"context"
	"log/slog"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/agenttool"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport/nested"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport/oneshot"
	"github.com/scv-cli/scv/scv-server/internal/instructions"
	"github.com/scv-cli/scv/scv-server/internal/mcp"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/config"
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
	// mcp runs the MCP servers whose tools every tool-enabled session
	// offers; nil without [mcp_servers].
	mcp *mcp.Manager
}

// withMCP adds the MCP servers' tools to the registries fn builds.
func (e *extensions) withMCP(fn session.ToolsFunc) session.ToolsFunc {
	if e.mcp == nil || fn == nil {
		return fn
	}
	return func(ws string) (*tools.Registry, error) {
		reg, err := fn(ws)
		if reg != nil {
			reg.AddSource(e.mcp)
		}
		return reg, err
	}
}

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
		r := oneshot.New(oneshot.Options{
			Home:        e.home,
			Env:         e.opts.Env,
			BaseEnv:     e.opts.AgentEnv,
			Permissions: maps.Clone(perms),
			OutputLimit: int(cfg.Tools.OutputLimitBytes),
			Adapters:    e.opts.Adapters,
			Logger:      e.log,
		})
		offered := r.Offered(e.opts.Env)
		// The nested SCV is a session's own: one scv server --stdio per
		// conversation, ended with its conversation or the session.
		nr := nested.New(nested.Options{
			Home:        e.home,
			Env:         e.opts.Env,
			BaseEnv:     e.opts.AgentEnv,
			OutputLimit: int(cfg.Tools.OutputLimitBytes),
			Idle:        cfg.Agent.ConversationIdle(),
			Logger:      e.log.With("session", info.ID),
		})
		if nr.Offered() {
			offered = append(offered, nr)
		}
		if len(offered) == 0 {
			return session.Extension{}, nil
		}
		var host agenttool.Host
		if info.Version >= 3 {
			host = info.Session
		}
		set := agenttool.New(agenttool.Options{
			Backends:         offered,
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
					nr.Forget(cliSession)
					return
				}
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
		return session.Extension{Tools: set.Tools(), System: system,
			Close: func(ctx context.Context) { set.Close(ctx); nr.Close() },
			// Jobs running or not yet reported keep the session open
			// without clients and hold a planned restart, and so do a
			// nested SCV's own jobs.
			Busy: func() bool { return set.Outstanding() > 0 || nr.Busy() }}, nil
	}
}
