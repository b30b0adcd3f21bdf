package app

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/version"

	"github.com/scv-cli/scv/scv-tui/internal/ui/approval"
	"github.com/scv-cli/scv/scv-tui/internal/ui/toolcard"
	"github.com/scv-cli/scv/scv-tui/internal/ui/transcript"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// demoModel is the model session.started names for the built-in demo
// provider (docs/protocol.md, session.started).
const demoModel = "scv-demo"

// newID returns a fresh request id.
func (m *Model) newID() string {
	m.nextID++
	return strconv.FormatUint(m.nextID, 10)
}

// send sends msg, remembering what it was. A failure is shown as a server
// problem (the input stays in the editor) and reported false.
func (m *Model) send(msg protocol.ClientMessage, r request) bool {
	if m.opts.Send == nil {
		m.setProblem("There is no connection to a server. Press Ctrl+R to start one.")
		return false
	}
	if err := m.opts.Send(msg); err != nil {
		m.setProblem(fmt.Sprintf("The message could not be sent to the server (%v). Your input is kept; press Ctrl+R to restart the server.", err))
		return false
	}
	id := msg.Request()
	m.pending[id] = r
	m.order = append(m.order, id)
	if len(m.order) > maxPending {
		delete(m.pending, m.order[0])
		m.order = m.order[1:]
	}
	return true
}

// take returns and forgets the request with id.
func (m *Model) take(id string) (request, bool) {
	r, ok := m.pending[id]
	if ok {
		delete(m.pending, id)
	}
	return r, ok
}

func (m *Model) serverStarted() tea.Cmd {
	m.endTurn()
	m.phase = initializing
	m.clearProblem()
	m.warning = ""
	m.flash = ""
	clear(m.pending)
	m.order = m.order[:0]
	m.send(&protocol.Initialize{
		RequestID:       m.newID(),
		ProtocolVersion: protocol.Version3,
		Client:          protocol.ClientInfo{Name: ClientName, Version: version.Version},
	}, request{kind: reqInitialize})
	return nil
}

// startSession sends session.start. switching is a /resume from an open
// session, which stays usable until the new one starts.
func (m *Model) startSession(resume string, switching bool) {
	if !switching {
		m.phase = starting
	}
	m.send(&protocol.SessionStart{
		RequestID: m.newID(),
		Cwd:       m.opts.Workspace,
		Model:     m.opts.Model,
		Resume:    resume,
	}, request{kind: reqSessionStart, resume: resume, switching: switching})
}

func (m *Model) serverProblem(p ServerProblem) {
	msg := "unknown problem"
	if p.Err != nil {
		msg = p.Err.Error()
	}
	if p.Exited {
		text := fmt.Sprintf("The server stopped: %s. Your input is kept; press Ctrl+R to restart it (its log is %s).", msg, m.logPath())
		if text != m.problem {
			m.clearProblem() // an earlier problem goes to the transcript before the queue list
		}
		m.phase = disconnected
		m.endTurn()
		m.dropQueue()
		m.setProblem(text)
		return
	}
	m.setProblem(fmt.Sprintf("The server sent something this client cannot read: %s. It was skipped; if the view looks wrong, press Ctrl+R to restart the server.", msg))
}

// dropQueue empties the queue panel when the server that held the queue
// is gone, and lists the prompts it held so that none is lost unseen.
func (m *Model) dropQueue() {
	entries := m.queue.Entries()
	if len(entries) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The server stopped with %d prompts queued; they did not run:", len(entries))
	for i, e := range entries {
		fmt.Fprintf(&b, "\n  %d. %s", i+1, e.Prompt)
	}
	m.transcript.AddNotice(transcript.Warn, b.String())
	m.queue.Clear()
}

// setProblem shows a problem above the editor. It is shown there only,
// not also in the transcript, while it stands; a problem it replaces goes
// to the transcript, as clearProblem does.
func (m *Model) setProblem(text string) {
	if text != m.problem {
		m.clearProblem()
	}
	m.problem = text
	m.layout()
}

// clearProblem takes the problem box down, recording its text in the
// transcript so that what happened stays in the history.
func (m *Model) clearProblem() {
	if m.problem != "" {
		m.transcript.AddNotice(transcript.Error, m.problem)
		m.problem = ""
	}
}

// event applies one server event: an event of the session or an answer
// to a request, a queue event, or an event of a turn.
func (m *Model) event(e protocol.Event) tea.Cmd {
	if s, ok := e.(protocol.Sequenced); ok {
		if s.Session() != m.sessionID || m.sessionID == "" {
			return nil // an event of a session this view left
		}
		if !m.checkSeq(s.SeqNum()) {
			return nil
		}
	}
	var cmd tea.Cmd
	if !m.sessionEvent(e) && !m.queueEvent(e) {
		// A later server may send events this client does not know;
		// turnEvent skips them (the wire layer reports undecodable ones).
		cmd = m.turnEvent(e)
	}
	m.layout()
	return cmd
}

// sessionEvent applies an event of the session or an answer to a
// request; it reports whether e was one.
func (m *Model) sessionEvent(e protocol.Event) bool {
	switch e := e.(type) {
	case *protocol.Initialized:
		m.take(e.RequestID)
		if e.ProtocolVersion != protocol.Version3 {
			m.setProblem(fmt.Sprintf("The server answered with protocol version %d; this client speaks version 3. Update scv-server, then press Ctrl+R.", e.ProtocolVersion))
			return true
		}
		m.startSession(m.resumeID, false)
	case *protocol.SessionStarted:
		m.sessionStarted(e)
	case *protocol.SessionReplay:
		if e.SessionID == m.sessionID {
			m.replay(e.Items)
		}
	case *protocol.SessionListed:
		m.take(e.RequestID)
		m.openPicker(e.Sessions)
	case *protocol.RulesListed:
		m.take(e.RequestID)
		m.showRules(e.Rules)
	case *protocol.Error:
		m.serverError(e)
	case *protocol.SessionPaused:
		m.take(e.RequestID)
		m.queue.SetPaused(e.Paused)
	case *protocol.SessionCleared:
		m.take(e.RequestID)
		m.transcript.Clear()
		m.queue.Clear()
		m.ctxUsed = 0
		m.transcript.AddNotice(transcript.Info, "The conversation was cleared: the model starts afresh, and the queue and session rules were dropped.")
	case *protocol.SessionTrimmed:
		m.transcript.AddNotice(transcript.Info, fmt.Sprintf("The oldest turns left the model's history to keep it within its bound (%d messages dropped; %s kept). They are still shown here.", e.RemovedMessages, sizeWords(e.HistoryBytes)))
	case *protocol.ContextCompacted:
		m.ctxUsed = e.AfterTokens
		m.transcript.AddNotice(transcript.Info, fmt.Sprintf("The context was compacted: about %d tokens became %d (%d older messages were summarized).", e.BeforeTokens, e.AfterTokens, e.RemovedMessages))
	default:
		return false
	}
	return true
}

// queueEvent applies an event of the prompt queue; it reports whether e
// was one.
func (m *Model) queueEvent(e protocol.Event) bool {
	switch e := e.(type) {
	case *protocol.QueueSnapshot:
		m.queue.Snapshot(e.Entries)
	case *protocol.QueueEnqueued:
		m.take(e.RequestID)
		m.queue.Enqueued(e.Entry)
	case *protocol.QueueUpdated:
		m.take(e.RequestID)
		m.queue.Updated(e.Entry)
	case *protocol.QueueMoved:
		m.take(e.RequestID)
		m.queue.Moved(e.Entry)
	case *protocol.QueueRemoved:
		m.take(e.RequestID)
		m.queue.Removed(e.Entry)
	case *protocol.QueueDequeued:
		m.queue.Removed(e.Entry)
		m.dequeued[e.RequestID] = e.Entry.Prompt
	default:
		return false
	}
	return true
}

// turnEvent applies an event of a turn: its start and end, the
// assistant's text, and its tool calls. It skips an event it does not
// know.
func (m *Model) turnEvent(e protocol.Event) tea.Cmd {
	switch e := e.(type) {
	case *protocol.TurnStarted:
		return m.turnStarted(e)
	case *protocol.AssistantDelta:
		if e.TurnID == m.turnID {
			m.transcript.Delta(e.Content)
		}
	case *protocol.AssistantCompleted:
		if e.TurnID == m.turnID {
			m.transcript.Complete(e.Content)
		}
	case *protocol.ToolProposed:
		m.transcript.AddCard(cardKey(e.TurnID, e.CallID), toolcard.New(e.CallID, e.Name, e.Arguments))
	case *protocol.ApprovalRequested:
		m.approvalRequested(e)
	case *protocol.ToolStarted:
		rule := ""
		if e.Rule != nil {
			rule = e.Rule.Description
		}
		m.updateCard(e.TurnID, e.CallID, e.Name, func(c *toolcard.Card) { c.Start(rule) })
		m.toolSettled(e.CallID)
	case *protocol.ToolProgress:
		m.updateCard(e.TurnID, e.CallID, e.Name, func(c *toolcard.Card) { c.AddProgress(e.Line) })
	case *protocol.ToolCompleted:
		m.updateCard(e.TurnID, e.CallID, e.Name, func(c *toolcard.Card) { c.Complete(e.Success, e.Output, e.Truncated) })
		m.toolSettled(e.CallID)
	case *protocol.TurnCompleted:
		if e.Usage != nil {
			// input_tokens sums every request of the turn; per request it
			// is the context then in use.
			steps := int64(max(e.Steps, 1))
			m.ctxUsed = e.Usage.InputTokens/steps + e.Usage.OutputTokens
		}
		m.turnEnded(e.TurnID, transcript.Info, "")
	case *protocol.TurnCancelled:
		m.turnEnded(e.TurnID, transcript.Info, "The turn was cancelled.")
	case *protocol.TurnFailed:
		m.turnEnded(e.TurnID, transcript.Error, failureText(e.Code, e.Message))
	}
	return nil
}

// toolSettled closes the approval dialog of call (it was answered, here or
// elsewhere) and, when the turn was waiting for an answer, marks it
// running again.
func (m *Model) toolSettled(call string) {
	m.closeDialogFor(call)
	if m.turnState == stateWaiting {
		m.turnState = stateRunning
	}
}

// turnEnded ends the view's turn when turn is it, with a notice of level
// unless notice is "".
func (m *Model) turnEnded(turn string, level transcript.Level, notice string) {
	if turn != m.turnID {
		return
	}
	m.take(m.turnReq)
	m.endTurn()
	if notice != "" {
		m.transcript.AddNotice(level, notice)
	}
}

// checkSeq checks a session event's seq against the last one: a gap means
// lost events, a repeat a duplicated one (which is dropped). It reports
// whether to apply the event.
func (m *Model) checkSeq(seq uint64) bool {
	want := m.lastSeq + 1
	switch {
	case seq == want:
		m.lastSeq = seq
		return true
	case seq < want:
		m.warning = fmt.Sprintf("a duplicate event (seq %d) was ignored", seq)
		m.setProblem(fmt.Sprintf("The server sent event %d twice (the last was %d); the copy was ignored. If the view looks wrong, press Ctrl+R to restart the server.", seq, m.lastSeq))
		return false
	default:
		m.warning = fmt.Sprintf("events %d to %d were lost", want, seq-1)
		m.setProblem(fmt.Sprintf("Events were lost: the server's sequence jumped from %d to %d, so part of the conversation may be missing here. Press Ctrl+R to restart the server and reload the session.", m.lastSeq, seq))
		m.lastSeq = seq
		return true
	}
}

func (m *Model) sessionStarted(e *protocol.SessionStarted) {
	r, _ := m.take(e.RequestID)
	if r.kind != reqSessionStart {
		return // not an answer to this client's session.start
	}
	m.sessionID = e.SessionID
	m.resumeID = e.SessionID
	m.model = e.Model
	m.demo = e.Model == demoModel
	m.cwd = e.Cwd
	m.ctxMax = e.ContextMaxTokens
	m.ctxUsed = 0
	m.lastSeq = 0
	m.phase = ready
	m.queue.Clear()
	m.queue.SetPaused(false)
	m.transcript.SetBounds(e.MaxTranscriptBytes, int(min(e.MaxTranscriptItems, 1<<30)))
	if m.opts.History != nil {
		m.opts.History.SetBounds(e.MaxPromptHistoryBytes, int(min(e.MaxPromptHistoryItems, 1<<30)))
		m.editor.SetHistory(m.opts.History.Entries())
	}
	if e.Resumed {
		// The replay that follows is the server's transcript: it replaces
		// the one shown, which may be partial after a server restart.
		m.transcript.Clear()
		m.transcript.AddNotice(transcript.Info, "Resumed session "+e.SessionID+".")
		if e.Usage != nil {
			m.ctxUsed = 0 // the totals are of every turn, not the context now
		}
	}
	if m.demo {
		m.transcript.AddNotice(transcript.Warn, demoBanner)
	}
}

// demoBanner tells a user of the demo provider how to get a real one.
const demoBanner = "This is the built-in demo provider: replies are scripted, not from a real model. " +
	"To use a real model, run `scv config path` to find your config file and add a provider, for example:\n" +
	"  [providers.openai]\n  api_key_env = \"OPENAI_API_KEY\"\n" +
	"then set that variable and restart scv. docs/configuration.md lists every provider setting."

func (m *Model) replay(items []protocol.ReplayItem) {
	for i, it := range items {
		switch it.Kind {
		case "user":
			m.transcript.AddUser(it.Text)
		case "assistant":
			m.transcript.AddReply(it.Text)
		case "tool":
			c := toolcard.New(it.CallID, it.Name, it.Arguments)
			ok := it.Success != nil && *it.Success
			c.Complete(ok, it.Text, false)
			m.transcript.AddCard(fmt.Sprintf("replay/%s/%s/%d", it.TurnID, it.CallID, i), c)
		default:
			level := transcript.Info
			if it.Interrupted {
				level = transcript.Warn
			}
			m.transcript.AddNotice(level, it.Text)
		}
	}
}

// Turn states shown in the status bar.
const (
	stateRunning    = "running"
	stateWaiting    = "waiting for approval"
	stateCancelling = "cancelling"
	stateCompacting = "compacting"
)

func (m *Model) turnStarted(e *protocol.TurnStarted) tea.Cmd {
	if m.turnID != "" {
		m.endTurn() // a terminal event was lost; start clean
	}
	m.turnID = e.TurnID
	m.turnReq = e.RequestID
	m.turnStart = m.now()
	m.turnState = stateRunning
	m.compacting = false
	r := m.pending[e.RequestID]
	switch {
	case e.Origin != nil:
		text := "The server started a turn by itself (" + wrap.OneLine(e.Origin.Kind) + ")"
		if len(e.Origin.Jobs) > 0 {
			text += " to report the jobs " + wrap.OneLine(strings.Join(e.Origin.Jobs, ", "))
		}
		m.transcript.AddNotice(transcript.Info, text+".")
	case r.kind == reqCompact:
		m.compacting = true
		m.turnState = stateCompacting
		m.transcript.AddNotice(transcript.Info, "Compacting the conversation…")
	default:
		prompt, ok := m.dequeued[e.RequestID]
		if ok {
			delete(m.dequeued, e.RequestID)
		} else {
			prompt = r.prompt
		}
		if prompt != "" {
			m.transcript.AddUser(prompt)
		}
	}
	return m.startTicking()
}

// endTurn forgets the running turn: its live reply stays as a preview, an
// open approval closes.
func (m *Model) endTurn() {
	m.transcript.Interrupt()
	m.dialog = nil
	m.turnID = ""
	m.turnReq = ""
	m.turnState = ""
	m.compacting = false
}

func cardKey(turnID, callID string) string { return turnID + "/" + callID }

// updateCard applies f to a call's card, creating the card if its
// tool.proposed never came (so no result is lost).
func (m *Model) updateCard(turnID, callID, name string, f func(*toolcard.Card)) {
	key := cardKey(turnID, callID)
	if !m.transcript.UpdateCard(key, f) {
		c := toolcard.New(callID, name, []byte("{}"))
		f(c)
		m.transcript.AddCard(key, c)
	}
}

func (m *Model) approvalRequested(e *protocol.ApprovalRequested) {
	key := cardKey(e.TurnID, e.CallID)
	args := ""
	if !m.transcript.UpdateCard(key, func(c *toolcard.Card) { c.State = toolcard.Waiting; args = c.Arguments }) {
		c := toolcard.New(e.CallID, e.Name, []byte("{}"))
		c.State = toolcard.Waiting
		m.transcript.AddCard(key, c)
	}
	m.dialog = approval.New(*e, args)
	if m.turnState == stateRunning {
		m.turnState = stateWaiting
	}
	m.transcript.End() // the dialog's card is at the bottom
}

func (m *Model) closeDialogFor(callID string) {
	if m.dialog != nil && m.dialog.Request.CallID == callID {
		m.dialog = nil
	}
}

// resolve answers the open approval.
func (m *Model) resolve(approved bool, scope string) {
	d := m.dialog
	if d == nil {
		return
	}
	m.dialog = nil
	ok := m.send(&protocol.ApprovalResolve{
		RequestID:  m.newID(),
		SessionID:  m.sessionID,
		ApprovalID: d.Request.ApprovalID,
		Approved:   approved,
		Scope:      scope,
	}, request{kind: reqApproval, dialog: d})
	if !ok {
		m.dialog = d // still unanswered
		return
	}
	if m.turnState == stateWaiting {
		m.turnState = stateRunning
	}
	if !approved {
		m.transcript.UpdateCard(cardKey(d.Request.TurnID, d.Request.CallID), func(c *toolcard.Card) { c.State = toolcard.Proposed })
	}
}

func (m *Model) serverError(e *protocol.Error) {
	r, known := m.take(e.RequestID)
	text := wrap.OneLine(e.Message)
	if e.Fatal {
		m.phase = disconnected
		m.setProblem(fmt.Sprintf("The server ended the connection (%s): %s. Press Ctrl+R to restart it.", e.Code, text))
		return
	}
	if !known {
		m.transcript.AddNotice(transcript.Error, fmt.Sprintf("The server reported a problem (%s): %s", e.Code, text))
		return
	}
	switch r.kind {
	case reqInitialize:
		m.setProblem(fmt.Sprintf("The server refused to connect (%s): %s. Press Ctrl+R to try again.", e.Code, text))
	case reqSessionStart:
		if r.switching {
			m.transcript.AddNotice(transcript.Warn, fmt.Sprintf("Session %s could not be resumed: %s. You are still in the current session.", r.resume, text))
			m.resumeID = m.sessionID
			return
		}
		if r.resume != "" {
			m.transcript.AddNotice(transcript.Warn, fmt.Sprintf("Session %s could not be resumed: %s. A new session starts; the model does not see the conversation above.", r.resume, text))
			m.resumeID = ""
			m.startSession("", false)
			return
		}
		m.setProblem(fmt.Sprintf("The server refused to start a session: %s. Fix that, then press Ctrl+R.", text))
	case reqTurnStart:
		m.transcript.AddNotice(transcript.Error, "The prompt was not sent: "+text)
		if m.editor.Empty() && r.prompt != "" {
			m.editor.SetValue(r.prompt) // nothing the user typed is lost
		}
	case reqTurnCancel:
		if e.Code != protocol.ErrTurnNotFound { // the turn had already ended
			m.flash = "The turn could not be cancelled: " + text
		}
	case reqApproval:
		if e.Code == protocol.ErrInvalidRequest && r.dialog != nil && m.turnID == r.dialog.Request.TurnID {
			m.dialog = r.dialog // the call still waits: ask again
			m.flash = "The server refused that answer: " + text
			return
		}
		m.transcript.AddNotice(transcript.Warn, "The approval was not applied: "+text)
	case reqQueueUpdate, reqQueueMove, reqQueueRemove:
		if e.Code == protocol.ErrQueueConflict && e.Entry != nil {
			m.queue.Updated(*e.Entry)
			m.transcript.AddNotice(transcript.Warn, fmt.Sprintf("The queued prompt changed on the server before your change arrived, so it was not applied. It is now (revision %d): %q. Try again if you still want the change.", e.Entry.Revision, wrap.OneLine(e.Entry.Prompt)))
			if r.kind == reqQueueUpdate && m.editor.Empty() && r.prompt != "" {
				m.editor.SetValue(r.prompt)
			}
			return
		}
		m.transcript.AddNotice(transcript.Warn, "The queue change was not applied: "+text)
	case reqClear:
		m.flash = "The conversation was not cleared: " + text
	case reqCompact:
		m.flash = "Compaction did not start: " + text
	default:
		m.transcript.AddNotice(transcript.Error, fmt.Sprintf("The server refused a request (%s): %s", e.Code, text))
	}
}

func (m *Model) showRules(rules []protocol.Rule) {
	if len(rules) == 0 {
		m.transcript.AddNotice(transcript.Info, "No session rules are granted: every risky call asks.")
		return
	}
	var b strings.Builder
	b.WriteString("Session rules (calls they cover run without asking):")
	for _, r := range rules {
		b.WriteString("\n  " + r.Key + ": " + r.Description)
	}
	m.transcript.AddNotice(transcript.Info, b.String())
}

// failureText says in words why a turn failed (docs/protocol.md,
// "turn.failed codes"), followed by the server's message.
func failureText(code protocol.FailureCode, msg string) string {
	var why string
	switch code {
	case protocol.FailProviderError:
		why = "the model provider failed (an HTTP error after retries, a stream that stalled or broke, or no model configured)"
	case protocol.FailResponseLimit:
		why = "the model's reply was larger than the limits (1 MiB per event or text, 4 MiB per response, 256 KiB of arguments per call)"
	case protocol.FailToolLimit:
		why = "the model asked for more than 32 tool calls in one response; none of them ran"
	case protocol.FailStepLimit:
		why = "the turn reached the step limit (agent.max_steps model requests) while the model still asked for tools"
	case protocol.FailContextLimit:
		why = "the conversation no longer fits the model's context window, even after compaction"
	case protocol.FailHistoryLimit:
		why = "this turn alone produced more than the history can hold; its messages were dropped and its prompt kept"
	case protocol.FailInternal:
		why = "the server hit an internal error"
	default:
		why = "of an error this client does not know (" + string(code) + ")"
	}
	text := "The turn failed because " + why + "."
	if msg = wrap.OneLine(msg); msg != "" {
		text += " The server said: " + msg
	}
	return text
}

func sizeWords(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
