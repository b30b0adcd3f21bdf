package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	sclient "github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/protocol"

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
	// The one initialize of every client (shared/client); the answer is
	// checked against it by sclient.Negotiated.
	m.hello = sclient.HelloAt(ProtocolVersion, m.newID(), ClientName)
	m.send(m.hello, request{kind: reqInitialize})
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
		var ce interface{ ConfigError() bool }
		if errors.As(p.Err, &ce) && ce.ConfigError() {
			// A restart alone meets the same configuration: say what
			// the key is for, once the message above is acted on.
			text = fmt.Sprintf("%s\nYour input is kept. A restart reads the configuration again: once it is fixed (or the key is in config.toml), press Ctrl+R; a variable exported in another shell is not seen until scv is started again.", msg)
		}
		if text != m.problem {
			m.clearProblem() // an earlier problem goes to the transcript before the queue list
		}
		m.phase = disconnected
		m.endTurn()
		m.dropQueue()
		if p := m.opts.Prompt; p != "" && m.editor.Value() == "" {
			// The command line's prompt waits for a session that did not
			// start: it goes into the editor, so the input is kept in
			// sight and Enter sends it once the server runs.
			m.opts.Prompt = ""
			m.editor.SetValue(p)
		}
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
	case reqAttach:
		m.attachRefused(r, text)
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
	case reqRevoke:
		m.transcript.AddNotice(transcript.Warn, fmt.Sprintf("%s was not revoked: %s. /rules lists the keys this session holds.", r.key, strings.TrimSuffix(text, ".")))
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
	b.WriteString("Session rules (calls they cover run without asking; /revoke KEY removes one):")
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
		why = "the server reported an error this client does not know (" + string(code) + ")"
	}
	// The server's message (for a provider error, the provider's own
	// status and text) says what happened; the code's meaning is the
	// likely cause, so it comes second.
	if msg = wrap.OneLine(msg); msg != "" {
		return "The turn failed: " + strings.TrimSuffix(msg, ".") + ". Likely cause: " + why + "."
	}
	return "The turn failed because " + why + "."
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
