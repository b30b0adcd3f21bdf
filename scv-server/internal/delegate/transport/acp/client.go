package acp

import (
	"context"
	"fmt"
	"strings"
	"sync"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/output"
	"github.com/scv-cli/scv/scv-server/internal/tools/workspace"
	"github.com/scv-cli/scv/shared/protocol"
)

// client is SCV's side of one server's connection (acpsdk.Client). It
// offers no file-system or terminal capability, so those requests get
// method-not-found; session/request_permission goes to the running
// turn's approval function; session/update feeds the running turn.
//
// The SDK handles notifications in order on one goroutine with a bounded
// queue, so SessionUpdate never blocks: it only updates the turn's state
// under a mutex and hands finished lines to the progress function, which
// must not block either (the `agent` tool's reporter only stores them).
type client struct {
	NoFileSystemOrTerminal // SCV offers neither: method not found
	s                      *server

	mu   sync.Mutex
	turn *turnState // nil between turns
}

func newClient(s *server) *client { return &client{s: s} }

// setTurn makes t the running turn (nil: none).
func (c *client) setTurn(t *turnState) {
	c.mu.Lock()
	c.turn = t
	c.mu.Unlock()
}

func (c *client) current() *turnState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turn
}

// SessionUpdate implements acpsdk.Client.
func (c *client) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	if t := c.current(); t != nil {
		t.update(n.Update)
	}
	return nil
}

// RequestPermission implements acpsdk.Client: the request goes through
// the calling session's approval gate as `agent`, with the summary
// `[claude-1 acp] <title> (<kind>)` and the risk of SCV's own tools for
// that kind. An approval selects the allow-once option, a denial the
// reject-once one (each falls back to its "always" variant); a request
// with neither, one without a running turn, and one whose turn is being
// cancelled are cancelled.
func (c *client) RequestPermission(ctx context.Context, p acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	t := c.current()
	if t == nil {
		return cancelled(), nil
	}
	risk := permissionRisk(p.ToolCall, t.call.Dir)
	summary := permissionSummary(t.call.Conversation, c.s.b.a.Name, p.ToolCall)
	approved := false
	if t.call.Approve != nil {
		// Cancelling actx withdraws the question, so no approval stays
		// open with the user after the turn stopped waiting for it.
		actx, withdraw := context.WithCancel(ctx)
		defer withdraw()
		answer := make(chan bool, 1)
		go func() { answer <- t.call.Approve(actx, risk, summary) }()
		select {
		case approved = <-answer:
		case <-t.cancelling:
			return cancelled(), nil
		case <-ctx.Done():
			return cancelled(), nil
		}
	}
	if t.cancelRequested() {
		return cancelled(), nil
	}
	kinds := []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindRejectOnce, acpsdk.PermissionOptionKindRejectAlways}
	if approved {
		kinds = []acpsdk.PermissionOptionKind{acpsdk.PermissionOptionKindAllowOnce, acpsdk.PermissionOptionKindAllowAlways}
	}
	for _, k := range kinds {
		for _, o := range p.Options {
			if o.Kind == k {
				return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
					Selected: &acpsdk.RequestPermissionOutcomeSelected{OptionId: o.OptionId, Outcome: "selected"}}}, nil
			}
		}
	}
	return cancelled(), nil
}

func cancelled() acpsdk.RequestPermissionResponse {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
		Cancelled: &acpsdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}
}

// permissionSummary is `[claude-1 acp] <title> (<kind>)`, the title
// redacted like a progress line. A one-off call has no handle: the agent
// names itself.
func permissionSummary(conversation, agent string, tc acpsdk.ToolCallUpdate) string {
	who := conversation
	if who == "" {
		who = agent
	}
	title := ""
	if tc.Title != nil {
		title = output.Redact(*tc.Title)
	}
	kind := "other"
	if tc.Kind != nil && *tc.Kind != "" {
		kind = string(*tc.Kind)
	}
	if title == "" {
		title = kind + " request"
	}
	return fmt.Sprintf("[%s acp] %s (%s)", who, title, kind)
}

// permissionRisk maps a tool kind onto SCV's risks: read, search and think
// are read-only unless a location looks secret-like, edits, deletes and
// moves are file-system work, execute is a process, fetch is network, and
// anything else is delegation.
func permissionRisk(tc acpsdk.ToolCallUpdate, dir string) protocol.Risk {
	kind := acpsdk.ToolKindOther
	if tc.Kind != nil {
		kind = *tc.Kind
	}
	switch kind {
	case acpsdk.ToolKindRead, acpsdk.ToolKindSearch, acpsdk.ToolKindThink:
		for _, l := range tc.Locations {
			p := l.Path
			if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(dir, "/")+"/"); ok {
				p = rel
			}
			if workspace.SecretLike(p) {
				return protocol.RiskFilesystem
			}
		}
		return protocol.RiskReadOnly
	case acpsdk.ToolKindEdit, acpsdk.ToolKindDelete, acpsdk.ToolKindMove:
		return protocol.RiskFilesystem
	case acpsdk.ToolKindExecute:
		return protocol.RiskProcess
	case acpsdk.ToolKindFetch:
		return protocol.RiskNetwork
	}
	return protocol.RiskDelegate
}

// turnState is what one running turn collects from session/update.
type turnState struct {
	call     delegate.Call
	progress func(string)
	// cancelling closes when SCV sends session/cancel: pending permission
	// requests are then answered cancelled.
	cancelling chan struct{}
	cancelOnce sync.Once

	mu sync.Mutex
	// reply is the agent's text since its last tool call: its final
	// message once the turn ends.
	reply strings.Builder
	// line is the message line being written (progress shows completed
	// lines only).
	line     strings.Builder
	titles   map[acpsdk.ToolCallId]string
	planStep string
}

func newTurn(call delegate.Call, progress func(string)) *turnState {
	return &turnState{call: call, progress: progress, cancelling: make(chan struct{}), titles: map[acpsdk.ToolCallId]string{}}
}

// cancel marks the turn as being cancelled.
func (t *turnState) cancel() { t.cancelOnce.Do(func() { close(t.cancelling) }) }

func (t *turnState) cancelRequested() bool {
	select {
	case <-t.cancelling:
		return true
	default:
		return false
	}
}

// emit hands a redacted line to progress.
func (t *turnState) emit(line string) {
	if t.progress == nil {
		return
	}
	if l := output.Redact(line); l != "" {
		t.progress(l)
	}
}

// update folds one session/update into the turn. Thoughts, tool output
// and anything SCV does not know never become progress; an unknown kind
// (which the SDK may decode into the wrong variant) is opaque progress
// and never fails the turn.
func (t *turnState) update(u acpsdk.SessionUpdate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case u.AgentMessageChunk != nil:
		if tb := u.AgentMessageChunk.Content.Text; tb != nil {
			t.text(tb.Text)
		}
	case u.ToolCall != nil:
		t.flushLine()
		t.reply.Reset()
		title := u.ToolCall.Title
		if title == "" {
			title = string(u.ToolCall.Kind)
		}
		t.titles[u.ToolCall.ToolCallId] = title
		t.emit(title)
		if u.ToolCall.Status == acpsdk.ToolCallStatusFailed {
			t.emit(title + " failed")
		}
	case u.ToolCallUpdate != nil:
		tc := u.ToolCallUpdate
		if tc.Title != nil && *tc.Title != "" {
			t.titles[tc.ToolCallId] = *tc.Title
		}
		if tc.Status != nil && *tc.Status == acpsdk.ToolCallStatusFailed {
			title := t.titles[tc.ToolCallId]
			if title == "" {
				title = "tool call"
			}
			t.emit(title + " failed")
		}
	case u.Plan != nil:
		for _, e := range u.Plan.Entries {
			if e.Status == acpsdk.PlanEntryStatusInProgress {
				if e.Content != t.planStep {
					t.planStep = e.Content
					t.emit("plan: " + e.Content)
				}
				break
			}
		}
	}
}

// text adds message text: to the reply, and completed lines to progress.
// t.mu must be held.
func (t *turnState) text(s string) {
	t.reply.WriteString(s)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			t.line.WriteString(s)
			return
		}
		t.line.WriteString(s[:i])
		t.flushLine()
		s = s[i+1:]
	}
}

// flushLine emits the message line being written. t.mu must be held.
func (t *turnState) flushLine() {
	if strings.TrimSpace(t.line.String()) != "" {
		t.emit(t.line.String())
	}
	t.line.Reset()
}

// finish flushes the last line and returns the reply.
func (t *turnState) finish() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.flushLine()
	return strings.TrimSpace(t.reply.String())
}
