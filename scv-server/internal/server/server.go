// Package server wires a server process together: configuration, the
// provider, the tools, the session manager and a connection dialect over a
// transport. It holds no protocol or session logic of its own.
package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/delegate/reconcile"
	"github.com/scv-cli/scv/scv-server/internal/dialect/acp"
	"github.com/scv-cli/scv/scv-server/internal/dialect/appserver"
	"github.com/scv-cli/scv/scv-server/internal/dialect/ndjson"
	"github.com/scv-cli/scv/scv-server/internal/mcp"
	"github.com/scv-cli/scv/scv-server/internal/netguard"
	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/provider/demo"
	"github.com/scv-cli/scv/scv-server/internal/provider/openai"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/scv-server/internal/transport/stdio"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/version"
)

// Options configure a server process.
type Options struct {
	// Env is the process environment (SCV_HOME, keys, overrides).
	Env paths.Env
	// ApprovalPolicy overrides tools.approval_policy when not empty.
	ApprovalPolicy string
	Logger         *slog.Logger
	// Tools builds each session's tools; nil means the built-in tools.
	Tools session.ToolsFunc
	// MaxHistoryBytes and MaxHistoryItems override the history bounds
	// (tests only; zero keeps the protocol's transcript bounds).
	MaxHistoryBytes int64
	MaxHistoryItems int
	// Grace overrides the protocol's 3 s and StallLimit the slow-client
	// limit (ndjson.DefaultStallLimit); tests only.
	Grace      time.Duration
	StallLimit time.Duration
	// DetachWait overrides how long a daemon's connection waits for room
	// in its queue before its client is detached (ndjson.DefaultDetachWait);
	// tests only.
	DetachWait time.Duration

	// WebPolicy replaces web_fetch's address policy (tests: a policy that
	// treats the test's loopback servers as public).
	WebPolicy *netguard.Policy
	// WebRootCAs replaces the certificate authorities web_fetch trusts
	// (tests: the httptest TLS server's certificate).
	WebRootCAs *x509.CertPool
	// BraveURL replaces the Brave Search API endpoint (tests).
	BraveURL string
	// Adapters replaces the delegated-agent adapter table (tests run fake
	// agents through /bin/bash); nil is the built-in table.
	Adapters []adapters.Adapter
	// AgentEnv is the environment delegated agents start from before the
	// scrub; nil is the server's own environment.
	AgentEnv []string

	// Provider, Model and TimeoutSeconds override the active provider, its
	// model and its request timeout (scv app-server's flags) when set.
	Provider       string
	Model          string
	TimeoutSeconds int
}

// autoPolicyWarning is logged, and shown to v4 clients, when every call
// runs without asking.
const autoPolicyWarning = "Approval policy is auto: every tool call runs without asking; use it only for trusted automation"

// ErrConfig marks a configuration the server cannot start with.
var ErrConfig = errors.New("configuration error")

// Runtime is a configured session runtime, ready to serve connections.
type Runtime struct {
	Config   *config.Config
	Provider provider.Provider
	Manager  *session.Manager
	// MCP runs the [mcp_servers] of the configuration (none, possibly).
	MCP  *mcp.Manager
	log  *slog.Logger
	opts Options
	home string
	// sk and ext build sessions' tools; the App Server rebuilds a thread's
	// tools with them for each turn (appserver.go).
	sk  *sessionSkills
	ext *extensions

	// catalog lists every configured provider's models and builds the
	// providers sessions switch to.
	catalog *catalog

	appOnce sync.Once
	threads *appserver.Registry // the App Server's threads, made once
}

// New loads the configuration and builds the runtime. Configuration
// problems are reported before any client input is read.
func New(opts Options) (*Runtime, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Env == nil {
		opts.Env = paths.OSEnv()
	}
	log := opts.Logger
	home, err := paths.Home(opts.Env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	// Stamped before it is read: a change in between is seen at the first
	// turn (configwatch.go).
	watch := newConfigWatch(home, opts.Env, nil, log)
	cfg, diags, err := config.Load(config.LoadOptions{Home: home, Env: opts.Env})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var warnings []string
	for _, d := range diags {
		log.Warn(d.String())
		warnings = append(warnings, d.String())
	}
	policyName := string(cfg.Tools.ApprovalPolicy)
	if opts.ApprovalPolicy != "" {
		policyName = opts.ApprovalPolicy
	}
	policy, err := approval.ParsePolicy(policyName)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if policy == approval.Auto {
		log.Warn(autoPolicyWarning)
		warnings = append(warnings, autoPolicyWarning)
	}
	if err := overrideProvider(cfg, opts); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	prov, err := NewProvider(cfg, opts.Env, log)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if prov.Name() == demo.Name {
		log.Info("No provider is configured: running the built-in demo model")
	}
	if err := checkWeb(cfg, opts); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sk := newSessionSkills(home, log)
	ext := newExtensions(home, opts, log)
	// The servers start with the runtime, in parallel; sessions do not
	// wait for them (a turn's first request waits at most each server's
	// startup timeout for those still starting). The Manager exists with
	// no server too, so that an App Server turn can add servers
	// (Reconcile).
	cwd, _ := os.Getwd()
	ext.mcp = mcp.New(mcp.Options{Servers: cfg.MCPServers, Environ: opts.AgentEnv, Env: opts.Env, Dir: cwd, SpillMaxBytes: cfg.Tools.SpillMaxBytes,
		Logger: log.With("component", "mcp")})
	ext.mcp.Start(context.Background())
	ext.mcpServers.Store(&cfg.MCPServers)
	watch.reconcile = ext.reconcileMCP
	base := sk.withSkills(workspaceConfig(home, cfg, policy, opts, ext, true), cfg.Skills, opts.Tools != nil)
	base.Warnings = warnings
	cat := newCatalog(cfg, opts.Env, log, prov)
	mgr := session.NewManager(session.Options{
		Provider:     prov,
		ModelContext: cat.ContextMaxTokens,
		Tools:        base.Tools,
		Workspace: func(ws string) (session.WorkspaceConfig, error) {
			return projectConfig(home, ws, opts, base, sk, ext, log)
		},
		System:          systemFunc(cfg.Agent.SystemPrompt, sk, log),
		Policy:          policy,
		MaxSteps:        cfg.Agent.MaxSteps,
		StateDir:        paths.StateDir(home),
		CompactShare:    float64(cfg.Agent.CompactThresholdPercent) / 100,
		KeepTurns:       cfg.Agent.CompactKeepTurns,
		MaxHistoryBytes: opts.MaxHistoryBytes,
		MaxHistoryItems: opts.MaxHistoryItems,
		ToolTimeout:     base.ToolTimeout,
		MaxToolTimeout:  base.MaxToolTimeout,
		ToolOutputLimit: base.ToolOutputLimit,
		BeforeTurn:      watch.check,
		Logger:          log,
	})
	return &Runtime{Config: cfg, Provider: prov, Manager: mgr, MCP: ext.mcp, log: log, opts: opts, home: home, sk: sk, ext: ext, catalog: cat}, nil
}

// projectConfig returns the configuration of a session in workspace ws:
// base when the workspace has no project file, otherwise the configuration
// loaded again with the project file merged in (only its [tools] and [skills] options
// take effect; the loader warns about the rest, and those warnings are
// logged). A file that does not load refuses the session.
func projectConfig(home, ws string, opts Options, base session.WorkspaceConfig, sk *sessionSkills, ext *extensions, log *slog.Logger) (session.WorkspaceConfig, error) {
	file := paths.ProjectConfigFile(ws)
	if _, err := os.Lstat(file); errors.Is(err, fs.ErrNotExist) {
		return base, nil
	}
	cfg, diags, err := config.Load(config.LoadOptions{Home: home, Workspace: ws, Env: opts.Env})
	var warnings []string
	for _, d := range diags {
		log.Warn(d.String(), "workspace", ws)
		warnings = append(warnings, d.String())
	}
	if err != nil {
		return session.WorkspaceConfig{}, fmt.Errorf("the configuration of the workspace %s is invalid, so the session was not started: %w", ws, err)
	}
	policy, err := approval.ParsePolicy(string(cfg.Tools.ApprovalPolicy))
	if err != nil {
		return session.WorkspaceConfig{}, err
	}
	if opts.ApprovalPolicy != "" {
		override, err := approval.ParsePolicy(opts.ApprovalPolicy)
		if err != nil {
			return session.WorkspaceConfig{}, err
		}
		// The override replaces the user's policy; a project may still
		// make it stricter.
		if cfg.Sources["tools.approval_policy"].Kind != config.SourceProject || strictness(override) > strictness(policy) {
			policy = override
		}
	}
	log.Info("Project configuration applied", "workspace", ws, "file", file, "policy", policy)
	if policy == approval.Auto {
		warnings = append(warnings, autoPolicyWarning)
	}
	wc := sk.withSkills(workspaceConfig(home, cfg, policy, opts, ext, true), cfg.Skills, opts.Tools != nil)
	wc.Warnings = warnings
	return wc, nil
}

// strictness orders approval policies from the loosest (auto) to the
// strictest (never).
func strictness(p approval.Policy) int {
	switch p {
	case approval.Auto:
		return 0
	case approval.Never:
		return 2
	default:
		return 1
	}
}

// workspaceConfig is the session configuration of cfg and policy;
// opts.Tools, when not nil, replaces the built-in tools (tests).
func workspaceConfig(home string, cfg *config.Config, policy approval.Policy, opts Options, ext *extensions, liveMCP bool) session.WorkspaceConfig {
	tc := cfg.Tools
	toolsFn := opts.Tools
	if toolsFn == nil {
		toolsFn = toolsFor(home, cfg, opts)
	}
	return session.WorkspaceConfig{
		Policy:          policy,
		ToolTimeout:     tc.CommandTimeout(),
		MaxToolTimeout:  tc.MaxTimeout(),
		ToolOutputLimit: int(tc.OutputLimitBytes),
		Extend:          combineExtend(ext.extendFunc(cfg), chatExtend(home, cfg, opts)),
		Tools:           ext.withMCP(toolsFn, cfg.MCPServers, liveMCP),
		HostedWebSearch: cfg.Web.Search == config.SearchProvider,
		Allow:           allowRules(cfg),
	}
}

// allowRules are the rules of tools.allow as sessions hold them, with
// where they come from in their description.
func allowRules(cfg *config.Config) []protocol.Rule {
	var out []protocol.Rule
	from := cfg.Sources["tools.allow"].String()
	for _, key := range cfg.Tools.Allow {
		family, rest, _ := strings.Cut(key, ":")
		var tool, what string
		switch family {
		case "bash":
			tool, what = "bash", "bash commands that start with `"+rest+"`"
		case "fs":
			tool, what = "write", "writes and edits under "+rest+" (write, edit)"
			if key == "fs:./" {
				what = "writes and edits anywhere in the workspace (write, edit)"
			}
		case "mcp":
			server, name, _ := strings.Cut(rest, "/")
			tool, what = "mcp", "calls of "+name+" from MCP server "+server
			if name == "" {
				what = "calls of every tool from MCP server " + server
			}
		}
		out = append(out, protocol.Rule{Tool: tool, Key: key, Description: what + ", from tools.allow (" + from + ")"})
	}
	return out
}

// NewProvider builds the active provider of cfg.
func NewProvider(cfg *config.Config, env paths.Env, log *slog.Logger) (provider.Provider, error) {
	name, _, isDemo := cfg.ActiveProvider()
	if isDemo {
		return demo.New(), nil
	}
	p, err := buildProvider(cfg, name, env, log)
	if errors.Is(err, config.ErrAPIKeyMissing) {
		pc := cfg.Providers[name]
		// Restarting the server cannot help: it inherits the same
		// environment. Say what to change, and where it was configured.
		src := cfg.Sources["providers."+name+".api_key_env"]
		file := src.File
		if h, herr := paths.Home(env); file == "" && herr == nil {
			file = paths.ConfigFile(h)
		}
		return nil, fmt.Errorf("provider %q needs an API key in the environment variable %s (api_key_env, from %s), which is not set where SCV was started. "+
			"Quit, export %s=<your key> and start SCV again; or set api_key = \"<your key>\" in [providers.%s] of %s (chmod 600 it); "+
			"or remove [provider] active to use the demo model (%w)", name, pc.APIKeyEnv, src, pc.APIKeyEnv, name, file, config.ErrAPIKeyMissing)
	}
	return p, err
}

// buildProvider builds the configured provider name (not the demo).
func buildProvider(cfg *config.Config, name string, env paths.Env, log *slog.Logger) (provider.Provider, error) {
	pc := cfg.Providers[name]
	if pc.Kind != config.KindOpenAI {
		return nil, fmt.Errorf("provider %q has kind %q, which this server cannot run; use kind = \"openai\"", name, pc.Kind)
	}
	key, err := config.ResolveAPIKey(pc, env)
	if err != nil {
		return nil, err
	}
	retries := pc.MaxRetries
	if retries == 0 {
		retries = -1 // the config's 0 means never; the provider's 0 means its default
	}
	return openai.New(openai.Config{
		Name:             name,
		BaseURL:          pc.BaseURL,
		APIKey:           key,
		Model:            pc.Model,
		ContextMaxTokens: pc.ContextMaxTokens,
		Timeout:          pc.Timeout(),
		IdleTimeout:      pc.StreamIdleTimeout(),
		Headers:          pc.Headers,
		MaxRetries:       retries,
		Wire:             string(pc.WireAPI),
		Logger:           log,
		UserAgent:        version.UserAgent(),
	})
}

// Serve runs one connection over t. The end of the connection ends the
// runtime's turns: this is the stdio model, where the client's EOF ends the
// server.
func (r *Runtime) Serve(ctx context.Context, t ndjson.Transport) error {
	defer r.Close()
	return ndjson.Serve(ctx, r.Manager, t, r.connOptions(true))
}

// ServeShared runs one connection of a daemon over t: the sessions it
// starts or attaches to outlive it, and a client too slow for its queue is
// detached from them instead of ending them (docs/daemon.md).
// status, when not nil, answers daemon.status.
func (r *Runtime) ServeShared(ctx context.Context, t ndjson.Transport, status func() protocol.DaemonStatusReported) error {
	o := r.connOptions(false)
	o.Status = status
	return ndjson.Serve(ctx, r.Manager, t, o)
}

func (r *Runtime) connOptions(closeManager bool) ndjson.Options {
	return ndjson.Options{
		MaxClientFrameBytes: protocol.MaxClientFrameBytes,
		MaxServerFrameBytes: protocol.MaxServerFrameBytes,
		StallLimit:          r.opts.StallLimit,
		Grace:               r.opts.Grace,
		ServerName:          "scv-server",
		Logger:              r.log,
		CloseManager:        closeManager,
		DetachWait:          r.opts.DetachWait,
		MCPServers:          r.MCP.Servers,
		Models:              r.models,
		Catalog:             r.catalog,
	}
}

// Home returns the instance directory.
func (r *Runtime) Home() string { return r.home }

// Logger returns the runtime's logger.
func (r *Runtime) Logger() *slog.Logger { return r.log }

// Grace returns the grace period turns get to wind down at shutdown.
func (r *Runtime) Grace() time.Duration {
	if r.opts.Grace > 0 {
		return r.opts.Grace
	}
	return 3 * time.Second
}

// Housekeep reconciles the instance's delegation records once, so that the
// orphans of a server that was killed are stopped, and sweeps temporary
// files that interrupted writes left in the state directory (at most once
// an hour: sweepTempsIfDue). It returns how
// many orphaned runs it stopped.
func (r *Runtime) Housekeep(ctx context.Context) int {
	stopped := reconcile.Run(ctx, r.home, r.log)
	sweepTempsIfDue(paths.StateDir(r.home), r.log)
	return stopped
}

// EnableSubreaper makes the process a child subreaper where the system
// has them: descendants that delegated agents leave behind reparent here
// and are reaped.
func (r *Runtime) EnableSubreaper() {
	if err := procgroup.EnableSubreaper(); err != nil && !errors.Is(err, procgroup.ErrUnsupported) {
		r.log.Warn("Cannot become a child subreaper; orphans of delegated agents reparent to init", "err", err)
	}
}

// ServeACP runs one ACP connection over rw (docs/acp.md); like Serve, the
// end of the connection ends the runtime's turns.
func (r *Runtime) ServeACP(ctx context.Context, rw io.ReadWriter) error {
	defer r.Close()
	return acp.Serve(ctx, r.Manager, rw, acp.Options{
		NoProvider:   r.Provider.Name() == demo.Name,
		Models:       r.models,
		CloseManager: true,
		Grace:        r.opts.Grace,
		Logger:       r.log,
	})
}

// Close stops what the runtime runs beside its sessions: the MCP servers.
// Serve and ServeACP call it when their connection (and so the server)
// ends; a daemon calls it once, after its sessions have closed.
func (r *Runtime) Close() {
	if r.MCP != nil {
		r.MCP.Close()
	}
}

// models lists the provider's models for the ACP model option and
// session.models; nil when
// the provider lists none (the provider logs why, once).
func (r *Runtime) models(ctx context.Context) []string {
	l, ok := r.Provider.(provider.ModelLister)
	if !ok {
		return nil
	}
	ids, err := l.ListModels(ctx)
	if err != nil {
		return nil
	}
	return ids
}

// ServeACPShared runs one ACP connection of a daemon over rw: the
// sessions it starts or loads outlive it, like those of ServeShared.
func (r *Runtime) ServeACPShared(ctx context.Context, rw io.ReadWriter) error {
	return acp.Serve(ctx, r.Manager, rw, acp.Options{
		NoProvider: r.Provider.Name() == demo.Name,
		Models:     r.models,
		Grace:      r.opts.Grace,
		Logger:     r.log,
	})
}

// RunACP serves ACP on in and out until the client's input ends, with the
// same start-up work as RunStdio.
func RunACP(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	return run(ctx, opts, func(rt *Runtime, t *stdio.Transport) error { return rt.ServeACP(ctx, t) }, in, out)
}

// RunStdio serves the protocol on in and out until the client's input ends.
// It first makes the process a child subreaper, and alongside the
// connection it housekeeps once (Housekeep), so that the orphans of a
// server that was killed are stopped without delaying this one's start.
func RunStdio(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	return run(ctx, opts, func(rt *Runtime, t *stdio.Transport) error { return rt.Serve(ctx, t) }, in, out)
}

// run builds the runtime and serves one stdio connection with serve.
func run(ctx context.Context, opts Options, serve func(*Runtime, *stdio.Transport) error, in io.Reader, out io.Writer) error {
	rt, err := New(opts)
	if err != nil {
		return err
	}
	rt.EnableSubreaper()
	reconciled := make(chan struct{})
	go func() {
		defer close(reconciled)
		rt.Housekeep(ctx)
	}()
	t := stdio.New(in, out)
	defer t.Close()
	err = serve(rt, t)
	<-reconciled
	return err
}
