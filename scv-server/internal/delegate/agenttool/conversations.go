package agenttool

import (
	"fmt"
	"strconv"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
)

// conversation is one delegated-agent conversation of the session: the
// model knows it by handle (codex-2); the CLI's own session id stays here.
type conversation struct {
	handle string
	agent  string
	dir    string
	// cli is the CLI's session id, once a run reported it; a conversation
	// without one after its first turn is forgotten.
	cli string
	// turns counts the turns started.
	turns int
	// busy is set while a turn runs; job names the background job running
	// it, if any.
	busy bool
	job  string
	// used is when the last turn ended (or the first began).
	used time.Time
}

// conversation returns a copy of the conversation a call continues, or a
// refusal the model can act on.
func (s *Set) conversation(handle string) (conversation, error) {
	s.mu.Lock()
	defer s.unlock()
	s.expireLocked()
	c := s.convs[handle]
	if c == nil {
		if name, ok := s.handleAgent(handle); ok && s.issuedLocked(name, handle) {
			return conversation{}, fmt.Errorf("conversation %s has ended: it was unused for too long (agent.conversation_idle_seconds), made room for a newer one (agent.max_conversations), or its first turn failed before the agent reported its session; omit session to start a new conversation", handle)
		}
		return conversation{}, fmt.Errorf("session %q is not a conversation of this session; pass a handle an earlier agent result returned (such as %s), or omit session to start a new conversation", handle, s.exampleHandle())
	}
	if c.busy {
		return conversation{}, s.busyError(c)
	}
	return *c, nil
}

func (s *Set) busyError(c *conversation) error {
	if c.job != "" {
		return fmt.Errorf("session busy: conversation %s is running a turn in background job %s; wait for it (agent_wait %s) or omit session to start a new conversation", c.handle, c.job, c.job)
	}
	return fmt.Errorf("session busy: conversation %s is running a turn; wait for it to end, or omit session to start a new conversation", c.handle)
}

// issuedLocked reports whether handle was issued in this session.
func (s *Set) issuedLocked(agent, handle string) bool {
	n, _ := strconv.Atoi(handle[len(agent)+1:])
	return n <= s.convNext[agent]
}

// exampleHandle is a handle to show in a refusal.
func (s *Set) exampleHandle() string {
	for _, n := range s.names {
		if s.byName[n].Descriptor().TakesSession {
			return n + "-1"
		}
	}
	return "codex-1"
}

// expireLocked forgets idle conversations unused for ConversationIdle.
// s.mu must be held.
func (s *Set) expireLocked() {
	now := s.opts.Now()
	for h, c := range s.convs {
		if !c.busy && now.Sub(c.used) >= s.opts.ConversationIdle {
			s.forgetLocked(h)
		}
	}
}

// roomForConversation refuses a new conversation when every remembered
// one is running a turn, so none can be forgotten to make room.
func (s *Set) roomForConversation() error {
	s.mu.Lock()
	defer s.unlock()
	s.expireLocked()
	if len(s.convs) < s.opts.MaxConversations || s.lruIdleLocked() != nil {
		return nil
	}
	return s.fullError()
}

func (s *Set) fullError() error {
	return fmt.Errorf("all %d conversations this session keeps are running a turn (agent.max_conversations = %d), so none can be forgotten to start another; wait for one to end", s.opts.MaxConversations, s.opts.MaxConversations)
}

// lruIdleLocked returns the least recently used idle conversation.
func (s *Set) lruIdleLocked() *conversation {
	var lru *conversation
	for _, c := range s.convs {
		if !c.busy && (lru == nil || c.used.Before(lru.used) || c.used.Equal(lru.used) && c.handle < lru.handle) {
			lru = c
		}
	}
	return lru
}

// beginTurnLocked reserves the conversation of a call that is about to
// run: it starts a new one (forgetting the least recently used idle one
// when full) or marks the continued one busy, and fills call's
// conversation fields. s.mu must be held.
func (s *Set) beginTurnLocked(p *prepared, call *delegate.Call) error {
	s.expireLocked()
	switch {
	case p.conv != "":
		c := s.convs[p.conv]
		if c == nil {
			return fmt.Errorf("conversation %s has ended since the call was checked; omit session to start a new conversation", p.conv)
		}
		if c.busy {
			return s.busyError(c)
		}
		c.busy = true
		c.turns++
		call.Conversation, call.Turn, call.ResumeCLISession = c.handle, c.turns, c.cli
		call.NewCLISession = ""
	case p.newConv:
		if len(s.convs) >= s.opts.MaxConversations {
			lru := s.lruIdleLocked()
			if lru == nil {
				return s.fullError()
			}
			s.forgetLocked(lru.handle)
		}
		s.convNext[call.Agent]++
		h := call.Agent + "-" + strconv.Itoa(s.convNext[call.Agent])
		s.convs[h] = &conversation{handle: h, agent: call.Agent, dir: call.Dir, busy: true, turns: 1, used: s.opts.Now()}
		call.Conversation, call.Turn = h, 1
	}
	return nil
}

// endTurn records how a conversation's turn ended: the CLI's session id
// when the run reported one, and forgets a conversation that still has
// none (its first turn failed before the CLI reported its session). It
// sets the result's session and turn for a conversation that lives on.
func (s *Set) endTurn(call delegate.Call, res *delegate.Result) {
	res.Session, res.Turn = "", 0
	if call.Conversation == "" {
		return
	}
	s.mu.Lock()
	defer s.unlock()
	c := s.convs[call.Conversation]
	if c == nil {
		return
	}
	c.busy, c.job = false, ""
	c.used = s.opts.Now()
	if res.CLISession != "" {
		c.cli = res.CLISession
	}
	if c.cli == "" {
		s.forgetLocked(c.handle)
		return
	}
	res.Session, res.Turn = c.handle, call.Turn
	if s.closed {
		// The session ended while the turn ran: its handles end with it.
		s.forgetLocked(c.handle)
	}
}

// forgetLocked forgets the conversation h; its CLI session goes to the
// OnForget hook once s.mu is released (unlock). s.mu must be held.
func (s *Set) forgetLocked(h string) {
	c := s.convs[h]
	if c == nil {
		return
	}
	delete(s.convs, h)
	if c.cli != "" && s.opts.OnForget != nil {
		s.forgotten = append(s.forgotten, forgotten{agent: c.agent, cli: c.cli})
	}
}

// forgotten is a forgotten conversation whose hook call is pending.
type forgotten struct{ agent, cli string }

// unlock releases s.mu, then tells OnForget of the conversations
// forgotten meanwhile, outside the lock since it touches files.
func (s *Set) unlock() {
	pending := s.forgotten
	s.forgotten = nil
	s.mu.Unlock()
	for _, f := range pending {
		s.opts.OnForget(f.agent, f.cli)
	}
}
