package app

import (
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/protocol"
)

// TestAttachAtStart: Options.Attach sends session.attach (from seq 0)
// instead of session.start; the answer makes the view the session's and
// the replayed events that follow apply without a gap warning, another
// client's turn included; a Ctrl+R reconnect attaches again.
func TestAttachAtStart(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.m.attachID = sid
	at := h.startAttached()
	if at.SessionID != sid || at.AfterSeq == nil || *at.AfterSeq != 0 {
		t.Fatalf("session.attach = %s", encode(at))
	}
	h.event(`{"type":"session.attached","request_id":"` + at.RequestID + `","session_id":"` + sid + `","cwd":"` + ws + `","model":"gpt-4.1-mini","context_max_tokens":128000,"max_server_frame_bytes":8388608,"last_seq":5,"queue":[],"paused":false,"pending_approvals":[],"replayed":5,"clients":2}`)
	if h.m.sessionID != sid || h.m.phase != ready || h.m.lastSeq != 0 {
		t.Fatalf("after session.attached: session %q phase %v seq %d", h.m.sessionID, h.m.phase, h.m.lastSeq)
	}
	for _, f := range []string{
		`{"type":"queue.snapshot","request_id":"2","session_id":"` + sid + `","seq":0,"entries":[]}`,
		`{"type":"queue.enqueued","request_id":"3","session_id":"` + sid + `","seq":0,"entry":{"queue_id":"q1","revision":1,"prompt":"What does main.go do?","submitter":"scv-exec","position":0}}`,
		`{"type":"queue.dequeued","request_id":"3","session_id":"` + sid + `","seq":0,"entry":{"queue_id":"q1","revision":1,"prompt":"What does main.go do?","submitter":"scv-exec","position":0}}`,
		`{"type":"turn.started","request_id":"3","session_id":"` + sid + `","turn_id":"` + tid + `","seq":0}`,
		`{"type":"assistant.completed","request_id":"3","session_id":"` + sid + `","turn_id":"` + tid + `","seq":0,"content":"It starts the server."}`,
	} {
		h.event(f)
	}
	screen := h.screen()
	for _, want := range []string{"Attached to session " + sid, "1 other client", "What does main.go do?", "It starts the server."} {
		if !strings.Contains(strings.Join(strings.Fields(screen), " "), want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
	if h.m.warning != "" {
		t.Errorf("warning after the replay: %s", h.m.warning)
	}
	// The server restarts (Ctrl+R): the view attaches again.
	if at := h.startAttached(); at.SessionID != sid {
		t.Fatalf("after a reconnect: %s", encode(at))
	}
}

// TestAttachRefusedResumes: a session that is not open in the daemon is
// resumed from its stored history instead.
func TestAttachRefusedResumes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.m.attachID = sid
	at := h.startAttached()
	h.event(`{"type":"error","request_id":"` + at.RequestID + `","code":"session_not_found","message":"no live session","fatal":false}`)
	if ss := last[*protocol.SessionStart](h); ss.Resume != sid {
		t.Fatalf("no resume after a refused attach: %s", encode(ss))
	}
	if h.m.attachID != "" {
		t.Error("still attaching")
	}
}

// TestResumePickerAttachesLive: /resume marks the sessions open in the
// daemon, and picking one sends session.attach, not session.start.
func TestResumePickerAttachesLive(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	h.typeText("/resume")
	h.key("enter")
	sl := last[*protocol.SessionList](h)
	other := "11111111-2222-4333-8444-555555555555"
	h.event(`{"type":"session.listed","request_id":"` + sl.RequestID + `","sessions":[{"session_id":"` + sid + `","cwd":"` + ws + `","title":"This one","created_at":"2026-12-01T08:00:00Z","updated_at":"2026-12-01T09:00:00Z","turns":1,"bytes":10},{"session_id":"` + other + `","cwd":"` + ws + `","title":"Fix the failing test.","created_at":"2026-12-01T08:00:00Z","updated_at":"2026-12-01T08:05:00Z","turns":2,"bytes":18432}],"live":[{"session_id":"` + other + `","cwd":"` + ws + `","model":"m","clients":1,"queued":0,"paused":false,"pending_approvals":0},{"session_id":"` + sid + `","cwd":"` + ws + `","model":"m","clients":1,"queued":0,"paused":false,"pending_approvals":0}]}`)
	if s := h.m.render(); !strings.Contains(s, "[open in the daemon] Fix the failing test.") {
		t.Errorf("the live session is not marked:\n%s", s)
	}
	// The session on screen is live too (the server holds it for this
	// client): it is the one "open now", not one of the daemon's.
	if s := h.m.render(); !strings.Contains(s, "1 turn · This one (open now)") || strings.Count(s, "[open in the daemon]") != 1 {
		t.Errorf("the session on screen is marked as another's:\n%s", s)
	}
	if got := len(newHarness(t).m.markLive(&protocol.SessionListed{Live: []protocol.LiveSession{{SessionID: "fresh", Clients: 1}}})); got != 1 {
		t.Errorf("a live session with nothing stored is not listed: %d entries", got)
	}
	h.key("down", "enter")
	at := last[*protocol.SessionAttach](h)
	if at.SessionID != other {
		t.Fatalf("session.attach = %s", encode(at))
	}
	h.event(`{"type":"session.attached","request_id":"` + at.RequestID + `","session_id":"` + other + `","cwd":"` + ws + `","model":"gpt-4.1-mini","context_max_tokens":128000,"max_server_frame_bytes":8388608,"last_seq":0,"queue":[],"paused":false,"pending_approvals":[],"replayed":0,"clients":2}`)
	if d := last[*protocol.SessionDetach](h); d.SessionID != sid {
		t.Fatalf("the session left was not detached: %s", encode(d))
	}
	if h.m.sessionID != other {
		t.Fatalf("view on %q", h.m.sessionID)
	}
}

// startAttached starts the server and answers initialize; it returns the
// session.attach the model sent then.
func (h *harness) startAttached() *protocol.SessionAttach {
	h.t.Helper()
	h.msg(ServerStarted{})
	ini := last[*protocol.Initialize](h)
	h.event(`{"type":"initialized","request_id":"` + ini.RequestID + `","protocol_version":4,"server":{"name":"scv-server","version":"0.1.0"}}`)
	return last[*protocol.SessionAttach](h)
}
