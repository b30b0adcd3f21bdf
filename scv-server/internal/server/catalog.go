package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
)

// maxModelsPerProvider bounds one provider's share of session.model's
// list: an endpoint may list hundreds, and the answer must stay well
// within a server frame whatever the number of providers.
const maxModelsPerProvider = 200

// catalog is what the runtime knows of every configured provider's
// models, for session.models and session.set_model across providers
// (the TUI's /model). It builds a provider other than the active one the
// first time it is needed, and keeps it.
type catalog struct {
	cfg    *config.Config
	env    paths.Env
	log    *slog.Logger
	active provider.Provider

	mu    sync.Mutex
	built map[string]provider.Provider // guarded by mu
}

func newCatalog(cfg *config.Config, env paths.Env, log *slog.Logger, active provider.Provider) *catalog {
	return &catalog{cfg: cfg, env: env, log: log, active: active, built: map[string]provider.Provider{active.Name(): active}}
}

// names are the providers a session may use: the active one first (the
// demo when it is active), then the other configured ones by name.
func (c *catalog) names() []string {
	out := []string{c.active.Name()}
	for _, n := range c.cfg.ProviderNames() {
		if n != out[0] {
			out = append(out, n)
		}
	}
	return out
}

// Provider returns the provider called name, built on first use. An
// error says why it cannot be used: no such provider, or its API key is
// not set (naming the variable and where it is configured).
func (c *catalog) Provider(name string) (provider.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.built[name]; ok {
		return p, nil
	}
	if _, ok := c.cfg.Providers[name]; !ok {
		return nil, fmt.Errorf("there is no provider %q; configured: %s", name, quoted(c.names()))
	}
	p, err := buildProvider(c.cfg, name, c.env, c.log)
	if errors.Is(err, config.ErrAPIKeyMissing) {
		pc := c.cfg.Providers[name]
		src := c.cfg.Sources["providers."+name+".api_key_env"]
		return nil, fmt.Errorf("provider %q needs an API key in the environment variable %s (api_key_env, from %s), which is not set where the server was started; "+
			"set it and start SCV again (scv daemon restart for a daemon), or set api_key in [providers.%s] of %s (%w)",
			name, pc.APIKeyEnv, src, name, c.configFile(src), config.ErrAPIKeyMissing)
	}
	if err != nil {
		return nil, err
	}
	c.built[name] = p
	return p, nil
}

// configFile is the file a key came from, or the user file when it kept
// its default.
func (c *catalog) configFile(src config.Source) string {
	if src.File != "" {
		return src.File
	}
	if h, err := paths.Home(c.env); err == nil {
		return paths.ConfigFile(h)
	}
	return "config.toml"
}

// ContextMaxTokens is the context window configured for model on the
// provider name (its [providers.NAME.models.MODEL] table), 0 when none is.
func (c *catalog) ContextMaxTokens(name, model string) int64 {
	ms, _ := c.cfg.ModelSettings(name, model)
	return ms.ContextMaxTokens
}

// Price is model's configured price on the provider name, nil when none
// is.
func (c *catalog) Price(name, model string) *protocol.Price {
	ms, priced := c.cfg.ModelSettings(name, model)
	if !priced {
		return nil
	}
	p := &protocol.Price{InputPerMTok: ms.InputPrice, OutputPerMTok: ms.OutputPrice}
	if ms.CachedPriced {
		p.CachedInputPerMTok = &ms.CachedInputPrice
	}
	return p
}

// List returns the models of every provider a session may use, the
// provider first named first: each provider's configured model, the
// models configured in its [providers.NAME.models] tables, then those its
// endpoint lists (asked of every provider at once, each within its own
// listing timeout). A provider that cannot be used lists its configured
// model only, with why (Unavailable).
func (c *catalog) List(ctx context.Context, first string) []protocol.ModelInfo {
	names := c.names()
	if i := slices.Index(names, first); i > 0 {
		names = append(append([]string{first}, names[:i]...), names[i+1:]...)
	}
	groups := make([][]protocol.ModelInfo, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { groups[i] = c.group(ctx, name) })
	}
	wg.Wait()
	var out []protocol.ModelInfo
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// group lists one provider's models.
func (c *catalog) group(ctx context.Context, name string) []protocol.ModelInfo {
	p, err := c.Provider(name)
	if err != nil {
		model := c.cfg.Providers[name].Model
		why := err.Error()
		if errors.Is(err, config.ErrAPIKeyMissing) {
			why = c.cfg.Providers[name].APIKeyEnv + " is not set"
		}
		return []protocol.ModelInfo{{ID: model, Provider: name, ContextMaxTokens: c.contextOf(name, model, c.cfg.Providers[name].ContextMaxTokens), Price: c.Price(name, model), Unavailable: why}}
	}
	ids := []string{p.Model()}
	for _, id := range slices.Sorted(maps.Keys(c.cfg.Providers[name].Models)) {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if l, ok := p.(provider.ModelLister); ok {
		listed, err := l.ListModels(ctx)
		if err == nil {
			for _, id := range listed {
				if len(ids) >= maxModelsPerProvider {
					break
				}
				if !slices.Contains(ids, id) {
					ids = append(ids, id)
				}
			}
		}
	}
	out := make([]protocol.ModelInfo, 0, len(ids))
	for _, id := range ids {
		out = append(out, protocol.ModelInfo{ID: id, Provider: name, ContextMaxTokens: c.contextOf(name, id, p.ContextMaxTokens()), Price: c.Price(name, id)})
	}
	return out
}

// contextOf is model's context window: its own configured one, else def
// (the provider's).
func (c *catalog) contextOf(name, model string, def int64) int64 {
	if n := c.ContextMaxTokens(name, model); n > 0 {
		return n
	}
	return def
}

// quoted lists names, each quoted.
func quoted(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q", n)
	}
	return out
}
