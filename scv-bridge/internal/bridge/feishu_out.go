package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/scv-cli/scv/scv-bridge/internal/core"
	"github.com/scv-cli/scv/scv-bridge/internal/feishu"
	"github.com/scv-cli/scv/scv-bridge/internal/store"
)

// errRefused marks an outbox row that can never be sent (an attached
// file that is not the one chat_attach copied): it is given up at once.
var errRefused = errors.New("refused")

// feishuResources are the media of a message as the core fetches them.
func feishuResources(m *feishu.MessageEvent) []core.Resource {
	var out []core.Resource
	for _, r := range m.Resources {
		kind := core.ResourceFile
		switch {
		case r.Image:
			kind = core.ResourceImage
		case m.Kind == feishu.KindAudio:
			kind = core.ResourceAudio
		case m.Kind == feishu.KindMedia:
			kind = core.ResourceVideo
		}
		out = append(out, core.Resource{Key: r.Key, Kind: kind, Name: r.Name})
	}
	return out
}

// feishuFetch downloads a message's resource (images with type=image,
// everything else with type=file).
func feishuFetch(fc *feishu.Client) core.FetchFunc {
	return func(ctx context.Context, messageID string, r core.Resource, w io.Writer, limit int64) (string, error) {
		return fc.Download(ctx, messageID, r.Key, r.Kind == core.ResourceImage, w, limit)
	}
}

// feishuStreams shows answers in CardKit cards (core.Streamer) and
// finishes them when the outbox sends the final text. It keeps the live
// streams of this run by card id.
type feishuStreams struct {
	fc  *feishu.Client
	log *slog.Logger

	mu   sync.Mutex
	live map[string]*feishuLive
}

func newFeishuStreams(fc *feishu.Client, log *slog.Logger) *feishuStreams {
	return &feishuStreams{fc: fc, log: log, live: map[string]*feishuLive{}}
}

// feishuLive is one streaming card (core.LiveReply).
type feishuLive struct {
	s    *feishuStreams
	st   *feishu.Stream
	dest feishu.Destination
	key  string
	// closed is set once Close was called: a retried send then sends only
	// the posts (keyed as Close keyed them).
	closed bool
	// last is the text last given to Show (the relay's goroutine only,
	// then Abort after the relay ended).
	last string
}

// Begin creates and sends a streaming card answering replyTo.
func (s *feishuStreams) Begin(ctx context.Context, conversation, replyTo string) (core.LiveReply, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	key := "s" + hex.EncodeToString(b[:])
	dest := feishu.Destination{To: feishu.Recipient{Type: feishu.ByChatID, ID: conversation}, ReplyTo: replyTo}
	st, err := s.fc.StartStream(ctx, dest, key)
	if err != nil {
		return nil, err
	}
	if st.Fallback() {
		return nil, errors.New("the streaming card could not be made")
	}
	l := &feishuLive{s: s, st: st, dest: dest, key: key}
	s.mu.Lock()
	s.live[st.CardID()] = l
	s.mu.Unlock()
	return l, nil
}

func (l *feishuLive) ID() string { return l.st.CardID() }

// Show pushes text and, when the push was too soon after the last one,
// waits and shows the latest: at most one update per MinStreamInterval.
func (l *feishuLive) Show(ctx context.Context, text string) {
	l.last = text
	if l.st.Update(ctx, text) == nil {
		_ = l.st.Flush(ctx)
	}
}

// Abort finishes the card with what it showed and the note text (a
// stopped turn; no outbox row).
func (l *feishuLive) Abort(ctx context.Context, note string) {
	text := note
	if l.last != "" {
		text = l.last + "\n\n" + note
	}
	if _, err := l.st.Close(ctx, text); err != nil && ctx.Err() == nil {
		l.s.log.Warn("a stopped answer's card could not be finished", "err", err)
	}
	l.s.forget(l.st.CardID())
}

func (s *feishuStreams) forget(cardID string) {
	s.mu.Lock()
	delete(s.live, cardID)
	s.mu.Unlock()
}

// finish sends the final text of a streamed answer: through its card
// when this run streamed it, else (the bridge restarted during the
// answer) the card is finished with the text, which is also sent as
// posts when the card cannot show it all or cannot be finished.
func (s *feishuStreams) finish(ctx context.Context, o store.Outbound, r core.Reply, dest feishu.Destination) (string, error) {
	s.mu.Lock()
	l := s.live[r.Stream]
	s.mu.Unlock()
	if l == nil {
		err := s.fc.FinishCard(ctx, r.Stream, r.Text)
		if err == nil && len(r.Text) <= feishu.MaxCardTextBytes {
			return r.Stream, nil
		}
		if err != nil && ctx.Err() == nil {
			s.log.Info("a card of an earlier run could not be finished; sending the answer as posts", "card", r.Stream, "err", err)
		}
		return sendLong(ctx, s.fc, dest, r.Text, o.ID)
	}
	if l.closed {
		d := l.dest
		d.ReplyTo = ""
		return sendLong(ctx, s.fc, d, r.Text, l.key+"-p")
	}
	l.closed = true
	if _, err := l.st.Close(ctx, r.Text); err != nil {
		return "", err
	}
	return l.st.CardID(), nil
}

func sendLong(ctx context.Context, fc *feishu.Client, d feishu.Destination, text, key string) (string, error) {
	sent, err := fc.SendLong(ctx, d, text, key)
	if err != nil || len(sent) == 0 {
		return "", err
	}
	return sent[0].MessageID, nil
}

// feishuSender sends an outbox row: a reply in its chat (or a new message
// there for a background report), the final text of a streamed answer,
// or an attached file, keyed by the row id.
func feishuSender(fc *feishu.Client, streams *feishuStreams, home string) store.SendFunc {
	return func(ctx context.Context, o store.Outbound) (string, error) {
		switch o.Kind {
		case core.KindText:
			var r core.Reply
			if err := json.Unmarshal(o.Payload, &r); err != nil {
				return "", fmt.Errorf("outbox row %s: %w: %w", o.ID, errRefused, err)
			}
			dest := feishu.Destination{To: feishu.Recipient{Type: feishu.ByChatID, ID: r.Conversation}, ReplyTo: r.ReplyTo}
			if r.Stream != "" {
				return streams.finish(ctx, o, r, dest)
			}
			return sendLong(ctx, fc, dest, r.Text, o.ID)
		case core.KindFile:
			return sendFile(ctx, fc, home, o)
		}
		return "", fmt.Errorf("outbox row %s has the unknown kind %q: %w", o.ID, o.Kind, errRefused)
	}
}

// sendFile uploads an attached file (images up to 10 MB as images, mp4 as
// media, anything else up to 30 MB as a file) and sends it in its chat.
func sendFile(ctx context.Context, fc *feishu.Client, home string, o store.Outbound) (string, error) {
	var a core.Attachment
	if err := json.Unmarshal(o.Payload, &a); err != nil {
		return "", fmt.Errorf("outbox row %s: %w: %w", o.ID, errRefused, err)
	}
	data, err := core.ReadAttachment(home, a.Record)
	if err != nil {
		return "", fmt.Errorf("the attached file %s is not sent: %w: %w", a.Record.Name, errRefused, err)
	}
	m, err := fc.Attachment(ctx, a.Record.Name, data)
	if err != nil {
		return "", err
	}
	sent, err := fc.Send(ctx, feishu.Recipient{Type: feishu.ByChatID, ID: a.Conversation}, m, o.ID)
	return sent.MessageID, err
}

// onFinal cleans up after a row is sent or given up: an attached file's
// copy and record, a streamed answer's card.
func (s *feishuStreams) onFinal(home string) func(store.Outbound, store.State) {
	return func(o store.Outbound, _ store.State) {
		switch o.Kind {
		case core.KindFile:
			var a core.Attachment
			if json.Unmarshal(o.Payload, &a) == nil {
				core.RemoveAttachment(home, a.Record)
			}
		case core.KindText:
			var r core.Reply
			if json.Unmarshal(o.Payload, &r) == nil && r.Stream != "" {
				s.forget(r.Stream)
			}
		}
	}
}

// retryable is feishu.IsRetryable, with refusals never retried.
func retryable(err error) bool {
	return !errors.Is(err, errRefused) && feishu.IsRetryable(err)
}
