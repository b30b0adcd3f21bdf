package app

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/complete"
	"github.com/scv-cli/scv/scv-tui/internal/ui/mcpview"
	"github.com/scv-cli/scv/scv-tui/internal/ui/picker"
	"github.com/scv-cli/scv/scv-tui/internal/ui/transcript"
)

// key handles one key press. The layers are tried in order: quitting,
// then scrolling, then an open dialog or picker (which take every key),
// then global keys, then the queue panel when focused, then the editor.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	// String is the typed text for printable keys ("K", whatever the
	// terminal's keyboard protocol says about shift) and the keystroke
	// ("ctrl+c", "shift+up") for the others.
	ks := k.String()
	if ks == "ctrl+c" {
		return m.ctrlC()
	}
	m.quitArmed = false
	m.flash = ""
	defer m.layout()

	if m.help && m.helpKey(ks) {
		return nil
	}
	if m.scrollKey(ks) {
		return nil
	}
	if m.dialog != nil {
		m.dialogKey(ks)
		return nil
	}
	if m.picker != nil {
		m.pickerKey(ks)
		return nil
	}
	if m.modelPicker != nil {
		m.modelPickerKey(ks)
		return nil
	}
	if m.mcpView != nil {
		m.mcpKey(ks)
		return nil
	}
	if m.help {
		m.help = false
		if ks == "esc" || ks == "q" || ks == "enter" {
			return nil
		}
	}
	if cmd, ok := m.globalKey(ks); ok {
		return cmd
	}
	if m.queue.Focused() {
		return m.queueKey(ks)
	}
	return m.editorKey(k, ks)
}

// helpKey scrolls the open help; it reports whether ks was a scrolling
// key. Any other key closes the help (in key).
func (m *Model) helpKey(ks string) bool {
	page := max(m.height/2, 1)
	switch ks {
	case "up", "k":
		m.helpScroll--
	case "down", "j":
		m.helpScroll++
	case "pgup":
		m.helpScroll -= page
	case "pgdown", "space":
		m.helpScroll += page
	case "home":
		m.helpScroll = 0
	case "end":
		m.helpScroll = 1 << 20 // helpView clamps it
	default:
		return false
	}
	return true
}

// scrollKey scrolls the open arguments view of a dialog, which takes the
// scrolling keys, or the transcript; it reports whether ks was one.
func (m *Model) scrollKey(ks string) bool {
	if m.dialog != nil && m.dialog.ShowArgs {
		switch ks {
		case "up", "k":
			m.dialog.ScrollArgs(-1)
			return true
		case "down", "j":
			m.dialog.ScrollArgs(1)
			return true
		case "pgup":
			m.dialog.PageArgs(-1)
			return true
		case "pgdown":
			m.dialog.PageArgs(1)
			return true
		}
	}
	switch ks {
	case "pgup":
		m.transcript.PageUp()
	case "pgdown":
		m.transcript.PageDown()
	case "home":
		m.transcript.Home()
	case "end":
		m.transcript.End()
	default:
		return false
	}
	return true
}

// dialogKey answers the open approval dialog: while it is open nothing
// else can be typed.
func (m *Model) dialogKey(ks string) {
	switch ks {
	case "y", "Y", "enter":
		m.resolve(true, "")
	case "a", "A":
		if m.dialog.CanApproveSession() {
			m.resolve(true, protocol.ScopeSession)
		} else {
			m.flash = "This call can only be approved once: the tool proposed no rule for it."
		}
	case "n", "N", "esc":
		m.resolve(false, "")
	case "r", "R":
		// The editor takes the reason; the dialog comes back on Esc.
		m.reasonFor, m.dialog = m.dialog, nil
		m.draft = m.editor.Value()
		m.editor.SetValue("")
		m.editor.SetPrompt("reason> ")
		m.flash = "Why do you deny it? Enter denies the call and tells the model; Esc goes back to the approval."
	case "v", "V":
		m.dialog.ToggleArgs()
	default:
		m.flash = "Answer the approval first: y approves, n denies, r denies with a reason."
	}
}

// pickerKey moves in the open session picker, resumes the chosen session
// or closes the picker.
func (m *Model) pickerKey(ks string) {
	switch ks {
	case "up", "k":
		m.picker.Move(-1)
	case "down", "j":
		m.picker.Move(1)
	case "enter":
		id := m.picker.Chosen()
		if id == "" {
			m.flash = "That session is the one open now; choose another or press Esc."
			return
		}
		m.picker = nil
		m.resumeSession(id)
	case "esc", "q":
		m.picker = nil
	}
}

// mcpKey scrolls or closes the open /mcp view.
func (m *Model) mcpKey(ks string) {
	switch ks {
	case "up", "k":
		m.mcpView.Scroll(-1)
	case "down", "j":
		m.mcpView.Scroll(1)
	case "esc", "q", "enter":
		m.mcpView = nil
	}
}

// globalKey handles the keys that work wherever the focus is; it reports
// whether ks was one.
func (m *Model) globalKey(ks string) (tea.Cmd, bool) {
	switch ks {
	case "ctrl+r":
		if m.problem != "" || m.warning != "" || m.phase == disconnected {
			return m.restart(), true
		}
		m.flash = "The server is running; Ctrl+R restarts it only after a problem."
	case "ctrl+o":
		if !m.transcript.ToggleLastCard() {
			m.flash = "No tool output to expand yet."
		}
	case "tab":
		if !m.queue.Focused() && m.complete() {
			return nil, true
		}
		if m.queue.Len() > 0 {
			m.queue.Focus(!m.queue.Focused())
		}
	default:
		return nil, false
	}
	return nil, true
}

// suggestions are the completions of the word at the cursor: slash
// commands while the editor holds only a command's start, workspace files
// after "@". Each is the text that replaces the word, and a hint.
func (m *Model) suggestions() (words, hints []string) {
	if m.dialog != nil || m.editing != nil || m.reasonFor != nil {
		return nil, nil
	}
	word := m.editor.WordAtCursor()
	switch {
	case strings.HasPrefix(word, "/") && m.editor.Value() == word:
		for _, c := range complete.MatchCommands(word) {
			words, hints = append(words, c.Name), append(hints, c.Help)
		}
	case strings.HasPrefix(word, "@"):
		if m.files == nil {
			m.files = complete.NewIndex(m.workspace())
			m.fileWord, m.fileHits = "", nil
		}
		// Every frame asks; the match is redone only when the word changes.
		if word != m.fileWord || m.fileHits == nil {
			m.fileWord, m.fileHits = word, m.files.Match(word[1:], maxSuggestions)
		}
		for _, f := range m.fileHits {
			words, hints = append(words, "@"+f), append(hints, "")
		}
	}
	if len(words) == 1 && words[0] == word {
		return nil, nil // complete already
	}
	return words, hints
}

// maxSuggestions bounds the completion menu.
const maxSuggestions = 5

// complete replaces the word at the cursor with its first suggestion; it
// reports whether there was one.
func (m *Model) complete() bool {
	words, _ := m.suggestions()
	if len(words) == 0 {
		return false
	}
	m.editor.ReplaceWordAtCursor(words[0] + " ")
	return true
}

// workspace is the session's workspace (the server's canonical path once
// the session started), where @ mentions are found.
func (m *Model) workspace() string {
	if m.cwd != "" {
		return m.cwd
	}
	return m.opts.Workspace
}

// quitWindow is how long after Ctrl+C interrupted a turn a second Ctrl+C
// quits; on an idle prompt the second press quits whenever it comes.
const quitWindow = 2 * time.Second

// ctrlC interrupts the running turn, or arms quitting: a second Ctrl+C
// quits, as in Claude Code and Codex, so one press never loses the session.
func (m *Model) ctrlC() tea.Cmd {
	running := m.turnID != "" && m.turnState != stateCancelling
	if m.quitArmed && !running && (m.quitArmedAt.IsZero() || m.now().Sub(m.quitArmedAt) <= quitWindow) {
		return tea.Quit
	}
	m.quitArmed = true
	m.quitArmedAt = time.Time{}
	if running {
		m.interrupt()
		m.quitArmedAt = m.now()
		m.flash = "Turn interrupted. Press Ctrl+C again to quit."
		return nil
	}
	m.flash = "Press Ctrl+C again to quit."
	return nil
}

// interrupt cancels the running turn. A non-empty queue is paused first,
// in the same ordered stream, so the next prompt does not start the moment
// the cancel lands: the user decides whether to go on (p in the queue
// panel resumes it).
func (m *Model) interrupt() {
	if m.queue.Len() > 0 && !m.queue.Paused() {
		m.send(&protocol.SessionPause{RequestID: m.newID(), SessionID: m.sessionID, Paused: true}, request{kind: reqPause})
	}
	if m.send(&protocol.TurnCancel{RequestID: m.newID(), SessionID: m.sessionID, TurnID: m.turnID}, request{kind: reqTurnCancel}) {
		m.turnState = stateCancelling
		if m.queue.Len() > 0 {
			m.flash = "Turn cancelled; the queue is paused: Tab, then p resumes it."
		}
	}
}

// editorKey handles a key for the editor: Esc abandons an edit, cancels
// the running turn or dismisses a problem; Enter submits; any other key
// edits.
func (m *Model) editorKey(k tea.KeyPressMsg, ks string) tea.Cmd {
	switch ks {
	case "esc":
		switch {
		case m.reasonFor != nil:
			m.dialog, m.reasonFor = m.reasonFor, nil
			m.editor.SetValue(m.draft)
			m.editor.SetPrompt("> ")
		case m.editing != nil:
			m.editing = nil
			m.editor.SetValue(m.draft)
			m.editor.SetPrompt("> ")
			m.flash = "Edit abandoned; the queued prompt is unchanged."
		case m.turnID != "" && m.turnState != stateCancelling:
			m.interrupt()
		case m.problem != "" && m.phase == ready:
			// A problem the connection survived can be dismissed; the
			// status-bar warning stays until a restart.
			m.clearProblem()
		}
		return nil
	case "enter":
		return m.submit()
	}
	m.editor.HandleKey(k)
	return nil
}

// queueKey handles a key while the queue panel has focus. Every change is
// a request; the panel changes only when the server's queue.* event comes.
func (m *Model) queueKey(ks string) tea.Cmd {
	e, ok := m.queue.Selected()
	if !ok {
		m.queue.Focus(false)
		return nil
	}
	switch ks {
	case "up", "k":
		m.queue.Select(-1)
	case "down", "j":
		m.queue.Select(1)
	case "e", "enter":
		m.editing = &e
		m.draft = m.editor.Value()
		m.editor.SetValue(e.Prompt)
		m.editor.SetPrompt("edit> ")
		m.queue.Focus(false)
		m.flash = "Editing a queued prompt: Enter saves it, Esc abandons the edit."
	case "K", "shift+up":
		above, ok := m.queue.Neighbour(-1)
		if !ok {
			return nil
		}
		m.send(&protocol.QueueMove{RequestID: m.newID(), SessionID: m.sessionID, QueueID: e.QueueID, Revision: e.Revision, BeforeQueueID: above.QueueID}, request{kind: reqQueueMove})
	case "J", "shift+down":
		if _, ok := m.queue.Neighbour(1); !ok {
			return nil
		}
		before := ""
		if next, ok := m.queue.Neighbour(2); ok {
			before = next.QueueID
		}
		m.send(&protocol.QueueMove{RequestID: m.newID(), SessionID: m.sessionID, QueueID: e.QueueID, Revision: e.Revision, BeforeQueueID: before}, request{kind: reqQueueMove})
	case "d", "delete", "backspace":
		m.send(&protocol.QueueRemove{RequestID: m.newID(), SessionID: m.sessionID, QueueID: e.QueueID, Revision: e.Revision}, request{kind: reqQueueRemove})
	case "p":
		m.send(&protocol.SessionPause{RequestID: m.newID(), SessionID: m.sessionID, Paused: !m.queue.Paused()}, request{kind: reqPause})
	case "esc":
		m.queue.Focus(false)
	}
	return nil
}

// submit sends the editor's text: a command, a queue edit or a prompt.
func (m *Model) submit() tea.Cmd {
	text := m.editor.Value()
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if m.reasonFor != nil {
		m.denyWithReason(text)
		return nil
	}
	if m.editing == nil && strings.HasPrefix(text, "/") && !strings.HasPrefix(text, "//") && !strings.Contains(text, "\n") {
		return m.command(strings.TrimSpace(text))
	}
	if m.editing == nil && strings.HasPrefix(text, "//") {
		text = text[1:] // "//etc is ..." sends "/etc is ..."
	}
	if m.phase != ready {
		m.flash = "Not connected to a session yet; your prompt is kept. Ctrl+R restarts the server."
		return nil
	}
	if len(text) > protocol.MaxPromptBytes {
		m.flash = fmt.Sprintf("The prompt is %d bytes, over the %d-byte limit; shorten it and press Enter again.", len(text), protocol.MaxPromptBytes)
		return nil
	}
	if m.editing != nil {
		e := m.editing
		if m.send(&protocol.QueueUpdate{RequestID: m.newID(), SessionID: m.sessionID, QueueID: e.QueueID, Revision: e.Revision, Prompt: text}, request{kind: reqQueueUpdate, prompt: text}) {
			m.editing = nil
			m.editor.SetPrompt("> ")
			m.editor.SetValue(m.draft)
		}
		return nil
	}
	sent := text
	if strings.Contains(text, "@") {
		var notes []string
		sent, notes = complete.Attach(m.workspace(), text, protocol.MaxPromptBytes)
		if len(notes) > 0 {
			m.flash = strings.Join(notes, "; ") + "."
		}
	}
	if !m.send(&protocol.TurnStart{RequestID: m.newID(), SessionID: m.sessionID, Prompt: sent}, request{kind: reqTurnStart, prompt: text, shown: complete.Shown(sent)}) {
		return nil
	}
	if m.opts.History != nil {
		if err := m.opts.History.Add(text); err != nil {
			m.flash = "The prompt was sent but not saved to the history: " + err.Error()
		}
		m.editor.SetHistory(m.opts.History.Entries())
	}
	m.editor.Reset()
	m.transcript.End()
	return nil
}

// command runs a slash command.
func (m *Model) command(line string) tea.Cmd {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	done := func() { m.editor.Reset() }
	switch name {
	case "/revoke":
		if !m.needSession() {
			return nil
		}
		if arg == "" {
			m.flash = "Name the rule to revoke, as /rules lists it: /revoke bash:go test"
			return nil
		}
		// Said once the server answers: a key the session does not hold is
		// refused, and the refusal must not follow a "Revoked".
		if m.send(&protocol.RuleRevoke{RequestID: m.newID(), SessionID: m.sessionID, Key: arg}, request{kind: reqRevoke, key: arg}) {
			done()
		}
	case "/quit", "/exit":
		return tea.Quit
	case "/help":
		m.help, m.helpScroll = true, 0
		done()
	case "/clear":
		if !m.needSession() {
			return nil
		}
		if m.turnID != "" {
			m.flash = "A turn is running; Esc cancels it, then /clear."
			return nil
		}
		if m.send(&protocol.SessionClear{RequestID: m.newID(), SessionID: m.sessionID}, request{kind: reqClear}) {
			done()
		}
	case "/compact":
		if !m.needSession() {
			return nil
		}
		if m.send(&protocol.SessionCompact{RequestID: m.newID(), SessionID: m.sessionID}, request{kind: reqCompact}) {
			done()
		}
	case "/resume":
		if !m.needSession() {
			return nil
		}
		if m.turnID != "" {
			m.flash = "A turn is running; Esc cancels it, then /resume."
			return nil
		}
		if m.send(&protocol.SessionList{RequestID: m.newID(), Cwd: m.opts.Workspace}, request{kind: reqList}) {
			done()
			m.flash = "Listing the stored sessions…"
		}
	case "/rules":
		if !m.needSession() {
			return nil
		}
		if m.send(&protocol.SessionRules{RequestID: m.newID(), SessionID: m.sessionID}, request{kind: reqRules}) {
			done()
		}
	case "/cost":
		if !m.needSession() {
			return nil
		}
		done()
		m.transcript.AddNotice(transcript.Info, m.costText())
	case "/mcp":
		if !m.needSession() {
			return nil
		}
		done()
		m.mcpView = mcpview.New(m.mcpServers)
	default:
		if m.moreCommand(name, arg, done) {
			return nil
		}
		m.flash = fmt.Sprintf("Unknown command %s; /help lists the commands.", name)
	}
	return nil
}

func (m *Model) needSession() bool {
	if m.phase != ready {
		m.flash = "Not connected to a session yet."
		return false
	}
	return true
}

func (m *Model) openPicker(sessions []protocol.SessionSummary) {
	m.flash = ""
	m.picker = picker.New(sessions, m.sessionID)
}

// resumeSession switches the view to a stored session: a new session.start
// with resume; the transcript is replaced by its replay.
func (m *Model) resumeSession(id string) {
	if m.live[id] {
		m.attachSession(id, true)
		return
	}
	m.transcript.AddNotice(transcript.Info, "Resuming session "+id+"…")
	m.resumeID = id
	m.startSession(id, true)
}
