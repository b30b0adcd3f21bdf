package feishu

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// MessageText returns the text of message id as an inbound message's Text
// reads (a post's paragraphs, placeholders for media and cards), with the
// mentions removed: what a reply quotes. The event of a reply carries only
// the quoted message's id (ParentID), so the text is fetched with
// GET /open-apis/im/v1/messages/{id}.
func (c *Client) MessageText(ctx context.Context, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("feishu: get a message: the message id is empty: %w", errBadInput)
	}
	var out struct {
		Items []struct {
			MsgType string `json:"msg_type"`
			Body    struct {
				Content string `json:"content"`
			} `json:"body"`
		} `json:"items"`
	}
	err := c.call(ctx, request{op: "get message", method: http.MethodGet, path: "/open-apis/im/v1/messages/" + url.PathEscape(id)}, &out)
	if err != nil {
		return "", err
	}
	if len(out.Items) == 0 {
		return "", fmt.Errorf("feishu: the platform returned no message %s", id)
	}
	e := &MessageEvent{Kind: MessageKind(out.Items[0].MsgType)}
	if err := e.decodeContent(out.Items[0].Body.Content); err != nil {
		return "", err
	}
	return StripMentions(e.Text), nil
}
