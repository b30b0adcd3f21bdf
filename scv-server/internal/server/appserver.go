package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/dialect/appserver"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/scv-server/internal/transport/stdio"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
)

// overrideProvider applies the --provider, --model and --timeout-seconds
// overrides to the loaded configuration.
func overrideProvider(cfg *config.Config, opts Options) error {
	if opts.Provider != "" {
		if _, ok := cfg.Providers[opts.Provider]; !ok && opts.Provider != config.DemoProvider {
			return fmt.Errorf("--provider %q: no [providers.%s] table in the configuration; configured: %v", opts.Provider, opts.Provider, cfg.ProviderNames())
		}
		cfg.Provider.Active = opts.Provider
	}
	name, pc, demo := cfg.ActiveProvider()
	if demo {
		return nil
	}
	if opts.Model != "" {
		pc.Model = opts.Model
	}
	if opts.TimeoutSeconds > 0 {
		pc.TimeoutSeconds = opts.TimeoutSeconds
	}
	cfg.Providers[name] = pc
	return nil
}

// Agent keys of App Server threads (docs/app-server.md): the approval
// policy a thread's turns run with.
const (
	AgentKeyDefault    = "default"
	AgentKeyReadOnly   = "read-only"
	AgentKeyFullAccess = "full-access"
)

// appHost resolves App Server turns over SCV's configuration.
type appHost struct{ r *Runtime }

// Resolve reads the configuration again (the user's file and the
// workspace's project file) and maps the thread's agentKey and metadata
// to the turn's model and approval policy.
func (h appHost) Resolve(_ context.Context, req appserver.ResolveRequest) (appserver.Resolution, error) {
	r := h.r
	cfg, diags, err := config.Load(config.LoadOptions{Home: r.home, Workspace: req.Cwd, Env: r.opts.Env})
	if err != nil {
		return appserver.Resolution{}, fmt.Errorf("the configuration does not load: %w", err)
	}
	for _, d := range diags {
		r.log.Debug(d.String(), "workspace", req.Cwd)
	}
	if err := overrideProvider(cfg, r.opts); err != nil {
		return appserver.Resolution{}, err
	}
	var res appserver.Resolution
	switch req.AgentKey {
	case AgentKeyDefault, "":
		name := string(cfg.Tools.ApprovalPolicy)
		if r.opts.ApprovalPolicy != "" {
			name = r.opts.ApprovalPolicy
		}
		if res.Policy, err = approval.ParsePolicy(name); err != nil {
			return appserver.Resolution{}, err
		}
	case AgentKeyReadOnly:
		res.Policy = approval.Never
	case AgentKeyFullAccess:
		res.Policy = approval.Auto
	default:
		return appserver.Resolution{}, fmt.Errorf("unknown agentKey %q: use %q, %q or %q", req.AgentKey, AgentKeyDefault, AgentKeyReadOnly, AgentKeyFullAccess)
	}
	if res.Tools, res.ToolsKey, err = h.tools(cfg, res.Policy); err != nil {
		return appserver.Resolution{}, err
	}
	// The model: the thread's metadata.model, else the configuration's
	// (which may have changed since the server started), when it is for
	// the provider the server runs.
	if name, pc, demo := cfg.ActiveProvider(); !demo && name == r.Provider.Name() && pc.Model != "" {
		res.Model = pc.Model
	}
	if m, ok := req.Metadata["model"]; ok {
		model, isString := m.(string)
		if !isString || model == "" {
			return appserver.Resolution{}, fmt.Errorf("metadata.model must be a model name, not %v", m)
		}
		if ids := r.models(context.Background()); len(ids) > 0 && !slices.Contains(ids, model) {
			return appserver.Resolution{}, fmt.Errorf("metadata.model %q is not a model of the provider (model/list lists them)", model)
		}
		res.Model = model
	}
	return res, nil
}

// tools is the configuration a thread's tools are rebuilt from for a
// turn, as sessions build theirs (workspaceConfig), and a key that changes
// when the parts of cfg that shape the tools do. The session's extension
// (delegated agents, chat tools) stays as it was when the session opened.
func (h appHost) tools(cfg *config.Config, policy approval.Policy) (*session.WorkspaceConfig, string, error) {
	r := h.r
	if err := checkWeb(cfg, r.opts); err != nil {
		return nil, "", err
	}
	// The MCP servers follow the configuration live: added ones start,
	// changed ones start again, removed ones stop. The turn's first
	// model request waits for those still starting (Settle).
	r.ext.reconcileMCP(cfg.MCPServers)
	wc := r.sk.withSkills(workspaceConfig(r.home, cfg, policy, r.opts, r.ext, false), cfg.Skills, r.opts.Tools != nil)
	key, err := json.Marshal(struct {
		Tools  config.ToolsConfig
		Web    config.WebConfig
		Skills config.SkillsConfig
		MCP    map[string]config.MCPServer
	}{cfg.Tools, cfg.Web, cfg.Skills, cfg.MCPServers})
	if err != nil {
		return nil, "", fmt.Errorf("keying the tool configuration: %w", err)
	}
	return &wc, string(key), nil
}

// Models lists the configured providers' models.
func (h appHost) Models(context.Context) []appserver.Model {
	cfg := h.r.Config
	out := []appserver.Model{}
	for _, name := range cfg.ProviderNames() {
		pc := cfg.Providers[name]
		if pc.Model == "" {
			continue
		}
		out = append(out, appserver.Model{ID: pc.Model, Provider: name, DisplayName: pc.Model, ContextLength: pc.ContextMaxTokens, SupportsTools: true})
	}
	return out
}

// appServerOptions are the connection options of the App Server.
func (r *Runtime) appServerOptions(closeManager bool) appserver.Options {
	r.appOnce.Do(func() { r.threads = appserver.NewRegistry(r.Manager, paths.StateDir(r.home), r.log) })
	return appserver.Options{Host: appHost{r}, Threads: r.threads, CloseManager: closeManager, Grace: r.opts.Grace, Logger: r.log}
}

// ServeAppServer runs one App Server connection over rw; the end of the
// connection ends the runtime's turns (stdio).
func (r *Runtime) ServeAppServer(ctx context.Context, rw io.ReadWriter) error {
	defer r.Close()
	return appserver.Serve(ctx, r.Manager, rw, r.appServerOptions(true))
}

// ServeAppServerShared runs one App Server connection of a daemon: its
// threads outlive it.
func (r *Runtime) ServeAppServerShared(ctx context.Context, rw io.ReadWriter) error {
	return appserver.Serve(ctx, r.Manager, rw, r.appServerOptions(false))
}

// Threads returns the runtime's App Server thread registry (tests).
func (r *Runtime) Threads() *appserver.Registry {
	r.appServerOptions(false)
	return r.threads
}

// RunAppServer serves the App Server on in and out until the client's
// input ends, with the same start-up work as RunStdio: the configuration
// and the provider are resolved before any input is read.
func RunAppServer(ctx context.Context, opts Options, in io.Reader, out io.Writer) error {
	return run(ctx, opts, func(rt *Runtime, t *stdio.Transport) error { return rt.ServeAppServer(ctx, t) }, in, out)
}
