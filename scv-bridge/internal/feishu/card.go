package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/scv-cli/scv/shared/textcut"
)

// MaxCardTextBytes bounds the text shown in a card: the platform refuses
// cards over 30 KB (230025), and the JSON around the text needs room.
const MaxCardTextBytes = 24 << 10

// streamElement is the element id of a streaming card's text.
const streamElement = "main"

func streamingCard(text string, streaming bool) string {
	card := map[string]any{
		"schema": "2.0",
		"config": map[string]any{"streaming_mode": streaming, "update_multi": true},
		"body": map[string]any{"elements": []any{
			map[string]any{"tag": "markdown", "element_id": streamElement, "content": text},
		}},
	}
	b, _ := json.Marshal(card)
	return string(b)
}

// Stream is a reply whose text grows while the model writes it, shown in
// a CardKit card in streaming mode. When the card cannot be made or
// updated, the stream falls back to plain posts sent at Close. A Stream is
// safe for concurrent use; updates are serialised because every card
// operation carries a strictly increasing sequence.
type Stream struct {
	c    *Client
	dest Destination
	key  string

	mu       sync.Mutex
	cardID   string
	sent     Sent
	seq      int
	last     time.Time // of the last push
	shown    string    // the text the card shows
	latest   string    // the text of the last Update
	fallback bool
	closed   bool
}

// StartStream creates a streaming card and sends it to d (a reply when
// d.ReplyTo is set). key (at most MaxUUIDLen-6 bytes) is the idempotency
// key of the card message; the posts of a fallback or of a long final text
// use keys derived from it. When the card cannot be created the stream
// starts in fallback mode and the error is only logged: the answer still
// arrives, as posts.
func (c *Client) StartStream(ctx context.Context, d Destination, key string) (*Stream, error) {
	if key == "" || len(key) > MaxUUIDLen-6 {
		return nil, fmt.Errorf("feishu: the idempotency key of a stream must have 1 to %d bytes: %w", MaxUUIDLen-6, errBadInput)
	}
	s := &Stream{c: c, dest: d, key: key}
	var out struct {
		CardID string `json:"card_id"`
	}
	err := c.call(ctx, request{
		op: "create card", method: http.MethodPost, path: "/open-apis/cardkit/v1/cards",
		jsonBody: map[string]string{"type": "card_json", "data": streamingCard("", true)},
	}, &out)
	if err == nil {
		s.cardID = out.CardID
		s.sent, err = s.sendCard(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		c.log.Warn("Feishu streaming card failed; the answer will be sent as posts", "err", err)
		s.fallback = true
	}
	return s, nil
}

func (s *Stream) sendCard(ctx context.Context) (Sent, error) {
	m := CardMessage(s.cardID)
	if s.dest.ReplyTo != "" {
		return s.c.Reply(ctx, s.dest.To.ID, s.dest.ReplyTo, m, s.key)
	}
	return s.c.Send(ctx, s.dest.To, m, s.key)
}

// CardID is the card entity's id, "" in fallback mode.
func (s *Stream) CardID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cardID
}

// Fallback reports whether the stream gave up on its card.
func (s *Stream) Fallback() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fallback
}

// Update shows text, the whole answer so far. Updates closer together
// than MinStreamInterval are skipped (the next one, or Close, shows the
// latest text), and so is an update the platform rate-limits; an update
// that fails otherwise puts the stream in fallback mode. Update returns an
// error only for a closed stream or an ended ctx.
func (s *Stream) Update(ctx context.Context, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.latest = text
	if s.fallback || time.Since(s.last) < s.c.opts.MinStreamInterval {
		return nil
	}
	return s.show(ctx, text)
}

// Flush shows the text of the last Update if an update was skipped, once
// MinStreamInterval has passed since the last one. The core calls it when
// the answer pauses (a tool runs), so the card does not lag behind.
func (s *Stream) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.fallback || cardText(s.latest) == s.shown {
		return nil
	}
	if err := sleep(ctx, s.c.opts.MinStreamInterval-time.Since(s.last)); err != nil {
		return err
	}
	return s.show(ctx, s.latest)
}

// show pushes text unless the card shows it already. s.mu is held.
func (s *Stream) show(ctx context.Context, text string) error {
	shown := cardText(text)
	if shown == s.shown {
		return nil
	}
	err := s.push(ctx, shown)
	var ae *APIError
	switch {
	case err == nil:
		s.shown = shown
	case ctx.Err() != nil:
		return err
	case errors.As(err, &ae) && ae.Retryable():
		s.c.log.Debug("Feishu card update rate limited; skipping a frame")
	default:
		s.c.log.Warn("Feishu card update failed; the answer will be sent as posts", "err", err)
		s.fallback = true
	}
	return nil
}

// cardText is what a card shows of text: all of it, or its end when it
// is too long for a card.
func cardText(text string) string {
	if len(text) <= MaxCardTextBytes {
		return text
	}
	return "…" + textcut.Suffix(text, MaxCardTextBytes-len("…"))
}

// push sets the card's text with the next sequence. It is not retried:
// a skipped frame is replaced by the next.
func (s *Stream) push(ctx context.Context, text string) error {
	s.seq++
	s.last = time.Now()
	return s.c.call(ctx, request{
		op: "update card", method: http.MethodPut,
		path:     "/open-apis/cardkit/v1/cards/" + url.PathEscape(s.cardID) + "/elements/" + streamElement + "/content",
		jsonBody: map[string]any{"content": text, "sequence": s.seq},
		noRetry:  true,
	}, nil)
}

// Close ends the stream with the final text. The card shows it and leaves
// streaming mode (otherwise the chat list keeps saying "generating"). A
// final text too long for one card is also sent in full as posts after the
// card, which then says so. In fallback mode the final text is sent as
// posts only. Close returns the posts it sent.
func (s *Stream) Close(ctx context.Context, final string) ([]Sent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.closed = true
	if s.fallback {
		return s.c.SendLong(ctx, s.dest, final, s.key+"-p")
	}
	long := len(final) > MaxCardTextBytes
	shown := final
	if long {
		shown = textcut.Prefix(final, MaxCardTextBytes-200) + "\n\n*(The full answer follows in separate messages.)*"
	}
	err := s.finish(ctx, shown)
	if err != nil {
		s.c.log.Warn("Feishu card could not be finished; sending the answer as posts", "err", err)
		long = true
	}
	if !long {
		return nil, nil
	}
	d := s.dest
	d.ReplyTo = ""
	if d.To.ID == "" && s.sent.ChatID != "" {
		d.To = Recipient{Type: ByChatID, ID: s.sent.ChatID}
	}
	return s.c.SendLong(ctx, d, final, s.key+"-p")
}

// finish replaces the whole card with text in non-streaming mode, with the
// next sequence, retrying rate limits: this update must not be skipped.
func (s *Stream) finish(ctx context.Context, text string) error {
	s.seq++
	return s.c.call(ctx, request{
		op: "finish card", method: http.MethodPut,
		path: "/open-apis/cardkit/v1/cards/" + url.PathEscape(s.cardID),
		jsonBody: map[string]any{
			"card":     map[string]string{"type": "card_json", "data": streamingCard(text, false)},
			"sequence": s.seq,
		},
	}, nil)
}

// OrphanSequence is the sequence FinishCard uses: above any a stream of a
// previous run can have reached (two updates a second for years), and
// within the platform's 32-bit range.
const OrphanSequence = 1 << 30

// FinishCard replaces the card cardID with text, out of streaming mode,
// with sequence OrphanSequence: for a card whose Stream was lost (the
// bridge restarted during an answer), which would otherwise stay
// "generating". A card finished before refuses the sequence; that error
// is returned like any other.
func (c *Client) FinishCard(ctx context.Context, cardID, text string) error {
	if cardID == "" {
		return fmt.Errorf("feishu: finish a card: the card id is empty: %w", errBadInput)
	}
	return c.call(ctx, request{
		op: "finish card", method: http.MethodPut,
		path: "/open-apis/cardkit/v1/cards/" + url.PathEscape(cardID),
		jsonBody: map[string]any{
			"card":     map[string]string{"type": "card_json", "data": streamingCard(cardText(text), false)},
			"sequence": OrphanSequence,
		},
	}, nil)
}

// Decision values of approval card buttons.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
)

// ApprovalCard is an interactive card asking to allow or deny requestID,
// with title and a Markdown body. Its buttons call back with the value
// {"req": requestID, "d": "allow"|"deny"} (see CardAction.Approval).
func ApprovalCard(title, body, requestID string) Message {
	button := func(label, typ, d string) map[string]any {
		return map[string]any{
			"tag": "button", "type": typ,
			"text":      map[string]string{"tag": "plain_text", "content": label},
			"behaviors": []any{map[string]any{"type": "callback", "value": map[string]string{"req": requestID, "d": d}}},
		}
	}
	card := map[string]any{
		"schema": "2.0",
		"config": map[string]any{"update_multi": true},
		"header": map[string]any{"title": map[string]string{"tag": "plain_text", "content": title}, "template": "orange"},
		"body": map[string]any{"elements": []any{
			map[string]any{"tag": "markdown", "content": textcut.Prefix(body, MaxCardTextBytes)},
			map[string]any{"tag": "column_set", "columns": []any{
				map[string]any{"tag": "column", "elements": []any{button("Allow", "primary", DecisionAllow)}},
				map[string]any{"tag": "column", "elements": []any{button("Deny", "danger", DecisionDeny)}},
			}},
		}},
	}
	b, _ := json.Marshal(card)
	return Message{Type: "interactive", Content: string(b)}
}
