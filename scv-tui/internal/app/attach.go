package app

import (
	"fmt"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/transcript"
)

// Attaching to a session open in the daemon (protocol 4): `scv --attach
// ID`, or picking a live session in /resume. Instead of a stored-session
// resume (session.start with resume, which the daemon refuses for a
// session it holds open), the TUI sends session.attach with after_seq 0:
// the daemon answers with the session's state and replays the events of
// its ring, which rebuild the view (the turns, the queue, the pending
// approvals), then sends the live events, which every attached client
// sees alike (docs/daemon.md).

// attachSession sends session.attach for id. switching is a /resume from
// an open session, which stays usable until the attach is answered.
func (m *Model) attachSession(id string, switching bool) {
	if !switching {
		m.phase = starting
	} else {
		m.transcript.AddNotice(transcript.Info, "Attaching to session "+id+", open in the daemon…")
	}
	after := uint64(0)
	m.send(&protocol.SessionAttach{RequestID: m.newID(), SessionID: id, AfterSeq: &after},
		request{kind: reqAttach, resume: id, switching: switching})
}

// sessionAttached applies the answer to attachSession: the view becomes
// the session's, and the replayed events that follow fill it in.
func (m *Model) sessionAttached(e *protocol.SessionAttached) {
	r, _ := m.take(e.RequestID)
	if r.kind != reqAttach {
		return // not an answer to this client's session.attach
	}
	if r.switching && m.sessionID != "" && m.sessionID != e.SessionID {
		// The view leaves the other session; it stays open in the daemon.
		m.send(&protocol.SessionDetach{RequestID: m.newID(), SessionID: m.sessionID}, request{kind: reqAttach})
	}
	m.endTurn()
	m.attachID = e.SessionID
	m.sessionID = e.SessionID
	m.resumeID = e.SessionID
	m.model, m.provider, m.price = e.Model, e.Provider, e.Price
	m.mcpServers = nil
	m.mcpView = nil
	m.demo = e.Model == demoModel
	m.cwd = e.Cwd
	m.ctxMax = e.ContextMaxTokens
	m.ctxUsed = 0
	// The replayed events follow from here without a gap.
	m.lastSeq = e.LastSeq - min(e.LastSeq, uint64(e.Replayed))
	m.phase = ready
	m.queue.Clear()
	m.queue.SetPaused(e.Paused)
	m.transcript.Clear()
	others := e.Clients - 1
	m.transcript.AddNotice(transcript.Info, fmt.Sprintf("Attached to session %s, open in the daemon (%d other %s attached). Its recent events follow; the turns and prompts of every client on it show here.",
		e.SessionID, others, plural(others, "client", "clients")))
	if e.ReplayTruncated {
		// What is gone from the ring cannot be replayed: the state is.
		m.queue.Snapshot(e.Queue)
		m.transcript.AddNotice(transcript.Warn, "The daemon no longer holds the session's earliest events, so only the recent ones show here; the model still has the whole conversation.")
	}
}

// attachRefused handles a refused session.attach: a session that is not
// open in the daemon (or no daemon: a server of the TUI's own) is resumed
// from its stored history instead.
func (m *Model) attachRefused(r request, text string) {
	if r.resume == "" {
		return // the detach of a session the view left
	}
	m.attachID = ""
	if r.switching {
		m.transcript.AddNotice(transcript.Warn, fmt.Sprintf("Session %s could not be attached (%s); resuming it from its stored history.", r.resume, text))
		m.resumeID = r.resume
		m.startSession(r.resume, true)
		return
	}
	m.transcript.AddNotice(transcript.Warn, fmt.Sprintf("Session %s is not open here (%s); resuming it from its stored history.", r.resume, text))
	m.resumeID = r.resume
	m.startSession(r.resume, false)
}

// markLive remembers which listed sessions are open in the daemon and
// says so in their titles, for the picker. A live session with nothing
// stored yet (no turn so far, such as one another client just started)
// is listed first, since it is the newest.
func (m *Model) markLive(e *protocol.SessionListed) []protocol.SessionSummary {
	m.live = map[string]bool{}
	for _, l := range e.Live {
		m.live[l.SessionID] = true
	}
	stored := map[string]bool{}
	for _, s := range e.Sessions {
		stored[s.SessionID] = true
	}
	var out []protocol.SessionSummary
	for _, l := range e.Live {
		if !stored[l.SessionID] && l.SessionID != m.sessionID {
			out = append(out, protocol.SessionSummary{SessionID: l.SessionID, Cwd: l.Cwd,
				Title: fmt.Sprintf("[open in the daemon] %s, %d client(s), nothing stored yet", l.SessionID, l.Clients)})
		}
	}
	for _, s := range e.Sessions {
		// The session on screen is marked "(open now)" by the picker; only
		// the others open elsewhere are the daemon's.
		if m.live[s.SessionID] && s.SessionID != m.sessionID {
			s.Title = "[open in the daemon] " + s.Title
		}
		out = append(out, s)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
