package mcpview

import (
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
)

// servers has one server of each state the view colours differently.
var servers = []protocol.MCPServer{
	{Name: "files", State: protocol.MCPReady, Tools: []string{"mcp__files__read_file", "mcp__files__list_directory"}},
	{Name: "github", State: protocol.MCPFailed, Tools: []string{}, Error: "the server exited during initialize: exit status 1 (stderr: GITHUB_TOKEN is not set)"},
	{Name: "slow", State: protocol.MCPStarting, Tools: []string{}},
	{Name: "old", State: protocol.MCPDisabled, Tools: []string{}},
}

func TestView(t *testing.T) {
	t.Parallel()
	st := styles.Default()
	t.Run("servers", func(t *testing.T) {
		t.Parallel()
		out := New(servers).View(st, 60, 20)
		golden.RequireWidth(t, out, 60)
		golden.RequireStyled(t, out)
	})
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		out := New(nil).View(st, 40, 6)
		golden.RequireWidth(t, out, 40)
		golden.RequireStyled(t, out)
		if plain := strings.Join(strings.Fields(golden.Plain(out)), " "); !strings.Contains(plain, "No MCP servers are configured; add one with `scv mcp add`.") {
			t.Errorf("the empty view does not say how to add a server:\n%s", plain)
		}
	})
	t.Run("scroll", func(t *testing.T) {
		t.Parallel()
		v := New(servers)
		first := golden.Plain(v.View(st, 60, 6))
		if !strings.Contains(first, "files · ready · 2 tools") || strings.Contains(first, "old · disabled") {
			t.Fatalf("the first page:\n%s", first)
		}
		v.Scroll(100) // clamped to the last page
		out := v.View(st, 60, 6)
		golden.RequireWidth(t, out, 60)
		golden.RequireStyled(t, out)
		if plain := golden.Plain(out); !strings.Contains(plain, "old · disabled") {
			t.Errorf("scrolled to the end, the last server is not shown:\n%s", plain)
		}
		v.Scroll(-1)
		if back := golden.Plain(v.View(st, 60, 6)); back == golden.Plain(out) {
			t.Error("one line up after scrolling past the end did not move the view")
		}
	})
	t.Run("hostile", func(t *testing.T) {
		t.Parallel()
		out := New([]protocol.MCPServer{{Name: "x\x1b[2J", State: protocol.MCPFailed, Error: "bad\x1b]0;title\x07 thing"}}).View(st, 40, 6)
		if strings.Contains(out, "\x1b[2J") || strings.Contains(out, "\x1b]0;") || strings.Contains(out, "\x07") {
			t.Errorf("control characters reached the screen: %q", out)
		}
	})
}
