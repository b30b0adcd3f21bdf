package appserver

import (
	"encoding/json"
	"fmt"

	"github.com/scv-cli/scv/shared/protocol"
)

// projectReplay maps an SCV transcript (a session the App Server did not
// run, or that the TUI continued) to items. It sets only what the
// transcript holds: no errorCode, executionStarted, durationMs or
// toolMetadata, which it does not record.
func projectReplay(threadID string, replay []protocol.ReplayItem, now int64) []Item {
	items := make([]Item, 0, len(replay))
	for i, r := range replay {
		it := Item{ItemID: fmt.Sprintf("item_%d", i+1), ThreadID: threadID, TurnID: r.TurnID, Status: ItemCompleted, CreatedAt: now, UpdatedAt: now}
		var payload any
		switch r.Kind {
		case "user":
			it.Type, payload = ItemUserMessage, UserMessagePayload{Text: r.Text}
		case "assistant":
			if r.Text == "" {
				continue
			}
			it.Type, payload = ItemAgentMessage, AgentMessagePayload{Text: r.Text}
		case "tool":
			status := "success"
			if r.Success == nil || !*r.Success || r.Interrupted {
				status, it.Status = "failed", ItemFailed
			}
			it.Type, payload = ItemToolCall, ToolCallPayload{ToolCallID: r.CallID, ToolName: r.Name, Arguments: json.RawMessage(r.Arguments), Status: status, Output: r.Text}
		default:
			continue // notices (compactions, clears) carry no item fields worth inventing
		}
		it.Payload = mustJSON(payload)
		items = append(items, it)
	}
	return items
}
