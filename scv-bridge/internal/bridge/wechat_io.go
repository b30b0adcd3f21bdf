package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/core"
	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/scv-bridge/internal/wechat"
)

// handle stores a batch before the cursor may advance: each message
// through the core (persisted, deduplicated on its id) or, for an approval
// code, answered without reaching any model; then the cursor and the
// peers' context tokens go into the state file. An error leaves the
// cursor where it was, so WeChat delivers the batch again.
func (w *wechatRun) handle(ctx context.Context, b wechat.Batch) error {
	for _, m := range b.Messages {
		if m.ContextToken != "" {
			w.mu.Lock()
			if w.state.ContextTokens == nil {
				w.state.ContextTokens = map[string]string{}
			}
			w.state.ContextTokens[m.From] = m.ContextToken
			w.mu.Unlock()
		}
		if err := w.accept(ctx, m); err != nil {
			return err
		}
	}
	w.mu.Lock()
	w.state.Cursor = b.Cursor
	w.mu.Unlock()
	return w.save(nil)
}

// accept hands one message to the core, waiting while its conversation
// has too many messages queued (the poll is the only reader, so waiting
// here is the back-pressure).
func (w *wechatRun) accept(ctx context.Context, m wechat.Message) error {
	if a, ok := wechat.ParseApproval(itemText(m)); ok && len(m.Items) == 1 {
		return w.approval(m, a)
	}
	msg := toCore(m)
	for {
		err := w.c.Accept(msg)
		if !errors.Is(err, core.ErrBusy) {
			return err
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// committed runs once a batch is stored and WeChat renewed its senders'
// budgets: the reports held for them go out now, the texts merged into
// one message, the attached files each as itself.
func (w *wechatRun) committed(b wechat.Batch) {
	seen := map[string]bool{}
	for _, m := range b.Messages {
		if seen[m.From] {
			continue
		}
		seen[m.From] = true
		row, n, err := w.st.Flush(m.From, core.KindText, mergeHeld)
		if err != nil {
			w.log.Error("flushing held messages failed; they stay held", "conversation", m.From, "err", err)
			continue
		}
		if n > 0 {
			w.log.Info("held messages flushed as one", "conversation", m.From, "held", n, "id", row.ID)
		}
	}
	_ = w.save(nil)
	w.d.Kick()
}

// mergeHeld joins held replies into one unprompted message.
func mergeHeld(rows []store.Outbound) (string, json.RawMessage, error) {
	texts := make([]string, 0, len(rows))
	for _, o := range rows {
		var r core.Reply
		if err := json.Unmarshal(o.Payload, &r); err != nil {
			return "", nil, fmt.Errorf("held row %s: %w", o.ID, err)
		}
		texts = append(texts, r.Text)
	}
	payload, err := json.Marshal(core.Reply{Conversation: rows[0].Conversation, Text: wechat.MergeHeld(texts)})
	return core.KindText, payload, err
}

// itemText is the text of a message's text items (not voice transcripts).
func itemText(m wechat.Message) string {
	var parts []string
	for _, it := range m.Items {
		if it.Kind == wechat.KindText {
			parts = append(parts, it.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// approval answers an approval code ("yes abcde") itself: it is a
// decision, never a prompt. The owner's session auto-approves and other
// sessions have no tools, so no request is ever waiting for one; the
// answer says so, and the message is stored processed with its answer in
// one transaction (deduplicated, never resumed into a turn).
func (w *wechatRun) approval(m wechat.Message, a wechat.Approval) error {
	verb := "deny"
	if a.Allow {
		verb = "approve"
	}
	text := fmt.Sprintf("No approval with the code %s is waiting, so there is nothing to %s. This message was not passed to SCV.", a.ID, verb)
	reply, err := json.Marshal(core.Reply{Conversation: m.From, ReplyTo: m.ID, Text: text})
	if err != nil {
		return err
	}
	ev, err := json.Marshal(map[string]string{"id": m.ID, "sender": m.From, "approval": a.ID})
	if err != nil {
		return err
	}
	fresh, err := w.st.PutAnswered(store.Inbound{ID: m.ID, Conversation: m.From, Payload: ev}, core.KindText, reply)
	if err == nil && fresh {
		w.log.Info("an approval code was answered without reaching SCV", "conversation", m.From, "code", a.ID)
		w.d.Kick()
	}
	return err
}

// toCore turns a WeChat message into the core's: text items as text, a
// voice item's transcript as its transcript, the quoted message, and
// every media item as a resource the core downloads (wechatFetch) once
// the message is stored and its sender passed the gate.
func toCore(m wechat.Message) core.Message {
	msg := core.Message{ID: m.ID, Conversation: m.From, Sender: m.From, Direct: m.GroupID == "", Time: m.Created}
	if msg.Time.IsZero() {
		msg.Time = time.Now()
	}
	var texts, transcripts []string
	for _, it := range m.Items {
		switch it.Kind {
		case wechat.KindText:
			texts = append(texts, it.Text)
		case wechat.KindVoice:
			msg.Voice = true
			if it.Text != "" {
				transcripts = append(transcripts, it.Text)
			}
		case wechat.KindUnknown:
			texts = append(texts, fmt.Sprintf("[a WeChat message of a kind SCV cannot read (type %d)]", it.RawType))
		}
		if it.Media != nil {
			msg.Resources = append(msg.Resources, mediaResource(it))
		}
	}
	msg.Text, msg.Transcript = strings.Join(texts, "\n"), strings.Join(transcripts, "\n")
	if q := m.Quote; q != nil {
		msg.Quote = q.Title
		if q.Item != nil && q.Item.Text != "" {
			msg.Quote = q.Item.Text
		}
	}
	return msg
}

// mediaResource is a media item as the core's resource: its download
// reference as the key, the sender's file name (a voice message's is
// voice.silk, WeChat's codec, which nothing sniffs).
func mediaResource(it wechat.Item) core.Resource {
	r := core.Resource{Key: it.Media.Ref(), Kind: core.ResourceFile, Name: it.FileName}
	switch it.Kind {
	case wechat.KindImage:
		r.Kind = core.ResourceImage
	case wechat.KindVoice:
		r.Kind, r.Name = core.ResourceAudio, "voice.silk"
	case wechat.KindVideo:
		r.Kind = core.ResourceVideo
	}
	return r
}

// wechatFetch downloads and decrypts a resource mediaResource made.
func wechatFetch(fc *wechat.Client) core.FetchFunc {
	return func(ctx context.Context, _ string, r core.Resource, w io.Writer, limit int64) (string, error) {
		m, err := wechat.ParseMediaRef(r.Key)
		if err != nil {
			return "", err
		}
		ct, err := fc.Fetch(ctx, m, w, limit)
		if !strings.HasPrefix(ct, "image/") && !strings.HasPrefix(ct, "video/") && !strings.HasPrefix(ct, "audio/") && ct != "application/pdf" {
			// A sniffed text or binary type names nothing well: the
			// file is named by its kind.
			ct = ""
		}
		return ct, err
	}
}

// send delivers one outbox row within the send budget: a reply to a
// message as the final answer, anything unprompted (a background report)
// as a report, an attached file as a report too. What the budget does
// not allow now is held (with one notice); a refusal (ret=-2) defers
// everything until the penalty ends, without a single call meanwhile.
func (w *wechatRun) send(ctx context.Context, o store.Outbound) (string, error) {
	switch o.Kind {
	case core.KindText:
	case core.KindFile:
		return "", w.sendFile(ctx, o)
	default:
		return "", fmt.Errorf("outbox row %s has the kind %q, which the WeChat bridge does not send: %w", o.ID, o.Kind, errPermanent)
	}
	var r core.Reply
	if err := json.Unmarshal(o.Payload, &r); err != nil {
		return "", fmt.Errorf("outbox row %s: %w: %w", o.ID, err, errPermanent)
	}
	class := wechat.ClassReport
	if r.ReplyTo != "" {
		class = wechat.ClassFinal
	}
	res, err := w.fc.SendText(ctx, wechat.Outgoing{Peer: r.Conversation, ClientID: o.ID, Class: class, Markdown: r.Text})
	var rest json.RawMessage
	if res.Sent > 0 && res.Held != "" {
		// The rest is unprompted now: the answer's first part went out.
		rest, _ = json.Marshal(core.Reply{Conversation: r.Conversation, Text: res.Held})
	}
	if err == nil && res.Held != "" {
		err = wechat.ErrOverBudget
	}
	return "", w.outcome(ctx, o, r.Conversation, rest, err)
}

// sendFile uploads a file the model attached with chat_attach (checked
// against the copy chat_attach made) and sends it as an image, a video or
// a file, keyed by the row id. A copy that is not the one chat_attach
// made is given up; the deliverer's OnFinal removes it either way.
func (w *wechatRun) sendFile(ctx context.Context, o store.Outbound) error {
	var a core.Attachment
	if err := json.Unmarshal(o.Payload, &a); err != nil {
		return fmt.Errorf("outbox row %s: %w: %w", o.ID, err, errPermanent)
	}
	data, err := core.ReadAttachment(w.o.Home, a.Record)
	if err != nil {
		return fmt.Errorf("the attached file %s is not sent: %w: %w", a.Record.Name, err, errPermanent)
	}
	err = w.fc.SendMedia(ctx, wechat.OutMedia{Peer: a.Conversation, ClientID: o.ID, Class: wechat.ClassReport,
		Kind: wechat.MediaKindOf(a.Record.Kind, a.Record.Name, data), Name: a.Record.Name, Data: data})
	return w.outcome(ctx, o, a.Conversation, nil, err)
}

// outcome turns the result of a send into the deliverer's terms: over
// the budget holds the row (or its rest) and sends the notice once;
// throttled or an ended session defers it; the state file records the
// budget as it is now.
func (w *wechatRun) outcome(ctx context.Context, o store.Outbound, conv string, rest json.RawMessage, err error) error {
	switch {
	case errors.Is(err, wechat.ErrSessionExpired):
		w.expired()
		w.fatal(fmt.Errorf("wechat account %s: %w; bind it again: scv channels login wechat --account %s", w.a.Name, err, w.a.Name))
		return &store.DeferError{Until: time.Now().Add(time.Hour), Rest: rest, Err: err}
	case errors.Is(err, wechat.ErrThrottled):
		_ = w.save(nil)
		return &store.DeferError{Until: w.fc.Budget().ThrottledUntil(), Rest: rest, Err: err}
	case errors.Is(err, wechat.ErrOverBudget):
		w.notice(ctx, conv, o.ID)
		_ = w.save(map[string]int{conv: 1})
		return &store.HoldError{Rest: rest, Err: errOverBudget}
	case err != nil:
		_ = w.save(nil)
		return err
	}
	return w.save(nil)
}

// onFinal removes an attached file's copy and record once its row is
// sent or given up.
func (w *wechatRun) onFinal(o store.Outbound, _ store.State) {
	if o.Kind != core.KindFile {
		return
	}
	var a core.Attachment
	if json.Unmarshal(o.Payload, &a) == nil {
		core.RemoveAttachment(w.o.Home, a.Record)
	}
}

// notice sends, once per message from the peer, the short message that
// reports are waiting; the budget keeps a send for it.
func (w *wechatRun) notice(ctx context.Context, conv, rowID string) {
	n := 1
	if rows, err := w.st.Rows(store.Held); err == nil {
		for _, r := range rows {
			if r.Conversation == conv {
				n++
			}
		}
	}
	res, err := w.fc.SendText(ctx, wechat.Outgoing{Peer: conv, ClientID: rowID + "-n", Class: wechat.ClassNotice, Markdown: wechat.HeldNotice(n)})
	if err != nil {
		w.log.Warn("the notice that reports are held was not sent", "conversation", conv, "err", err)
	} else if res.Sent > 0 {
		w.log.Info("reports held until the peer writes again; notice sent", "conversation", conv, "held", n)
	}
}

// errPermanent marks a row no retry can send.
var errPermanent = errors.New("not retried")

// wechatRetryable says whether a failed send may succeed later: not a
// row the bridge cannot send, nor a request WeChat refused as such (HTTP
// 4xx, or a non-zero ret other than the throttle, which is deferred).
func wechatRetryable(err error) bool {
	if errors.Is(err, errPermanent) || errors.Is(err, context.Canceled) {
		return false
	}
	var ae *wechat.APIError
	if errors.As(err, &ae) {
		return ae.HTTPStatus >= http.StatusInternalServerError || ae.HTTPStatus == http.StatusTooManyRequests
	}
	return true
}
