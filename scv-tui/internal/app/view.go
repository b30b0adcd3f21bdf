package app

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/scv-tui/internal/ui/status"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// queueRows is how many queue entries the panel shows at most.
const queueRows = 5

// layout gives the transcript the rows the other parts leave. It runs
// after every change that can change their heights.
func (m *Model) layout() {
	m.editor.SetMaxRows(max(min(8, m.height/4), 1))
	used := 1 // status bar
	used += m.queue.Height(m.queueRows())
	used += len(m.messageLines())
	if m.dialog != nil {
		// The dialog gets every row but one of the transcript's, so its
		// title and keys are never cut off the top by fit.
		m.dialogRows = max(m.height-used-1, 1)
		used += lineCount(m.dialog.View(m.st, m.width, m.dialogRows))
	} else {
		used += m.editor.Height(m.width)
	}
	m.transcript.SetSize(m.width, max(m.height-used, 1))
}

func (m *Model) queueRows() int { return max(min(queueRows, m.height/6), 1) }

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(s, "\n") + 1
}

// messageLines are the problem and flash lines above the editor.
func (m *Model) messageLines() []string {
	var out []string
	if m.problem != "" {
		for _, l := range wrap.Lines(m.problem, m.width) {
			out = append(out, m.st.Error.Render(l))
		}
	}
	if m.retrying != "" {
		for _, l := range wrap.Lines(m.retrying, m.width) {
			out = append(out, m.st.Warning.Render(l))
		}
	}
	var flash []string
	if m.flash != "" {
		for _, l := range wrap.Lines(m.flash, m.width) {
			flash = append(flash, m.st.Warning.Render(l))
		}
	}
	// A tiny terminal keeps at least one transcript row.
	limit := max(m.height/3, 1)
	if words, hints := m.suggestions(); len(words) > 0 {
		// The menu is cut from its end, so the first suggestion (the one
		// Tab takes) always shows, and a last line says how many more.
		show := len(words)
		if room := max(limit-len(out)-len(flash), 1); show > room {
			show = max(room-1, 1)
		}
		for i, w := range words[:show] {
			line := "  " + w
			if hints[i] != "" {
				line += "  " + m.st.Dim.Render(hints[i])
			}
			if i == 0 {
				line = "▸ " + w + "  " + m.st.Dim.Render(strings.TrimSpace(hints[i]+"  Tab completes"))
			}
			out = append(out, wrap.Truncate(line, m.width))
		}
		if more := len(words) - show; more > 0 {
			out = append(out, wrap.Truncate(m.st.Dim.Render(fmt.Sprintf("  … %d more: type to narrow", more)), m.width))
		}
	}
	out = append(out, flash...)
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out
}

// View implements tea.Model.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "scv"
	return v
}

// render composes the screen: transcript (or the help, the picker or the
// /mcp view),
// the queue panel, messages, the editor or the approval dialog, and the
// status bar.
func (m *Model) render() string {
	// Heights can change with any message (a hint, a problem, the queue);
	// sizing here keeps every frame exactly the terminal's height.
	m.layout()
	parts := make([]string, 0, 6)
	top := m.transcript.View()
	if m.help || m.picker != nil || m.modelPicker != nil || m.mcpView != nil {
		h := lineCount(top)
		var over string
		switch {
		case m.help:
			over = m.helpView(h)
		case m.picker != nil:
			over = m.picker.View(m.st, m.width, h)
		case m.modelPicker != nil:
			over = m.modelPicker.View(m.st, m.width, h)
		default:
			over = m.mcpView.View(m.st, m.width, h)
		}
		top = fit(over, m.width, h)
	}
	parts = append(parts, top)
	if q := m.queue.View(m.st, m.width, m.queueRows()); q != "" {
		parts = append(parts, q)
	}
	if msgs := m.messageLines(); len(msgs) > 0 {
		parts = append(parts, strings.Join(msgs, "\n"))
	}
	if m.dialog != nil {
		parts = append(parts, m.dialog.View(m.st, m.width, m.dialogRows))
	} else {
		parts = append(parts, m.editor.View(m.st, m.width, m.placeholder()))
	}
	parts = append(parts, m.statusBar().View(m.st, m.width))
	screen := strings.Join(parts, "\n")
	m.overflow = lineCount(screen) > m.height
	return fit(screen, m.width, m.height)
}

// trustedWidth is the width from which every component keeps its lines
// within the width by itself (their tests check it); below it, prefixes,
// frames and margins can pass the width, and fit cuts lines.
const trustedWidth = 20

// fit cuts s to h lines (keeping the bottom, where the editor and status
// are) and pads it to exactly h lines; no line passes w cells.
func fit(s string, w, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[len(lines)-h:]
	}
	if w < trustedWidth {
		for i, l := range lines {
			if wrap.Width(l) > w {
				lines[i] = wrap.Truncate(l, w)
			}
		}
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

func (m *Model) placeholder() string {
	switch {
	case m.phase == disconnected && m.problem != "":
		return "The server is stopped; your input is kept. Ctrl+R restarts it"
	case m.phase == disconnected:
		return "Starting the server…"
	case m.phase != ready:
		return "Connecting to the server…"
	case m.turnID != "":
		return "Type to queue a prompt; Esc cancels the turn"
	}
	return "Ask anything; Enter sends, Alt+Enter adds a line, /help lists commands"
}

func (m *Model) statusBar() status.Bar {
	b := status.Bar{
		Model:         m.model,
		Demo:          m.demo,
		Workspace:     m.cwd,
		ContextTokens: m.ctxUsed,
		ContextMax:    m.ctxMax,
		Turn:          m.turnState,
		Queued:        m.queue.Len(),
		Paused:        m.queue.Paused(),
		Warning:       m.warning,
	}
	if b.Workspace == "" {
		b.Workspace = m.opts.Workspace
	}
	switch {
	case m.turnID != "":
		b.Elapsed = m.now().Sub(m.turnStart)
	case m.restarts > 0:
		b.Turn = "restarting the server"
	case m.phase == disconnected && m.problem != "":
		b.Turn = "server stopped · Ctrl+R restarts"
		b.Stopped = true
	case m.phase == disconnected:
		b.Turn = "starting the server"
	case m.phase != ready:
		b.Turn = "connecting"
	}
	if m.editing != nil {
		b.Turn = "editing a queued prompt · " + b.Turn
	}
	return b
}

// helpView is the help cut to h lines from the scroll position, with a
// last line saying how to see the rest when it does not fit.
func (m *Model) helpView(h int) string {
	lines := strings.Split(m.helpText(), "\n")
	if len(lines) <= h || h < 2 {
		m.helpScroll = 0
		return strings.Join(lines, "\n")
	}
	room := h - 1
	m.helpScroll = min(max(m.helpScroll, 0), len(lines)-room)
	end := m.helpScroll + room
	hint := fmt.Sprintf("lines %d-%d of %d · Up/Down, PgUp/PgDn scroll · Esc closes", m.helpScroll+1, end, len(lines))
	out := append(append([]string(nil), lines[m.helpScroll:end]...), m.st.Dim.Render(wrap.Truncate(hint, m.width)))
	return strings.Join(out, "\n")
}

func (m *Model) helpText() string {
	lines := []string{
		"Keys",
		"  Enter            send the prompt (queued while a turn runs)",
		"  Alt/Shift+Enter  new line          Up/Down  prompt history",
		"  Esc, Ctrl+C      cancel the running turn (a queue is paused)",
		"  PgUp/PgDn Home/End, mouse wheel    scroll the transcript",
		"  Ctrl+O           expand or collapse the last tool output",
		"  Tab              manage the queue: e edit, K/J move, d remove, p pause",
		"  Ctrl+R           restart the server after a problem",
		"  Ctrl+C twice     quit (within 2 s after an interrupt)",
		"Approvals",
		"  y/Enter once · a for the session (shows the rule) · n/Esc deny · v arguments",
		"Commands",
		"  /clear    clear the conversation     /compact  compact the context now",
		"  /resume   continue a stored session  /rules    list the session rules",
		"  /mcp      the MCP servers and tools  /cost     tokens and money so far",
		"  /revoke   remove a session rule      /help     this help",
		"  /model    switch model or provider   /init     write AGENTS.md",
		"  /quit     quit",
		"Server log: " + wrap.Sanitize(m.logPath()),
		"Any key closes this help.",
	}
	// A terminal cuts lines wider than itself; wrapped, the log path stays
	// whole (broken inside where it must) at any width.
	out := make([]string, 0, 2*len(lines))
	for _, l := range lines {
		out = appendHanging(out, l, m.width)
	}
	return strings.Join(out, "\n")
}

// appendHanging wraps one line of the help to width: an indented line
// ("  Enter            send the prompt …") goes on under its description's
// column when that leaves room, else four cells in, so a narrow terminal
// still reads as a table; other lines wrap as text does.
func appendHanging(dst []string, line string, width int) []string {
	if wrap.Width(line) <= width || !strings.HasPrefix(line, "  ") {
		return wrap.AppendLines(dst, line, width)
	}
	first := wrap.Lines(line, width)[0]
	if !strings.HasPrefix(line, first) {
		return wrap.AppendLines(dst, line, width)
	}
	indent := 4
	if i := descColumn(line); i > 0 && width-i >= 16 {
		indent = i
	}
	if width-indent < 8 {
		return wrap.AppendLines(dst, line, width)
	}
	dst = append(dst, strings.TrimRight(first, " "))
	pad := strings.Repeat(" ", indent)
	for _, l := range wrap.Lines(strings.TrimLeft(line[len(first):], " "), width-indent) {
		dst = append(dst, pad+l)
	}
	return dst
}

// descColumn is where a help line's description starts: after the key
// and the run of two or more spaces that follows it; 0 when there is none.
func descColumn(line string) int {
	i := strings.Index(line[2:], "  ")
	if i < 0 {
		return 0
	}
	j := 2 + i
	for j < len(line) && line[j] == ' ' {
		j++
	}
	if j >= len(line) {
		return 0
	}
	return wrap.Width(line[:j])
}

// ExitSummary is what the TUI prints when it has quit, so the session can
// be found again from the terminal's scrollback: its id, what it used and
// the command that resumes it. Empty before a session started.
func (m *Model) ExitSummary() string {
	if m.sessionID == "" {
		return ""
	}
	cd := ""
	if m.cwd != "" {
		cd = " -C " + shellQuote(m.cwd)
	}
	return fmt.Sprintf("Session %s: %s input and %s output tokens.\nResume it with: scv%s --resume %s\n",
		m.sessionID, status.Tokens(m.usage.InputTokens), status.Tokens(m.usage.OutputTokens), cd, m.sessionID)
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
