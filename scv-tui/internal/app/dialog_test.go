package app

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
)

// longURL is a web_fetch URL of 1500 characters whose host is at the start.
var longURL = "https://docs.example.org/" + strings.Repeat("a1b2c3d4e5", 147) + "x"

// openFetchApproval sizes the screen and opens an approval for a web_fetch
// of longURL.
func openFetchApproval(h *harness, w, ht int) {
	h.t.Helper()
	h.msg(tea.WindowSizeMsg{Width: w, Height: ht})
	rid := h.prompt("fetch it").RequestID
	h.event(turnEvent("turn.started", rid, tid, ""))
	h.event(turnEvent("tool.proposed", rid, tid, `"call_id":"call_9","name":"web_fetch","arguments":{"url":"`+longURL+`"}`))
	h.event(turnEvent("approval.requested", rid, tid, `"approval_id":"ap9","call_id":"call_9","name":"web_fetch","risk":"network","cwd":"`+ws+`","summary":"Fetch `+longURL+`"`))
	if h.m.dialog == nil {
		h.t.Fatal("approval dialog not open")
	}
}

// requireDialogVisible fails unless the whole dialog is on the screen: its
// top border, title, the start of the summary with the host, the risk and
// every key hint.
func requireDialogVisible(t *testing.T, screen string, height int) {
	t.Helper()
	if n := strings.Count(screen, "\n") + 1; n != height {
		t.Errorf("%d lines, want %d", n, height)
	}
	for _, want := range []string{"╭", "Allow web_fetch?", "Fetch https://docs.example.org/", "risk network", "y/Enter", "n/Esc", "╰"} {
		if !strings.Contains(screen, want) {
			t.Errorf("%q is not on the screen:\n%s", want, screen)
		}
	}
}

func TestLongSummaryApproval(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	openFetchApproval(h, 40, 20)
	out := h.screen()
	requireDialogVisible(t, out, 20)
	if !strings.Contains(out, "… (v shows the arguments)") {
		t.Errorf("a cut summary has no marker:\n%s", out)
	}
	if h.m.overflow {
		t.Error("the screen overflowed")
	}
	golden.RequirePlain(t, h.m.render())

	// Every size from small to large keeps the dialog whole, with the
	// arguments shown or not.
	for _, w := range []int{40, 60, 100} {
		for ht := 12; ht <= 40; ht += 2 {
			for _, args := range []bool{false, true} {
				h.msg(tea.WindowSizeMsg{Width: w, Height: ht})
				h.m.dialog.ShowArgs = args
				t.Run(strconv.Itoa(w)+"x"+strconv.Itoa(ht)+"/args="+strconv.FormatBool(args), func(t *testing.T) {
					out := h.m.render()
					golden.RequireWidth(t, out, w)
					requireDialogVisible(t, golden.Plain(out), ht)
				})
			}
		}
	}
}

// argsPosition reads the arguments view's position indicator.
var argsPosition = regexp.MustCompile(`lines (\d+)–(\d+) of (\d+)`)

func position(t *testing.T, screen string) (first, end, total int) {
	t.Helper()
	m := argsPosition.FindStringSubmatch(screen)
	if m == nil {
		t.Fatalf("no position indicator:\n%s", screen)
	}
	first, _ = strconv.Atoi(m[1])
	end, _ = strconv.Atoi(m[2])
	total, _ = strconv.Atoi(m[3])
	return first, end, total
}

func TestScrollArguments(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.connect("gpt-4.1-mini")
	openFetchApproval(h, 40, 20)
	h.key("v")
	first, end, total := position(t, h.screen())
	if first != 1 || end < first || total < 30 {
		t.Fatalf("opened at lines %d–%d of %d", first, end, total)
	}
	page := end - first + 1
	steps := []struct {
		keys  []string
		first int
	}{
		{[]string{"down"}, 2},
		{[]string{"j", "j"}, 4},
		{[]string{"k"}, 3},
		{[]string{"up", "up", "up", "up"}, 1}, // stops at the top
		{[]string{"pgdown"}, 1 + page},
		{[]string{"pgdown"}, 1 + 2*page},
		{[]string{"pgup"}, 1 + page},
	}
	for _, s := range steps {
		h.key(s.keys...)
		if f, _, _ := position(t, h.screen()); f != s.first {
			t.Errorf("after %v: first line %d, want %d", s.keys, f, s.first)
		}
	}
	if !h.m.transcript.Following() {
		t.Error("PgUp/PgDn scrolled the transcript while the arguments are open")
	}
	// Paging past the end shows the last line of the arguments.
	for range total {
		h.key("pgdown")
	}
	out := h.screen()
	if _, l, _ := position(t, out); l != total {
		t.Errorf("the end shows up to line %d of %d", l, total)
	}
	if !strings.Contains(strings.ReplaceAll(out, "\n", ""), `x"`) {
		t.Errorf("the end of the URL is not shown:\n%s", out)
	}
	// Other keys keep their meaning: a flash for others, v hides, and
	// with the arguments hidden PgUp scrolls the transcript again.
	h.key("z")
	if h.m.flash == "" {
		t.Error("an unbound key gave no hint")
	}
	h.key("v")
	if h.m.dialog.ShowArgs || argsPosition.MatchString(h.screen()) {
		t.Error("v did not hide the arguments")
	}
	h.key("down")
	if h.m.flash == "" {
		t.Error("Down with the arguments hidden gave no hint")
	}
	for i := range 30 {
		h.m.transcript.AddNotice(0, "notice "+strconv.Itoa(i))
	}
	h.key("pgup")
	if h.m.transcript.Following() {
		t.Error("PgUp with the arguments hidden did not scroll the transcript")
	}
	h.key("v") // reopens at the top
	if f, _, _ := position(t, h.screen()); f != 1 {
		t.Errorf("reopened at line %d", f)
	}
	h.key("y")
	if ar := last[*protocol.ApprovalResolve](h); !ar.Approved {
		t.Error("y did not approve with the arguments open")
	}
}

// TestApprovalResolvedElsewhere: an approval answered by another client of
// the session (v4 approval.resolved) closes the dialog and says who
// answered; one for another approval leaves it open.
func TestApprovalResolvedElsewhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, fields, notice string
	}{
		{"approved", `"approved":true,"scope":"once","by":"scv-web"`, "web_fetch was approved by scv-web."},
		{"session", `"approved":true,"scope":"session","by":"scv-web"`, "web_fetch was approved for the session by scv-web."},
		{"wider", `"approved":true,"scope":"session_wider"`, "web_fetch was approved for the session with the wider rule by another client."},
		{"denied", `"approved":false,"scope":"once","by":"scv exec"`, "web_fetch was denied by scv exec."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.connect("gpt-4.1-mini")
			openFetchApproval(h, 80, 24)
			rid := h.m.turnReq
			if h.m.turnState != stateWaiting {
				t.Fatalf("turn state %q while the dialog is open", h.m.turnState)
			}
			h.event(turnEvent("approval.resolved", rid, tid, `"approval_id":"ap-other",`+tc.fields))
			if h.m.dialog == nil {
				t.Fatal("an answer to another approval closed the dialog")
			}
			sent := len(h.sent)
			h.event(turnEvent("approval.resolved", rid, tid, `"approval_id":"ap9",`+tc.fields))
			if h.m.dialog != nil {
				t.Fatal("the dialog stayed open after approval.resolved")
			}
			if len(h.sent) != sent {
				t.Errorf("sent %s after another client answered", encode(h.sent[len(h.sent)-1]))
			}
			if h.m.turnState != stateRunning {
				t.Errorf("turn state %q, want running", h.m.turnState)
			}
			if out := h.screen(); !strings.Contains(out, tc.notice) {
				t.Errorf("%q is not on the screen:\n%s", tc.notice, out)
			}
		})
	}
}
