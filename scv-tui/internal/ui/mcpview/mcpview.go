// Package mcpview is the /mcp view: the session's MCP servers as
// session.started listed them (protocol v4), each with its state, why it is
// not ready and the tools the model is offered.
package mcpview

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// Empty is what the view says when no MCP server is configured.
const Empty = "No MCP servers are configured; add one with `scv mcp add`."

// View lists MCP servers; it scrolls when they do not fit.
type View struct {
	servers []protocol.MCPServer
	top     int // the first body line shown
	// maxTop is the largest useful top as of the last render, so that
	// scrolling past the end does not leave keys to undo.
	maxTop int
}

// New returns a view of servers (nil when none is configured).
func New(servers []protocol.MCPServer) *View {
	return &View{servers: servers}
}

// Len is the number of servers listed.
func (v *View) Len() int { return len(v.servers) }

// Scroll moves the view by d lines.
func (v *View) Scroll(d int) {
	v.top = min(max(v.top+d, 0), v.maxTop)
}

// stateStyle colours a state: ready is good, failed bad, the transient
// states a warning, disabled and stopped dim.
func stateStyle(st styles.Styles, state string) lipgloss.Style {
	switch state {
	case protocol.MCPReady:
		return st.ToolOK
	case protocol.MCPFailed:
		return st.ToolFail
	case protocol.MCPStarting, protocol.MCPRestarting:
		return st.ToolRun
	default:
		return st.Dim
	}
}

// body renders every server's lines for width cells.
func (v *View) body(st styles.Styles, width int) []string {
	var lines []string
	for i, s := range v.servers {
		if i > 0 {
			lines = append(lines, "")
		}
		// Names, errors and tool names come from configuration and from
		// the MCP servers themselves: sanitized like any server text.
		state := wrap.OneLine(s.State)
		head := st.ToolName.Render(wrap.OneLine(s.Name)) + " · " + stateStyle(st, s.State).Render(state)
		if n := len(s.Tools); n > 0 {
			head += st.Dim.Render(fmt.Sprintf(" · %d %s", n, plural(n, "tool", "tools")))
		}
		lines = append(lines, wrap.Truncate(head, width))
		if s.Error != "" {
			for _, l := range wrap.Lines(wrap.Sanitize(s.Error), max(width-2, 1)) {
				lines = append(lines, "  "+st.Error.Render(l))
			}
		}
		for _, t := range s.Tools {
			lines = append(lines, "  "+wrap.Truncate(wrap.OneLine(t), max(width-2, 1)))
		}
		if len(s.Tools) == 0 && s.State == protocol.MCPReady {
			lines = append(lines, "  "+st.Dim.Render(wrap.Truncate("(no tools)", max(width-2, 1))))
		}
	}
	return lines
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// View renders the list in at most height rows of width cells: a title,
// the servers (scrolled) and the key hint.
func (v *View) View(st styles.Styles, width, height int) string {
	title := "MCP servers"
	if len(v.servers) > 0 {
		title = fmt.Sprintf("MCP servers (%d)", len(v.servers))
	}
	lines := []string{st.Panel.Render(wrap.Truncate(title, width))}
	if len(v.servers) == 0 {
		for _, l := range wrap.Lines(Empty, width) {
			lines = append(lines, st.Dim.Render(l))
		}
		lines = append(lines, st.Dim.Render(wrap.Truncate("Esc closes", width)))
		return strings.Join(lines, "\n")
	}
	body := v.body(st, width)
	rows := max(height-2, 1)
	v.maxTop = max(len(body)-rows, 0)
	v.top = min(v.top, v.maxTop)
	lines = append(lines, body[v.top:min(v.top+rows, len(body))]...)
	hint := "Esc close"
	if v.maxTop > 0 {
		hint = fmt.Sprintf("↑/↓ scroll (%d–%d of %d lines) · Esc close", v.top+1, min(v.top+rows, len(body)), len(body))
	}
	lines = append(lines, st.Dim.Render(wrap.Truncate(hint, width)))
	return strings.Join(lines, "\n")
}
