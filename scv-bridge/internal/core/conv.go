package core

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/protocol"
)

// conv is one conversation: its waiting messages, its session and, for
// the owner's direct chat, its chat log. Its worker (run) is the only
// goroutine that uses sess and log.
type conv struct {
	core  *Core
	id    string
	owner bool
	wake  chan struct{}

	mu      sync.Mutex
	waiting []Message
	cancel  context.CancelFunc // of the running turn, nil between turns
	turns   int
	last    time.Time

	sess       Session
	log        *chatlog.Writer
	pendingNew Message // the /new that ends the batch take returned
	// logMu serializes the chat log between the worker and reports.
	logMu     sync.Mutex
	logClosed bool // set at shutdown: a late report is not logged
	// downloads are the media downloads of waiting messages, by id.
	downloads map[string]*download
}

func (cv *conv) addDownload(id string, d *download) {
	if d == nil {
		return
	}
	cv.mu.Lock()
	cv.downloads[id] = d
	cv.mu.Unlock()
}

func (cv *conv) takeDownload(id string) *download {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	d := cv.downloads[id]
	delete(cv.downloads, id)
	return d
}

func (cv *conv) waitingCount() int { cv.mu.Lock(); defer cv.mu.Unlock(); return len(cv.waiting) }

func (cv *conv) push(m Message) {
	cv.mu.Lock()
	cv.waiting = append(cv.waiting, m)
	cv.last = time.Now()
	cv.mu.Unlock()
	select {
	case cv.wake <- struct{}{}:
	default:
	}
}

// stop cancels the running turn and drops the waiting messages (marked
// processed; they stay in the chat log), returning how many.
func (cv *conv) stop() int {
	cv.mu.Lock()
	dropped := cv.waiting
	cv.waiting = nil
	if cv.cancel != nil {
		cv.cancel()
	}
	cv.mu.Unlock()
	ids := make([]string, len(dropped))
	for i, m := range dropped {
		ids[i] = m.ID
		cv.takeDownload(m.ID)
	}
	if len(ids) > 0 {
		cv.core.complete(ids, Reply{})
	}
	return len(ids)
}

func (cv *conv) status() string {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	kind := "a tool-free session"
	if cv.owner {
		kind = "the owner's session (tools, chat log)"
	}
	state := "idle"
	if cv.cancel != nil {
		state = "answering"
	}
	return fmt.Sprintf("SCV is %s in %s. Turns so far: %d. Messages waiting: %d.", state, kind, cv.turns, len(cv.waiting))
}

// run is the worker: it waits for messages, lets a burst settle for the
// quiet window, and runs them as one turn; /new ends a batch.
func (cv *conv) run(ctx context.Context) {
	defer cv.closeAll()
	for {
		select {
		case <-ctx.Done():
			return
		case <-cv.wake:
		}
		if !cv.settle(ctx) {
			return
		}
		for {
			batch, isNew := cv.take()
			if len(batch) == 0 && !isNew {
				break
			}
			if len(batch) > 0 {
				cv.turn(ctx, batch)
			}
			if isNew {
				cv.renew(ctx)
			}
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// settle waits until no message arrived for the quiet window.
func (cv *conv) settle(ctx context.Context) bool {
	quiet := cv.core.cfg.Quiet
	for {
		cv.mu.Lock()
		wait := quiet - time.Since(cv.last)
		cv.mu.Unlock()
		if wait <= 0 {
			return true
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// take removes the waiting messages up to the first /new; isNew says the
// batch ends with a /new (removed too, and marked processed by renew).
func (cv *conv) take() ([]Message, bool) {
	cv.mu.Lock()
	defer cv.mu.Unlock()
	for i, m := range cv.waiting {
		if command(m.Text) == "/new" {
			batch := cv.waiting[:i:i]
			cv.waiting = cv.waiting[i+1:]
			cv.pendingNew = m
			return batch, true
		}
	}
	batch := cv.waiting
	cv.waiting = nil
	return batch, false
}

// turn sends batch to the session as one prompt and queues the answer
// with the files the model attached.
func (cv *conv) turn(ctx context.Context, batch []Message) {
	cv.waitMedia(ctx, batch)
	ids := make([]string, len(batch))
	for i, m := range batch {
		ids[i] = m.ID
		cv.logOwner(m)
	}
	last := batch[len(batch)-1]
	tctx, cancel := context.WithCancel(ctx)
	cv.mu.Lock()
	cv.cancel = cancel
	cv.turns++
	cv.mu.Unlock()
	text, live, err := cv.answer(tctx, prompt(batch), last.ID)
	cv.mu.Lock()
	cv.cancel = nil
	stopped := tctx.Err() != nil
	cv.mu.Unlock()
	cancel()
	switch {
	case ctx.Err() != nil:
		// Shutting down: the turn is resumed at the next start. A card
		// left streaming would say "generating" for ever: end it briefly.
		if live != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			live.Abort(actx, "(Interrupted: SCV stopped. The answer comes when it starts again.)")
			cancel()
		}
		return
	case stopped:
		if live != nil {
			live.Abort(ctx, "(Stopped.)")
		}
		cv.core.complete(ids, Reply{})
		return
	case err != nil:
		cv.core.cfg.Log.Error("a turn failed", "conversation", cv.id, "err", err)
		text = "SCV could not answer: " + err.Error()
	case strings.TrimSpace(text) == "":
		text = "(SCV finished without a text answer.)"
	}
	r := Reply{Conversation: cv.id, ReplyTo: last.ID, Text: text}
	if live != nil {
		r.Stream = live.ID()
	}
	files := cv.core.answer(ids, r)
	cv.logMessage(chatlog.SCV, text, "", files, time.Now())
}

// answer starts the session if needed and runs one turn, showing the
// answer while it is written when the channel can; it returns the live
// reply that showed it, if any.
func (cv *conv) answer(ctx context.Context, p, replyTo string) (string, LiveReply, error) {
	if cv.sess == nil {
		s, err := cv.core.agent.Start(ctx, cv.sessionStart(), cv.report)
		if err != nil {
			return "", nil, fmt.Errorf("start a session: %w", err)
		}
		cv.sess = s
	}
	ss, ok := cv.sess.(StreamingSession)
	if !ok || cv.core.cfg.Streamer == nil {
		text, err := cv.sess.Turn(ctx, p)
		return text, nil, err
	}
	r := cv.startRelay(cv.core.ctx, replyTo)
	text, err := ss.TurnStream(ctx, p, r.delta)
	return text, r.stop(), err
}

// sessionStart is the session this conversation gets: tools, log and
// auto-approval for the owner's direct chat only.
func (cv *conv) sessionStart() protocol.SessionStart {
	cfg := cv.core.cfg
	req := protocol.SessionStart{Cwd: cfg.Cwd}
	if !cv.owner {
		off := false
		req.Tools = &off
		return req
	}
	req.AutoApprove = true
	req.Channel = &protocol.Channel{Platform: cfg.Platform, Account: cfg.Account, Conversation: cv.id, Log: true}
	return req
}

// report sends a background report as an unprompted message (outbox)
// and logs it.
func (cv *conv) report(text string) {
	files := cv.core.answer(nil, Reply{Conversation: cv.id, Text: text})
	cv.logMessage(chatlog.SCV, text, "", files, time.Now())
}

// renew handles /new: a new session, and the chat log's episode closed.
func (cv *conv) renew(ctx context.Context) {
	m := cv.pendingNew
	if cv.sess != nil {
		if err := cv.sess.Close(); err != nil {
			cv.core.cfg.Log.Warn("closing a session failed", "conversation", cv.id, "err", err)
		}
		cv.sess = nil
	}
	cv.logMu.Lock()
	defer cv.logMu.Unlock()
	if w := cv.logWriter(); w != nil {
		if err := w.CloseEpisode(time.Now()); err != nil {
			cv.core.cfg.Log.Error("closing the chat log's episode failed", "conversation", cv.id, "err", err)
		}
	}
	if ctx.Err() == nil {
		cv.core.complete([]string{m.ID}, Reply{Conversation: cv.id, ReplyTo: m.ID, Text: "New conversation started."})
	}
}

// logMessage appends to the owner's chat log; other chats are not logged.
func (cv *conv) logMessage(who chatlog.Who, text, quote string, files []chatlog.File, t time.Time) {
	cv.appendLog(chatlog.Message{Time: t, Who: who, Text: text, Quote: quote, Files: files})
}

// logOwner logs a message of the owner, a voice message's transcript as
// such (chat_history searches it).
func (cv *conv) logOwner(m Message) {
	cv.appendLog(chatlog.Message{Time: m.Time, Who: chatlog.Owner, Text: m.Text, Quote: m.Quote, Files: m.Files,
		Voice: m.Voice, Transcript: m.Transcript})
}

func (cv *conv) appendLog(m chatlog.Message) {
	cv.logMu.Lock()
	defer cv.logMu.Unlock()
	w := cv.logWriter()
	if w == nil {
		return
	}
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	if _, err := w.Append(m); err != nil {
		cv.core.cfg.Log.Error("writing the chat log failed", "conversation", cv.id, "err", err)
	}
}

func (cv *conv) logWriter() *chatlog.Writer {
	if !cv.owner || cv.core.cfg.Archive == "" || cv.logClosed {
		return nil
	}
	if cv.log != nil {
		return cv.log
	}
	cfg := cv.core.cfg
	dir, err := chatlog.Dir(cfg.Archive, cfg.Platform, cfg.Account, cv.id)
	if err == nil {
		cv.log, err = chatlog.OpenWriter(dir, chatlog.WriterOptions{})
	}
	if err != nil {
		cv.core.cfg.Log.Error("opening the chat log failed", "conversation", cv.id, "err", err)
		return nil
	}
	return cv.log
}

func (cv *conv) closeAll() {
	if cv.sess != nil {
		_ = cv.sess.Close()
	}
	cv.logMu.Lock()
	defer cv.logMu.Unlock()
	if cv.log != nil {
		_ = cv.log.Close()
		cv.log = nil
	}
	cv.logClosed = true
}

// prompt joins a batch into one turn: texts, quotes and files in order.
func prompt(batch []Message) string {
	var b strings.Builder
	for i, m := range batch {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if m.Quote != "" {
			fmt.Fprintf(&b, "> %s\n", strings.ReplaceAll(m.Quote, "\n", "\n> "))
		}
		b.WriteString(m.Text)
		writeVoice(&b, m)
		for _, f := range m.Files {
			if f.Path != "" {
				fmt.Fprintf(&b, "\n[file %s saved at %s]", f.Name, f.Path)
			} else {
				fmt.Fprintf(&b, "\n[file %s was not saved]", f.Name)
			}
		}
	}
	return b.String()
}

// command is the chat command m starts with ("/new"…), or "".
func command(text string) string {
	f := strings.Fields(text)
	// Mentions the adapter left (a group's "@bot /new") do not hide a command.
	for len(f) > 0 && strings.HasPrefix(f[0], "@") {
		f = f[1:]
	}
	if len(f) == 0 || !strings.HasPrefix(f[0], "/") {
		return ""
	}
	switch c := strings.ToLower(f[0]); c {
	case "/new", "/stop", "/status", "/help":
		return c
	}
	return ""
}

// writeVoice adds a voice message's transcript to a prompt.
func writeVoice(b *strings.Builder, m Message) {
	if !m.Voice {
		return
	}
	if m.Text != "" {
		b.WriteString("\n")
	}
	if m.Transcript != "" {
		fmt.Fprintf(b, "[voice message; transcript: %s]", m.Transcript)
	} else {
		b.WriteString("[voice message without a transcript]")
	}
}
