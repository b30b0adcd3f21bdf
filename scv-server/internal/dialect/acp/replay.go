package acp

import (
	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/google/uuid"

	"github.com/scv-cli/scv/shared/protocol"
)

// replay maps a stored session's transcript to the updates session/load
// sends before it answers: prompts as user_message_chunk, replies as
// agent_message_chunk (one message id each), tool calls as a tool_call
// with their final status, and notices (a compaction, a clear, an
// interrupted turn) as agent_thought_chunk, which clients show apart from
// the conversation.
func replay(cwd string, items []protocol.ReplayItem) []acpsdk.SessionUpdate {
	out := make([]acpsdk.SessionUpdate, 0, len(items))
	for _, it := range items {
		switch it.Kind {
		case "user":
			id := uuid.NewString()
			out = append(out, acpsdk.SessionUpdate{UserMessageChunk: &acpsdk.SessionUpdateUserMessageChunk{Content: acpsdk.TextBlock(it.Text), MessageId: &id}})
		case "assistant":
			if it.Text != "" {
				out = append(out, *messageChunk(it.Text, uuid.NewString()))
			}
		case "tool":
			kind, title, locs, diff := describe(cwd, it.Name, it.Arguments)
			status := acpsdk.ToolCallStatusCompleted
			if it.Success == nil || !*it.Success || it.Interrupted {
				status = acpsdk.ToolCallStatusFailed
			}
			opts := []acpsdk.ToolCallStartOpt{acpsdk.WithStartKind(kind), acpsdk.WithStartStatus(status), acpsdk.WithStartContent(textContent(diff, it.Text))}
			if len(it.Arguments) > 0 {
				opts = append(opts, acpsdk.WithStartRawInput(it.Arguments))
			}
			if len(locs) > 0 {
				opts = append(opts, acpsdk.WithStartLocations(locs))
			}
			out = append(out, acpsdk.StartToolCall(acpsdk.ToolCallId(it.CallID), title, opts...))
		case "notice":
			out = append(out, acpsdk.UpdateAgentThoughtText(it.Text))
		}
	}
	return out
}
