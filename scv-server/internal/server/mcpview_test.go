package server

import (
	"slices"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/mcp"
	"github.com/scv-cli/scv/shared/config"
)

// TestMCPViewOffers: a tool is offered when the configured server with the
// longest matching name is enabled and allows it.
func TestMCPViewOffers(t *testing.T) {
	t.Parallel()
	on := config.DefaultMCPServer()
	narrowed := on
	narrowed.DisabledTools = []string{"x"}
	off := on
	off.Enabled = false
	v := mcpView{servers: map[string]config.MCPServer{"a": on, "a__b": narrowed, "c": off}}
	for name, want := range map[string]bool{
		mcp.ToolName("a", "x"):    true,
		mcp.ToolName("a__b", "x"): false, // a__b disables x; a's match is shorter
		mcp.ToolName("a__b", "y"): true,
		mcp.ToolName("c", "x"):    false, // disabled server
		mcp.ToolName("gone", "x"): false, // removed server
		"bash":                    false,
	} {
		if got := v.offers(name); got != want {
			t.Errorf("offers(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestMCPNotRunning: servers added, enabled or changed since the runtime
// started are named; tool lists, disabling and removal are not.
func TestMCPNotRunning(t *testing.T) {
	t.Parallel()
	on := config.DefaultMCPServer()
	on.Command = "srv"
	off := on
	off.Enabled = false
	e := &extensions{mcp: mcp.New(mcp.Options{}), mcpServers: map[string]config.MCPServer{"same": on, "was-off": off, "removed": on, "changed": on}}
	narrowed, changed := on, on
	narrowed.DisabledTools = []string{"x"}
	changed.Args = []string{"--other"}
	got := e.notRunning(map[string]config.MCPServer{"same": narrowed, "was-off": on, "changed": changed, "new": on, "new-off": off})
	if want := []string{"changed", "new", "was-off"}; !slices.Equal(got, want) {
		t.Fatalf("notRunning = %v, want %v", got, want)
	}
}
