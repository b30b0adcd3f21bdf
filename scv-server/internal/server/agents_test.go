package server

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/delegate/transport/acp"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport/oneshot"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/paths"
)

// TestChooseBackendsByTransport checks the registry's choice (tools.md,
// "Agent Client Protocol transport"): auto prefers an installed ACP
// server, falls back to one process per turn without one or with a custom
// command, acp hides an agent whose server is missing, resume never uses
// ACP, and an agent without an ACP server stays on its CLI.
func TestChooseBackendsByTransport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cli, server := exe("cli"), exe("acp-server")
	table := []adapters.Adapter{
		{Name: "claude", Path: cli, ACP: &adapters.ACPServer{Path: server}},
		{Name: "codex", Path: cli, ACP: &adapters.ACPServer{Path: filepath.Join(dir, "missing")}},
		// Agents whose sign-in SCV checks from a file are left out while
		// signed out, so the others here have names of no such check.
		{Name: "alpha", Path: cli, ACP: &adapters.ACPServer{Path: server}},
		{Name: "beta", Path: cli},
	}
	home := t.TempDir()
	env := paths.MapEnv(map[string]string{"HOME": t.TempDir()})
	for _, tt := range []struct {
		name   string
		agents map[string]config.AgentSettings
		want   map[string]string // agent -> "acp" or "oneshot"
	}{
		{"auto", nil, map[string]string{"claude": "acp", "codex": "oneshot", "alpha": "acp", "beta": "oneshot"}},
		{"custom command keeps auto per turn", map[string]config.AgentSettings{"claude": {Command: cli}},
			map[string]string{"claude": "oneshot", "codex": "oneshot", "alpha": "acp", "beta": "oneshot"}},
		{"acp required", map[string]config.AgentSettings{"codex": {Transport: "acp"}, "alpha": {Transport: "acp"}},
			map[string]string{"claude": "acp", "alpha": "acp", "beta": "oneshot"}},
		{"resume", map[string]config.AgentSettings{"claude": {Transport: "resume"}, "beta": {Transport: "resume"}},
			map[string]string{"claude": "oneshot", "codex": "oneshot", "alpha": "acp", "beta": "oneshot"}},
	} {
		r := oneshot.New(oneshot.Options{Home: home, Env: env, Adapters: withCommands(table, tt.agents)})
		ar := acp.New(acp.Options{Home: home, Env: env, Adapters: table})
		got := map[string]string{}
		for _, b := range chooseBackends(r, ar, tt.agents, env) {
			kind := "oneshot"
			if ab, ok := ar.Backend(b.Descriptor().Name); ok && ab == b {
				kind = "acp"
			}
			got[b.Descriptor().Name] = kind
		}
		ar.Close()
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: offered %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWithCommands(t *testing.T) {
	t.Parallel()
	table := []adapters.Adapter{{Name: "claude", Executable: "claude"}, {Name: "codex", Executable: "codex"}}
	got := withCommands(table, map[string]config.AgentSettings{"claude": {Command: "/opt/claude"}, "codex": {Command: "codex-nightly"}})
	if got[0].Path != "/opt/claude" || got[1].Executable != "codex-nightly" || got[1].Path != "" {
		t.Errorf("table = %+v", got)
	}
	if table[0].Path != "" || table[1].Executable != "codex" {
		t.Errorf("the input table changed: %+v", table)
	}
}
