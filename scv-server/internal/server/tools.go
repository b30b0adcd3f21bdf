package server

import (
	"fmt"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/netguard"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/bash"
	"github.com/scv-cli/scv/scv-server/internal/tools/edit"
	"github.com/scv-cli/scv/scv-server/internal/tools/read"
	"github.com/scv-cli/scv/scv-server/internal/tools/webfetch"
	"github.com/scv-cli/scv/scv-server/internal/tools/websearch"
	"github.com/scv-cli/scv/scv-server/internal/tools/write"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/version"
)

// Tools builds the built-in tool registry of a session with the default
// options; the server builds its sessions' tools with toolsFor.
func Tools(workspace string) (*tools.Registry, error) {
	return builtinTools("", config.Defaults(), Options{Env: paths.MapEnv(nil)})
}

// toolsFor returns the ToolsFunc of the built-in tools configured by cfg:
// read, write, edit and bash with the [tools] options, web_fetch with the
// [web] options, and web_search when web.search names a search service.
// Each session gets its own instances (web_fetch keeps a per-session page
// cache).
func toolsFor(home string, cfg *config.Config, opts Options) session.ToolsFunc {
	return func(string) (*tools.Registry, error) { return builtinTools(home, cfg, opts) }
}

func builtinTools(home string, cfg *config.Config, opts Options) (*tools.Registry, error) {
	tc, wc := cfg.Tools, cfg.Web
	redirects := wc.MaxRedirects
	if redirects == 0 {
		redirects = -1 // the config's 0 means none; webfetch's 0 means its default
	}
	list := []tools.Tool{
		read.New(),
		write.New(),
		edit.New(),
		bash.New(bash.Options{DefaultTimeout: tc.CommandTimeout(), MaxTimeout: tc.MaxTimeout(), SpillMaxBytes: tc.SpillMaxBytes,
			MaxProcesses: tc.MaxProcesses, MemoryLimitMB: tc.MemoryLimitMB, HideEnv: cfg.SecretEnvNames(), TreesDir: treesDir(home), Logger: opts.Logger,
			SnapshotTimeout: snapshotTimeout(tc)}),
		webfetch.New(webfetch.Options{
			MaxBytes:           wc.FetchMaxBytes,
			MaxRedirects:       redirects,
			Timeout:            wc.FetchTimeout(),
			AllowPrivate:       wc.AllowPrivateAddresses,
			AutoApproveDomains: wc.AutoApproveDomains,
			AllowedPorts:       webPorts(wc),
			UserAgent:          version.UserAgent(),
			Policy:             opts.WebPolicy,
			RootCAs:            opts.WebRootCAs,
		}),
	}
	switch wc.Search {
	case config.SearchSearXNG, config.SearchBrave:
		env := opts.Env
		if env == nil {
			env = paths.OSEnv()
		}
		ws, err := websearch.New(websearch.Options{
			Backend:     wc.Search,
			SearXNGURL:  wc.SearXNGURL,
			BraveKey:    strings.TrimSpace(env.Getenv(wc.BraveAPIKeyEnv)),
			BraveKeyEnv: wc.BraveAPIKeyEnv,
			BraveURL:    opts.BraveURL,
			MaxResults:  wc.MaxSearchResults,
			UserAgent:   version.UserAgent(),
			Logger:      opts.Logger,
		})
		if err != nil {
			// A setup the configuration validation let through: the
			// session runs without web_search, and the server said why
			// when it started (checkWeb).
			break
		}
		list = append(list, ws)
	}
	reg := tools.NewRegistry()
	for _, t := range list {
		if err := reg.Register(t); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// checkWeb checks the [web] values the configuration package cannot: the
// allowlist entries as web_fetch reads them (an error), and whether the
// search service is set up in this environment (a warning: a Brave setup
// without its key still offers web_search, whose calls say what to set).
func checkWeb(cfg *config.Config, opts Options) error {
	for _, d := range cfg.Web.AutoApproveDomains {
		if err := webfetch.CheckDomain(d); err != nil {
			return fmt.Errorf("web.auto_approve_domains: %w", err)
		}
	}
	if s := cfg.Web.Search; s == config.SearchSearXNG || s == config.SearchBrave {
		env := opts.Env
		if env == nil {
			env = paths.OSEnv()
		}
		if _, err := websearch.New(websearch.Options{Backend: s, SearXNGURL: cfg.Web.SearXNGURL, BraveKeyEnv: cfg.Web.BraveAPIKeyEnv}); err != nil {
			opts.Logger.Warn("Sessions will have no web_search tool", "err", err)
		} else if s == config.SearchBrave && strings.TrimSpace(env.Getenv(cfg.Web.BraveAPIKeyEnv)) == "" {
			opts.Logger.Warn("web_search calls will fail until the Brave Search API key is set", "variable", cfg.Web.BraveAPIKeyEnv)
		}
	}
	return nil
}

// webPorts converts web.allowed_ports to the address policy's ranges.
func webPorts(wc config.WebConfig) []netguard.PortRange {
	var out []netguard.PortRange
	for _, r := range wc.Ports() {
		out = append(out, netguard.PortRange{Lo: r.Lo, Hi: r.Hi})
	}
	return out
}

// treesDir is where the bash tool records its process trees; "" (no
// records) without an instance directory.
func treesDir(home string) string {
	if home == "" {
		return ""
	}
	return records.TreesDir(home)
}

// snapshotTimeout is the bash tool's SnapshotTimeout for tools.login_snapshot:
// its default, or below zero (a login shell per call) when it is off.
func snapshotTimeout(tc config.ToolsConfig) time.Duration {
	if tc.LoginSnapshot {
		return 0
	}
	return -1
}
