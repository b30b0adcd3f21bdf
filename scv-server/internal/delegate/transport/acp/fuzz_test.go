package acp

import (
	"encoding/json"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
)

// FuzzSessionUpdate feeds arbitrary session/update payloads, as the SDK
// decodes them, to a turn: nothing panics, every progress line is one
// bounded line, and a thought never shows.
func FuzzSessionUpdate(f *testing.F) {
	for _, seed := range []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a\nb"}}`,
		`{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":"THOUGHT"}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"1","title":"Run x","kind":"execute","status":"failed"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"1","status":"failed"}`,
		`{"sessionUpdate":"plan","entries":[{"content":"step","priority":"high","status":"in_progress"}]}`,
		`{"sessionUpdate":"brand_new_kind","content":{"type":"text","text":"opaque"}}`,
		`{"sessionUpdate":"usage_update","used":1,"size":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var u acpsdk.SessionUpdate
		if json.Unmarshal(data, &u) != nil {
			return
		}
		var lines []string
		turn := newTurn(delegate.Call{Conversation: "claude-1"}, func(l string) { lines = append(lines, l) })
		turn.update(u)
		turn.update(u)
		_ = turn.finish()
		for _, l := range lines {
			if strings.ContainsAny(l, "\n\r") || len(l) > 400 {
				t.Fatalf("progress line %q", l)
			}
			if u.AgentThoughtChunk != nil && u.AgentMessageChunk == nil && u.ToolCall == nil && strings.Contains(l, "THOUGHT") {
				t.Fatalf("a thought became progress: %q", l)
			}
		}
	})
}
