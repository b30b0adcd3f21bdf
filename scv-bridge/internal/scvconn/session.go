package scvconn

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/shared/protocol"
)

// session is one SCV session on a Conn.
type session struct {
	c      *Conn
	id     string
	report func(string)

	mu      sync.Mutex
	turns   map[string]*turn // turn id -> turn in progress
	waiters map[string]*turn // turn.start request id -> our turn
}

// turn collects one turn's answer: the last non-empty assistant message.
type turn struct {
	id     string
	text   string
	cur    strings.Builder // the current model response so far (streaming); String does not copy
	delta  func(string)    // nil unless TurnStream
	done   chan struct{}
	err    error
	closed bool
}

func (t *turn) finish(err error) {
	if !t.closed {
		t.closed, t.err = true, err
		close(t.done)
	}
}

// Turn runs a turn: turn.start, then its events until it ends. Ending ctx
// sends turn.cancel and waits (at most 10 s) for the turn to end.
func (s *session) Turn(ctx context.Context, prompt string) (string, error) {
	return s.TurnStream(ctx, prompt, nil)
}

// TurnStream is Turn, calling delta (on the connection's reader, so it
// must not block) with the text of the current model response each time
// it grows (core.StreamingSession).
func (s *session) TurnStream(ctx context.Context, prompt string, delta func(string)) (string, error) {
	rid := s.c.id()
	t := &turn{done: make(chan struct{}), delta: delta}
	s.mu.Lock()
	s.waiters[rid] = t
	s.mu.Unlock()
	defer func() { s.mu.Lock(); delete(s.waiters, rid); s.mu.Unlock() }()
	if err := s.c.conn.Send(&protocol.TurnStart{RequestID: rid, SessionID: s.id, Prompt: prompt}); err != nil {
		return "", err
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		s.cancel(t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return t.text, t.err
}

// cancel asks the server to cancel t and waits for its end.
func (s *session) cancel(t *turn) {
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		id := t.id
		s.mu.Unlock()
		if id != "" {
			_ = s.c.conn.Send(&protocol.TurnCancel{RequestID: s.c.id(), SessionID: s.id, TurnID: id})
			break
		}
		// Not started yet (queued behind a background turn): wait for it.
		select {
		case <-t.done:
			return
		case <-deadline.C:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	select {
	case <-t.done:
	case <-deadline.C:
	case <-s.c.done:
	}
}

// event handles one event of this session (on the reader goroutine).
func (s *session) event(ev protocol.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e := ev.(type) {
	case *protocol.TurnStarted:
		t := s.waiters[e.RequestID]
		if e.RequestID == "" || t == nil {
			t = &turn{done: make(chan struct{})} // started by the server: a background report
		}
		t.id = e.TurnID
		s.turns[e.TurnID] = t
	case *protocol.AssistantDelta:
		if t := s.turns[e.TurnID]; t != nil && t.delta != nil && e.Content != "" {
			t.cur.WriteString(e.Content)
			t.delta(t.cur.String())
		}
	case *protocol.AssistantCompleted:
		if t := s.turns[e.TurnID]; t != nil {
			t.cur.Reset()
			if e.Content != "" {
				t.text = e.Content
			}
		}
	case *protocol.TurnCompleted:
		s.end(e.TurnID, e.RequestID, nil)
	case *protocol.TurnCancelled:
		s.end(e.TurnID, e.RequestID, context.Canceled)
	case *protocol.TurnFailed:
		s.end(e.TurnID, e.RequestID, fmt.Errorf("the turn failed: %s (%s)", e.Message, e.Code))
	}
}

// end finishes a turn; a server-started turn's answer is reported.
func (s *session) end(turnID, rid string, err error) {
	t := s.turns[turnID]
	delete(s.turns, turnID)
	if t == nil {
		return
	}
	if s.waiters[rid] != t {
		if err == nil && t.text != "" && s.report != nil {
			s.report(t.text)
		}
		return
	}
	t.finish(err)
}

func (s *session) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.waiters {
		t.finish(err)
	}
}

// Close forgets the session on this connection; the server keeps it
// stored (a later /new starts another).
func (s *session) Close() error {
	s.c.mu.Lock()
	delete(s.c.sessions, s.id)
	s.c.mu.Unlock()
	return nil
}
