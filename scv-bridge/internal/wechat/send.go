package wechat

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Outgoing is a text message for one peer.
type Outgoing struct {
	// Peer is the user id (…@im.wechat).
	Peer string
	// ClientID is the outbox row id: the platform accepts one message per
	// client_id, so a resend after a crash is not shown twice. Pieces of a
	// long text get "<ClientID>-<n>" from the second on.
	ClientID string
	// Class decides how much of the budget the message may use.
	Class Class
	// Markdown is the text; it is sent as plain text (PlainText).
	Markdown string
}

// SendResult says what became of an Outgoing.
type SendResult struct {
	// Sent counts the pieces the platform accepted.
	Sent int
	// Held is the text not sent because the budget ran out ("" when all
	// was sent): the core keeps it in the outbox as held and flushes it
	// on the peer's next message.
	Held string
}

// sendItem is one item_list element.
type sendItem map[string]any

// SendText sends o as plain text, cut into pieces, as many as the budget
// grants. ErrThrottled (wrapped) is returned, without a call, while the
// account is throttled, and when the platform answers ret=-2 (the budget
// then blocks all sends for the penalty). Other errors leave the unsent
// rest in Held too.
func (c *Client) SendText(ctx context.Context, o Outgoing) (SendResult, error) {
	if o.Peer == "" || o.ClientID == "" {
		return SendResult{}, fmt.Errorf("wechat: a message needs a peer and a client id: %w", errBadInput)
	}
	pieces := SplitText(PlainText(o.Markdown))
	if len(pieces) == 0 {
		return SendResult{}, nil
	}
	n, err := c.budget.Grant(o.Peer, o.Class, len(pieces))
	var res SendResult
	held := func(i int) string { return strings.Join(pieces[i:], "\n\n") }
	if err != nil {
		return SendResult{Held: held(0)}, err
	}
	for i := range n {
		id := o.ClientID
		if i > 0 {
			id += "-" + strconv.Itoa(i+1)
		}
		if err := c.send(ctx, o.Peer, id, o.Class, sendItem{"type": 1, "text_item": map[string]string{"text": pieces[i]}}); err != nil {
			res.Held = held(i)
			return res, err
		}
		res.Sent++
	}
	if n < len(pieces) {
		res.Held = held(n)
	}
	return res, nil
}

// send makes one sendmessage call and books it in the budget.
func (c *Client) send(ctx context.Context, peer, clientID string, class Class, item sendItem) error {
	if until, on := c.budget.Throttled(); on {
		return fmt.Errorf("wechat: not sending until %s: %w", until.UTC().Format(time.RFC3339), ErrThrottled)
	}
	tok := c.ContextToken(peer)
	if tok == "" {
		return fmt.Errorf("wechat: no context token for %s yet; WeChat accepts messages only to someone who wrote to the bot: %w", peer, errBadInput)
	}
	body := map[string]any{"msg": map[string]any{
		"from_user_id": "", "to_user_id": peer, "client_id": clientID, "message_type": fromBot,
		"message_state": 2, "item_list": []sendItem{item}, "context_token": tok,
	}, "base_info": newBaseInfo()}
	err := c.post(ctx, "sendmessage", "/ilink/bot/sendmessage", body, nil)
	var ae *APIError
	if errors.As(err, &ae) && ae.Ret == -2 {
		until := c.budget.Throttle()
		c.log.Warn("wechat: sends refused (ret=-2); the account is throttled", "until", until, "errmsg", ae.Msg)
		return fmt.Errorf("wechat: %s; not sending until %s: %w", ae.Error(), until.UTC().Format(time.RFC3339), ErrThrottled)
	}
	if err != nil {
		return err
	}
	c.budget.Spend(peer, class, 1)
	return nil
}
