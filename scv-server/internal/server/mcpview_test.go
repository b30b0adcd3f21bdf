package server

import (
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
	servers := map[string]config.MCPServer{"a": on, "a__b": narrowed, "c": off}
	for name, want := range map[string]bool{
		mcp.ToolName("a", "x"):    true,
		mcp.ToolName("a__b", "x"): false, // a__b disables x; a's match is shorter
		mcp.ToolName("a__b", "y"): true,
		mcp.ToolName("c", "x"):    false, // disabled server
		mcp.ToolName("gone", "x"): false, // removed server
		"bash":                    false,
	} {
		if got := offers(servers, name); got != want {
			t.Errorf("offers(%q) = %v, want %v", name, got, want)
		}
	}
}
