package acp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/textcut"
)

// MaxToolOutputBytes bounds the streamed output of a running command
// (tool_call_update content); the completed call's output is the tool's,
// which the session's output limit already bounds.
const MaxToolOutputBytes = 64 << 10

// call is a tool call of the running turn, as far as its updates need.
type call struct {
	kind   acpsdk.ToolKind
	diff   []acpsdk.ToolCallContent // the edit's diff, kept beside the output
	output strings.Builder          // streamed lines of a command
	cut    bool                     // output reached MaxToolOutputBytes
}

// translate maps one session event to the connection's items. It runs
// under the session's emit lock (Deliver).
func (st *attached) translate(ev protocol.Sequenced) []item {
	st.mu.Lock()
	defer st.mu.Unlock()
	switch e := ev.(type) {
	case *protocol.TurnStarted:
		st.turn, st.turnRequest, st.message, st.thought = e.TurnID, e.RequestID, "", ""
		st.calls = map[string]*call{}
	case *protocol.QueueEnqueued:
		if _, ok := st.waiters[e.RequestID]; ok {
			st.queued[e.Entry.QueueID] = e.RequestID
		}
	case *protocol.QueueDequeued, *protocol.QueueRemoved:
		var id string
		if d, ok := e.(*protocol.QueueDequeued); ok {
			id = d.Entry.QueueID
		} else {
			id = e.(*protocol.QueueRemoved).Entry.QueueID
		}
		delete(st.queued, id)
	case *protocol.AssistantDelta:
		st.thought = ""
		if st.message == "" {
			st.message = uuid.NewString()
		}
		return []item{{update: messageChunk(e.Content, st.message)}}
	case *protocol.AssistantCompleted:
		// The deltas carried the text; a reply that came whole (no delta)
		// is sent now.
		msg := st.message
		st.message, st.thought = "", ""
		if msg == "" && e.Content != "" {
			return []item{{update: messageChunk(e.Content, uuid.NewString())}}
		}
	case *protocol.ToolProposed:
		c, up := st.toolCall(e)
		st.calls[e.CallID] = c
		return []item{{update: up}}
	case *protocol.ApprovalRequested:
		return []item{{permission: st.permission(e), approvalID: e.ApprovalID}}
	case *protocol.ToolStarted:
		return []item{{update: callUpdate(e.CallID, acpsdk.WithUpdateStatus(acpsdk.ToolCallStatusInProgress))}}
	case *protocol.ToolProgress:
		c := st.calls[e.CallID]
		if c == nil || c.cut {
			return nil
		}
		if c.output.Len()+len(e.Line)+1 > MaxToolOutputBytes {
			c.cut = true
			c.output.WriteString("[output continues; the full output comes when the command ends]\n")
		} else {
			c.output.WriteString(e.Line)
			c.output.WriteByte('\n')
		}
		return []item{{update: callUpdate(e.CallID, acpsdk.WithUpdateContent(textContent(c.diff, c.output.String())))}}
	case *protocol.ToolCompleted:
		status := acpsdk.ToolCallStatusCompleted
		if !e.Success {
			status = acpsdk.ToolCallStatusFailed
		}
		var diff []acpsdk.ToolCallContent
		if c := st.calls[e.CallID]; c != nil {
			diff = c.diff
		}
		delete(st.calls, e.CallID)
		return []item{{update: callUpdate(e.CallID,
			acpsdk.WithUpdateStatus(status),
			acpsdk.WithUpdateContent(textContent(diff, e.Output)),
			acpsdk.WithUpdateRawOutput(map[string]any{"success": e.Success, "output": e.Output, "truncated": e.Truncated}))}}
	case *protocol.TurnCompleted:
		return st.end(e.RequestID, result{stop: stopReason(e.FinishReason)}, st.usage())
	case *protocol.TurnCancelled:
		return st.end(e.RequestID, result{stop: acpsdk.StopReasonCancelled}, nil)
	case *protocol.TurnFailed:
		return st.end(e.RequestID, failure(e), nil)
	}
	return nil
}

// ObserveReasoning shows the model's reasoning as agent_thought_chunk,
// one message id per stretch of reasoning (a reply's text ends it).
func (st *attached) ObserveReasoning(ctx context.Context, turnID, text string) error {
	st.mu.Lock()
	if turnID != st.turn {
		st.mu.Unlock()
		return nil
	}
	if st.thought == "" {
		st.thought = uuid.NewString()
	}
	id := st.thought
	st.mu.Unlock()
	up := &acpsdk.SessionUpdate{AgentThoughtChunk: &acpsdk.SessionUpdateAgentThoughtChunk{Content: acpsdk.TextBlock(text), MessageId: &id}}
	if !st.a.push(ctx, item{sid: st.s.ID(), update: up}) {
		return ctx.Err()
	}
	return nil
}

// end closes a turn: an optional usage update, then the prompt's answer.
func (st *attached) end(requestID string, r result, usage *acpsdk.SessionUpdate) []item {
	st.turn, st.turnRequest, st.message = "", "", ""
	var items []item
	if usage != nil {
		items = append(items, item{update: usage})
	}
	return append(items, item{end: &r, requestID: requestID})
}

// usage is the usage_update after a turn: the history's estimated tokens
// out of the model's context. The caller holds st.mu.
func (st *attached) usage() *acpsdk.SessionUpdate {
	used := st.s.ContextTokens()
	if used < 0 {
		return nil
	}
	return &acpsdk.SessionUpdate{UsageUpdate: &acpsdk.SessionUsageUpdate{Used: int(used), Size: int(st.s.ContextMaxTokens())}}
}

// stopReason maps the provider's finish reason of a completed turn.
func stopReason(finish string) acpsdk.StopReason {
	switch finish {
	case "length", "max_tokens", "max_output_tokens":
		return acpsdk.StopReasonMaxTokens
	case "content_filter", "refusal":
		return acpsdk.StopReasonRefusal
	}
	return acpsdk.StopReasonEndTurn
}

// failure maps a failed turn: the step limit is a stop reason of its own;
// every other failure is an error with the message the TUI shows.
func failure(e *protocol.TurnFailed) result {
	switch e.Code {
	case protocol.FailStepLimit:
		return result{stop: acpsdk.StopReasonMaxTurnRequests}
	case protocol.FailResponseLimit:
		return result{stop: acpsdk.StopReasonMaxTokens}
	}
	return result{err: &acpsdk.RequestError{Code: -32603, Message: e.Message, Data: map[string]any{"code": string(e.Code)}}}
}

func messageChunk(text, messageID string) *acpsdk.SessionUpdate {
	return &acpsdk.SessionUpdate{AgentMessageChunk: &acpsdk.SessionUpdateAgentMessageChunk{Content: acpsdk.TextBlock(text), MessageId: &messageID}}
}

func callUpdate(id string, opts ...acpsdk.ToolCallUpdateOpt) *acpsdk.SessionUpdate {
	u := acpsdk.UpdateToolCall(acpsdk.ToolCallId(id), opts...)
	return &u
}

// textContent is a call's content: its diff (for edits), then the text.
func textContent(diff []acpsdk.ToolCallContent, text string) []acpsdk.ToolCallContent {
	out := append([]acpsdk.ToolCallContent{}, diff...)
	if text != "" {
		out = append(out, acpsdk.ToolContent(acpsdk.TextBlock(text)))
	}
	return out
}

// args are the tool arguments the mapping reads.
type args struct {
	Path      string  `json:"path"`
	Offset    *int    `json:"offset"`
	Content   *string `json:"content"`
	OldString *string `json:"old_string"`
	NewString *string `json:"new_string"`
	Command   string  `json:"command"`
	URL       string  `json:"url"`
	Query     string  `json:"query"`
	Name      string  `json:"name"`
	Agent     string  `json:"agent"`
	Handle    string  `json:"handle"`
}

// toolKind is the ACP kind of an SCV tool.
func toolKind(name string) acpsdk.ToolKind {
	switch name {
	case "read", "read_skill":
		return acpsdk.ToolKindRead
	case "write", "edit":
		return acpsdk.ToolKindEdit
	case "bash":
		return acpsdk.ToolKindExecute
	case "web_fetch":
		return acpsdk.ToolKindFetch
	case "web_search":
		return acpsdk.ToolKindSearch
	}
	return acpsdk.ToolKindOther // agent, agent_wait, agent_status, agent_cancel, …
}

// describe returns the kind, title, locations and diff of a call.
func describe(cwd, name string, raw json.RawMessage) (acpsdk.ToolKind, string, []acpsdk.ToolCallLocation, []acpsdk.ToolCallContent) {
	kind := toolKind(name)
	var a args
	_ = json.Unmarshal(raw, &a) // arguments the model got wrong still get a call, titled by the tool's name
	var locs []acpsdk.ToolCallLocation
	path := ""
	if a.Path != "" {
		path = a.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
		loc := acpsdk.ToolCallLocation{Path: path}
		if name == "read" && a.Offset != nil && *a.Offset > 0 {
			loc.Line = a.Offset
		}
		locs = append(locs, loc)
	}
	title := name
	var diff []acpsdk.ToolCallContent
	switch name {
	case "read":
		title = "Read " + a.Path
	case "write":
		title = "Write " + a.Path
		if a.Content != nil && path != "" {
			diff = []acpsdk.ToolCallContent{acpsdk.ToolDiffContent(path, *a.Content)}
		}
	case "edit":
		title = "Edit " + a.Path
		if a.OldString != nil && a.NewString != nil && path != "" {
			diff = []acpsdk.ToolCallContent{acpsdk.ToolDiffContent(path, *a.NewString, *a.OldString)}
		}
	case "bash":
		title = firstLine(a.Command, 120)
	case "web_fetch":
		title = "Fetch " + a.URL
	case "web_search":
		title = "Search the web: " + a.Query
	case "read_skill":
		title = "Read skill " + a.Name
	case "agent":
		title = "Delegate to " + a.Agent
	}
	if strings.TrimSpace(title) == "" || strings.HasSuffix(title, " ") {
		title = name
	}
	return kind, title, locs, diff
}

// firstLine returns s's first line, cut to at most n bytes.
func firstLine(s string, n int) string {
	s, _, more := strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s, more = textcut.Prefix(s, n), true
	}
	if more {
		s += " …"
	}
	return s
}

// toolCall is the tool_call update of a proposed call.
func (st *attached) toolCall(e *protocol.ToolProposed) (*call, *acpsdk.SessionUpdate) {
	kind, title, locs, diff := describe(st.s.Cwd(), e.Name, e.Arguments)
	opts := []acpsdk.ToolCallStartOpt{
		acpsdk.WithStartKind(kind),
		acpsdk.WithStartStatus(acpsdk.ToolCallStatusPending),
		acpsdk.WithStartRawInput(e.Arguments),
	}
	if len(locs) > 0 {
		opts = append(opts, acpsdk.WithStartLocations(locs))
	}
	if len(diff) > 0 {
		opts = append(opts, acpsdk.WithStartContent(diff))
	}
	up := acpsdk.StartToolCall(acpsdk.ToolCallId(e.CallID), title, opts...)
	return &call{kind: kind, diff: diff}, &up
}

// permission is the session/request_permission of an approval.
func (st *attached) permission(e *protocol.ApprovalRequested) *acpsdk.RequestPermissionRequest {
	kind := toolKind(e.Name)
	status := acpsdk.ToolCallStatusPending
	summary := e.Summary
	if summary == "" {
		summary = e.Name
	}
	options := []acpsdk.PermissionOption{{OptionId: optionAllowOnce, Name: "Allow once", Kind: acpsdk.PermissionOptionKindAllowOnce}}
	if e.Rule != nil {
		options = append(options, acpsdk.PermissionOption{OptionId: optionAllowAlways, Name: "Always allow in this session: " + e.Rule.Description, Kind: acpsdk.PermissionOptionKindAllowAlways})
	}
	options = append(options, acpsdk.PermissionOption{OptionId: optionRejectOnce, Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce})
	return &acpsdk.RequestPermissionRequest{
		SessionId: acpsdk.SessionId(st.s.ID()),
		ToolCall: acpsdk.ToolCallUpdate{
			ToolCallId: acpsdk.ToolCallId(e.CallID),
			Kind:       &kind,
			Status:     &status,
			Title:      &summary,
			RawInput:   map[string]any{"risk": string(e.Risk), "cwd": e.Cwd, "summary": e.Summary},
		},
		Options: options,
	}
}
