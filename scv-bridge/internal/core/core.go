// Package core is the bridge's platform-independent core: it persists
// each inbound message before the adapter acknowledges it, gates the
// sender, routes it to the session of its conversation (an owner's
// direct chat gets a tool-enabled, logged, auto-approving session; anyone
// else a tool-free one), turns bursts and messages sent during a turn
// into the next turn, answers the chat commands, writes the owner's chat
// log, and queues every reply in the durable outbox.
package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/protocol"
)

// Message is an inbound chat message as an adapter hands it over.
type Message struct {
	// ID is the platform's message id (the deduplication key).
	ID string `json:"id"`
	// Conversation is the chat's id; Sender the author's user id.
	Conversation string `json:"conversation"`
	Sender       string `json:"sender"`
	// Direct is a one-to-one chat with the bot.
	Direct bool `json:"direct"`
	// Voice marks a voice message; Transcript is the platform's
	// transcript of it (WeChat's), logged as such and given to the model.
	Voice      bool   `json:"voice,omitempty"`
	Transcript string `json:"transcript,omitempty"`
	// Text has the mentions already stripped by the adapter.
	Text  string         `json:"text,omitempty"`
	Quote string         `json:"quote,omitempty"`
	Files []chatlog.File `json:"files,omitempty"`
	// QuoteOf is the message this one replies to, when the platform gives
	// only its id: its text is fetched (Config.Quote) into Quote.
	QuoteOf string `json:"quote_of,omitempty"`
	// Resources are the media to download (Config.Fetch) into the chat
	// media when the message arrives; they become Files.
	Resources []Resource `json:"resources,omitempty"`
	Time      time.Time  `json:"time"`
}

// Reply is the payload of an outbox row of kind KindText: the adapter
// sends Text to Conversation, as a reply to ReplyTo when set.
type Reply struct {
	Conversation string `json:"conversation"`
	ReplyTo      string `json:"reply_to,omitempty"`
	Text         string `json:"text"`
	// Stream is the LiveReply that showed the answer while it was
	// written: the sender finishes it with Text instead of sending anew.
	Stream string `json:"stream,omitempty"`
}

// KindText is the outbox kind of a Reply.
const KindText = "text"

// Agent starts SCV sessions (over the protocol; tests use a fake).
type Agent interface {
	// Start starts a session; report receives the answers of turns the
	// server starts on its own (background reports), on any goroutine.
	Start(ctx context.Context, req protocol.SessionStart, report func(text string)) (Session, error)
}

// Session is one SCV session of a conversation.
type Session interface {
	// Turn runs a turn and returns the assistant's final text; ending ctx
	// cancels the turn.
	Turn(ctx context.Context, prompt string) (string, error)
	Close() error
}

// Config configures a Core.
type Config struct {
	// Platform and Account name the channel ("feishu", "work").
	Platform, Account string
	// Owner is the owner's user id; empty means nobody is the owner.
	Owner string
	// Archive is the chat archive (channels.archive).
	Archive string
	// Cwd is the sessions' working directory.
	Cwd string
	// Quiet is how long a conversation stays quiet before its waiting
	// messages become a turn (default 1.5 s).
	Quiet time.Duration
	// MaxWaiting bounds the messages waiting in one conversation
	// (default 64); beyond it Accept refuses without storing, so the
	// platform delivers the message again later.
	MaxWaiting int
	// Allow gates senders before anything reaches a model (nil allows
	// everyone; the owner is always allowed).
	Allow func(sender string) bool
	// Home is SCV_HOME: the chat media (downloads) and the media outbox
	// (files chat_attach copied) are under it. Empty: neither.
	Home string
	// Fetch downloads media users send (nil: files are "not saved").
	Fetch FetchFunc
	// Quote fetches the text of a quoted message (nil: Quote stays empty).
	Quote func(ctx context.Context, messageID string) (string, error)
	// MaxMediaBytes bounds one download (default DefaultMaxMediaBytes).
	MaxMediaBytes int64
	// Streamer, when set, shows answers while they are written.
	Streamer Streamer
	Log      *slog.Logger
}

// ErrBusy is returned by Accept when a conversation has MaxWaiting
// messages waiting: nothing was stored, and the adapter leaves the event
// unacknowledged.
var ErrBusy = errors.New("too many messages waiting in this conversation")

// Core routes a channel account's messages. Start it, Accept messages,
// and Wait for it after cancelling the context given to Start.
type Core struct {
	cfg   Config
	st    *store.Store
	agent Agent
	kick  func()

	ctx   context.Context
	wg    sync.WaitGroup
	mu    sync.Mutex
	convs map[string]*conv
	// attachMu serializes finding and queueing attached files (a turn's
	// end and a background report may look at once).
	attachMu sync.Mutex
}

// New returns a Core over st and agent; kick wakes the outbox deliverer.
func New(cfg Config, st *store.Store, agent Agent, kick func()) *Core {
	if cfg.Quiet <= 0 {
		cfg.Quiet = 1500 * time.Millisecond
	}
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = 64
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MaxMediaBytes <= 0 {
		cfg.MaxMediaBytes = DefaultMaxMediaBytes
	}
	if kick == nil {
		kick = func() {}
	}
	return &Core{cfg: cfg, st: st, agent: agent, kick: kick, convs: map[string]*conv{}}
}

// Start resumes the messages a previous run stored but did not finish,
// then serves Accept until ctx ends.
func (c *Core) Start(ctx context.Context) error {
	c.ctx = ctx
	if c.cfg.Home != "" {
		if n := SweepOutboxOrphans(c.cfg.Home, time.Now()); n > 0 {
			c.cfg.Log.Info("removed unfinished copies from the media outbox", "count", n)
		}
	}
	pending, err := c.st.Unprocessed()
	if err != nil {
		return err
	}
	for _, in := range pending {
		var m Message
		if err := json.Unmarshal(in.Payload, &m); err != nil {
			c.cfg.Log.Error("a stored message cannot be read; skipping it", "id", in.ID, "err", err)
			_ = c.st.MarkProcessed(in.ID)
			continue
		}
		c.route(m)
	}
	return nil
}

// Wait waits for the conversations to end (after Start's context ended)
// and closes their sessions and logs.
func (c *Core) Wait() { c.wg.Wait() }

// Accept stores m and queues it; the adapter acknowledges the event once
// Accept returned nil. A message stored before (a redelivery) is ignored.
func (c *Core) Accept(m Message) error {
	if m.ID == "" || m.Conversation == "" {
		return errors.New("a message needs its id and conversation")
	}
	if c.ctx == nil {
		return errors.New("the core is not started: call Start before Accept")
	}
	cv := c.conv(m)
	if cv.waitingCount() >= c.cfg.MaxWaiting {
		return ErrBusy
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return err
	}
	fresh, err := c.st.PutInbound(store.Inbound{ID: m.ID, Conversation: m.Conversation, Payload: payload})
	if err != nil || !fresh {
		return err
	}
	c.route(m)
	return nil
}

// route gates m and hands it to its conversation; commands that must not
// wait (/stop, /status, /help) are answered at once.
func (c *Core) route(m Message) {
	if m.Sender == "" || (m.Sender != c.cfg.Owner && c.cfg.Allow != nil && !c.cfg.Allow(m.Sender)) {
		c.cfg.Log.Info("message from a sender who is not allowed; dropped before any model",
			"conversation", m.Conversation, "sender", m.Sender)
		c.complete([]string{m.ID}, Reply{})
		return
	}
	cv := c.conv(m)
	switch command(m.Text) {
	case "/stop":
		n := cv.stop()
		c.complete([]string{m.ID}, Reply{Conversation: m.Conversation, ReplyTo: m.ID, Text: stoppedText(n)})
	case "/status":
		c.complete([]string{m.ID}, Reply{Conversation: m.Conversation, ReplyTo: m.ID, Text: cv.status()})
	case "/help":
		c.complete([]string{m.ID}, Reply{Conversation: m.Conversation, ReplyTo: m.ID, Text: helpText})
	default:
		cv.addDownload(m.ID, c.startDownload(m))
		cv.push(m) // /new goes through the queue: it ends what came before it.
	}
}

// complete marks ids processed and queues r (when it has text) in one
// transaction, then wakes the deliverer.
func (c *Core) complete(ids []string, r Reply, files ...store.Row) {
	var rows []store.Row
	if r.Text != "" {
		payload, _ := json.Marshal(r)
		rows = append(rows, store.Row{Conversation: r.Conversation, Kind: KindText, Payload: payload})
	}
	rows = append(rows, files...)
	if _, err := c.st.CompleteRows(ids, rows...); err != nil {
		c.cfg.Log.Error("recording a finished turn failed; it will be resumed at the next start", "err", err)
		return
	}
	if len(rows) > 0 {
		c.kick()
	}
}

// answer queues a reply in conv with the files the model attached since
// the last one, and returns the files as the chat log records them.
func (c *Core) answer(ids []string, r Reply) []chatlog.File {
	c.attachMu.Lock()
	defer c.attachMu.Unlock()
	rows, sent, left := c.attachments(r.Conversation)
	r.Text = withFiles(r.Text, sent, left)
	c.complete(ids, r, rows...)
	return sentFiles(sent)
}

// conv returns m's conversation, starting its worker.
func (c *Core) conv(m Message) *conv {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cv, ok := c.convs[m.Conversation]; ok {
		return cv
	}
	cv := &conv{core: c, id: m.Conversation, owner: m.Direct && c.cfg.Owner != "" && m.Sender == c.cfg.Owner,
		wake: make(chan struct{}, 1), downloads: map[string]*download{}}
	c.convs[m.Conversation] = cv
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		cv.run(c.ctx)
	}()
	return cv
}

func stoppedText(dropped int) string {
	if dropped == 0 {
		return "Stopped."
	}
	return fmt.Sprintf("Stopped. %d waiting message(s) were not sent to SCV.", dropped)
}

const helpText = `Commands:
/new    start a new conversation (a new session; the chat log starts a new episode)
/stop   stop the current answer and drop the messages waiting for the next one
/status show this conversation's state
/help   this text
Anything else goes to SCV. Messages sent while SCV answers become the next turn.`
