package app

import (
	"cmp"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	sclient "github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/approval"
	"github.com/scv-cli/scv/scv-tui/internal/ui/complete"
	"github.com/scv-cli/scv/scv-tui/internal/ui/toolcard"
	"github.com/scv-cli/scv/scv-tui/internal/ui/transcript"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

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
		sent := m.hello
		if sent == nil {
			// An initialized before any initialize of this client: check it
			// against the one it would have sent.
			sent = sclient.HelloAt(ProtocolVersion, "", ClientName)
		}
		if _, err := sclient.Negotiated(sent, e); err != nil {
			m.setProblem(fmt.Sprintf("The server answered with protocol version %d; this client speaks version %d. Update scv-server, then press Ctrl+R.", e.ProtocolVersion, sent.ProtocolVersion))
			return true
		}
		if m.attachID != "" {
			m.attachSession(m.attachID, false)
		} else {
			m.startSession(m.resumeID, false)
		}
	case *protocol.SessionStarted:
		m.sessionStarted(e)
	case *protocol.SessionAttached:
		m.sessionAttached(e)
	case *protocol.SessionDetached:
		m.take(e.RequestID)
	case *protocol.SessionReplay:
		if e.SessionID == m.sessionID {
			m.replay(e.Items)
		}
	case *protocol.SessionListed:
		m.take(e.RequestID)
		m.openPicker(m.markLive(e))
	case *protocol.RulesListed:
		if r, _ := m.take(e.RequestID); r.kind == reqRevoke {
			m.transcript.AddNotice(transcript.Info, "Revoked "+r.key+": calls it covered ask again.")
		}
		m.showRules(e.Rules)
	case *protocol.SessionModel:
		m.sessionModel(e)
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
			m.retrying = ""
			m.transcript.Delta(e.Content)
		}
	case *protocol.TurnRetrying:
		if e.TurnID == m.turnID {
			m.retrying = retryText(e)
		}
	case *protocol.AssistantCompleted:
		if e.TurnID == m.turnID {
			m.transcript.Complete(e.Content)
		}
	case *protocol.ToolProposed:
		m.transcript.AddCard(cardKey(e.TurnID, e.CallID), toolcard.New(e.CallID, e.Name, e.Arguments))
	case *protocol.ApprovalRequested:
		m.approvalRequested(e)
	case *protocol.ApprovalResolved:
		m.approvalResolved(e)
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
			if e.SessionID == m.sessionID {
				m.usage.Add(*e.Usage)
				m.addSpend(*e.Usage)
			}
		}
		if e.SessionID == m.sessionID {
			m.turnsDone++
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
	// A call the turn ended under gets no tool.completed: stop its card,
	// keeping what it showed.
	why := "stopped: the turn ended before the call completed"
	switch {
	case level == transcript.Error:
		why = "stopped: the turn failed"
	case notice != "":
		why = "stopped: the turn was cancelled"
	}
	m.transcript.UpdateCards(cardKey(turn, ""), func(c *toolcard.Card) { c.Stop(why) })
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
	m.attachID = ""
	m.sessionID = e.SessionID
	m.resumeID = e.SessionID
	m.model, m.provider, m.price = e.Model, e.Provider, e.Price
	m.mcpServers = e.MCPServers
	m.mcpView = nil // it showed the previous session's servers
	m.files = nil   // the workspace may differ; listed again on the next "@"
	m.demo = e.Model == demoModel
	m.cwd = e.Cwd
	m.ctxMax = e.ContextMaxTokens
	m.ctxUsed = 0
	m.usage, m.turnsDone, m.spends = protocol.Usage{}, 0, nil
	if e.Usage != nil {
		// A resumed session's earlier turns are counted at the price of
		// the model it starts on: a switch is not stored.
		m.usage = *e.Usage
		m.addSpend(*e.Usage)
	}
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
	for _, w := range e.Warnings {
		m.transcript.AddNotice(transcript.Warn, "Configuration warning: "+wrap.OneLine(w))
	}
	if p := m.opts.Prompt; p != "" {
		// The command line's prompt goes once, as if typed: the editor's
		// draft is kept for after.
		m.opts.Prompt = ""
		draft := m.editor.Value()
		m.editor.SetValue(p)
		m.submit()
		if m.editor.Value() == "" {
			m.editor.SetValue(draft)
		}
	}
}

// demoBanner tells a user of the demo provider how to get a real one.
const demoBanner = "This is the built-in demo provider: replies are scripted, not from a real model. " +
	"To use a real model, quit and run `scv setup` (pick a provider, name or paste the key, test the connection), " +
	"or run `scv config path` to find your config file and add a provider, for example:\n" +
	"  [providers.openai]\n  api_key_env = \"OPENAI_API_KEY\"\n" +
	"then set that variable and restart scv. docs/configuration.md lists every provider setting."

func (m *Model) replay(items []protocol.ReplayItem) {
	for i, it := range items {
		switch it.Kind {
		case "user":
			m.transcript.AddUser(complete.Shown(it.Text))
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
			prompt = cmp.Or(r.shown, r.prompt)
		}
		if prompt != "" {
			m.transcript.AddUser(complete.Shown(prompt))
		}
	}
	return m.startTicking()
}

// endTurn forgets the running turn: its live reply stays as a preview, an
// open approval closes.
func (m *Model) endTurn() {
	m.retrying = ""
	m.dropReason()
	m.transcript.Interrupt()
	m.dialog = nil
	m.turnID = ""
	m.turnReq = ""
	m.turnState = ""
	m.compacting = false
}

// retryText says that the model request is being retried, with the
// provider's own status and message first.
func retryText(e *protocol.TurnRetrying) string {
	secs := (e.DelayMS + 999) / 1000
	text := fmt.Sprintf("Retrying (%d/%d) in %d s", e.Attempt, e.MaxAttempts, secs)
	if e.Status != 0 {
		text += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if msg := wrap.OneLine(e.Message); msg != "" {
		if e.Status != 0 {
			text += ","
		} else {
			text += ":"
		}
		text += " " + msg
	}
	return text
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

// dropReason abandons a reason being typed for a request that no longer
// waits (answered by another client, or its turn ended).
func (m *Model) dropReason() {
	if m.reasonFor == nil {
		return
	}
	m.reasonFor = nil
	m.editor.SetValue(m.draft)
	m.editor.SetPrompt("> ")
	m.flash = "The approval no longer waits; the reason was not sent."
}

func (m *Model) closeDialogFor(callID string) {
	if m.dialog != nil && m.dialog.Request.CallID == callID {
		m.dialog = nil
	}
}

// approvalResolved closes the open dialog when its request was answered
// by another client of the session (v4), and says who answered. An answer
// of this client finds the dialog already closed by resolve.
func (m *Model) approvalResolved(e *protocol.ApprovalResolved) {
	if m.reasonFor != nil && m.reasonFor.Request.ApprovalID == e.ApprovalID {
		m.dropReason()
	}
	d := m.dialog
	if d == nil || d.Request.ApprovalID != e.ApprovalID {
		return
	}
	m.dialog = nil
	if m.turnState == stateWaiting {
		m.turnState = stateRunning
	}
	by := e.By
	if by == "" {
		by = "another client"
	}
	verdict := "denied"
	if e.Approved {
		verdict = "approved"
		switch e.Scope {
		case protocol.ScopeSession:
			verdict = "approved for the session"
		case protocol.ScopeSessionWider:
			verdict = "approved for the session with the wider rule"
		}
	} else {
		m.transcript.UpdateCard(cardKey(d.Request.TurnID, d.Request.CallID), func(c *toolcard.Card) { c.State = toolcard.Proposed })
	}
	m.transcript.AddNotice(transcript.Info, fmt.Sprintf("%s was %s by %s.", d.Request.Name, verdict, by))
}

// resolve answers the open approval.
func (m *Model) resolve(approved bool, scope string) {
	m.answer(m.dialog, approved, scope, "")
}

// denyWithReason denies the approval whose reason the editor held and
// gives the model the reason (v4 feedback).
func (m *Model) denyWithReason(reason string) {
	d := m.reasonFor
	m.reasonFor = nil
	m.editor.SetValue(m.draft)
	m.editor.SetPrompt("> ")
	m.answer(d, false, "", reason)
}

// answer sends the answer to d's request; the dialog stays open when it
// cannot be sent.
func (m *Model) answer(d *approval.Dialog, approved bool, scope, feedback string) {
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
		Feedback:   feedback,
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
