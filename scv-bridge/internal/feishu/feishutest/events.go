package feishutest

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
)

var eventSeq atomic.Int64

// MessageEvent builds an im.message.receive_v1 payload. content is the
// message content object (it is encoded into the JSON string the platform
// sends); mentions are (key, open_id, name) triples.
func MessageEvent(messageID, chatID, chatType, senderOpenID, msgType string, content any, mentions ...[3]string) []byte {
	c, _ := json.Marshal(content)
	var ms []any
	for _, m := range mentions {
		ms = append(ms, map[string]any{"key": m[0], "id": map[string]string{"open_id": m[1]}, "name": m[2], "tenant_key": "tk"})
	}
	ev := map[string]any{
		"schema": "2.0",
		"header": map[string]any{"event_id": fmt.Sprintf("ev_%d", eventSeq.Add(1)), "event_type": "im.message.receive_v1",
			"create_time": "1608725989000", "token": "v", "app_id": AppID, "tenant_key": "tk"},
		"event": map[string]any{
			"sender": map[string]any{"sender_id": map[string]string{"open_id": senderOpenID, "union_id": "on_x"}, "sender_type": "user", "tenant_key": "tk"},
			"message": map[string]any{"message_id": messageID, "root_id": "", "parent_id": "", "create_time": "1609073151345",
				"chat_id": chatID, "chat_type": chatType, "message_type": msgType, "content": string(c), "mentions": ms},
		},
	}
	b, _ := json.Marshal(ev)
	return b
}

// CardActionEvent builds a card.action.trigger payload: operator clicked a
// button whose value is value, on message messageID in chat chatID.
func CardActionEvent(operatorOpenID string, value map[string]string, messageID, chatID string) []byte {
	ev := map[string]any{
		"schema": "2.0",
		"header": map[string]any{"event_id": fmt.Sprintf("ev_%d", eventSeq.Add(1)), "event_type": "card.action.trigger",
			"create_time": "1608725989000", "app_id": AppID, "tenant_key": "tk"},
		"event": map[string]any{
			"operator": map[string]string{"open_id": operatorOpenID},
			"token":    "c-token",
			"action":   map[string]any{"value": value, "tag": "button"},
			"context":  map[string]string{"open_message_id": messageID, "open_chat_id": chatID},
		},
	}
	b, _ := json.Marshal(ev)
	return b
}
