// Package conversations keeps the delegated-agent conversations of one
// session (tools.md, "Conversations"): the handle the model knows
// (codex-2), the CLI's own session id behind it (which never reaches the
// model), the directory it runs in, and whether a turn of it is running.
// When the table is full (agent.max_conversations), a new conversation
// makes room by forgetting the least recently used idle one; an idle one
// is forgotten after agent.conversation_idle_seconds; a conversation whose
// first turn ended before the CLI reported its session is forgotten then.
//
// A Table is not safe for concurrent use: its owner (the session's agent
// tools) serialises the calls under its own lock, the lock under which it
// also checks and starts background jobs, so a call refused for want of a
// job slot never holds a conversation. A forgotten conversation that had a
// CLI session is kept for the owner to take (TakeForgotten) once it has
// released its lock, so it can remove the marker that keeps
// `scv agents gc` off the transcript, which touches files.
package conversations

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options configure a Table.
type Options struct {
	// Max is agent.max_conversations.
	Max int
	// Idle is agent.conversation_idle_seconds.
	Idle time.Duration
	// Agents are the offered agents that take a session, in offer order:
	// a handle names one of them.
	Agents []string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Conversation is a conversation as a turn sees it.
type Conversation struct {
	// Handle is what the model knows it by, such as codex-2.
	Handle string
	// Agent is the agent it runs on.
	Agent string
	// Dir is the directory its turns run in.
	Dir string
	// CLI is the CLI's session id, once a run reported one.
	CLI string
	// Turns counts the turns started (the running one included).
	Turns int
}

// entry is a conversation and its bookkeeping.
type entry struct {
	Conversation
	// busy is set while a turn runs; job names the background job
	// running it, if any.
	busy bool
	job  string
	// used is when the last turn ended (or the first began).
	used time.Time
}

// Forgotten is a forgotten conversation that had a CLI session.
type Forgotten struct{ Agent, CLI string }

// Table is the conversations of one session.
type Table struct {
	opts      Options
	convs     map[string]*entry // by handle
	next      map[string]int    // last handle number issued, per agent
	closed    bool
	forgotten []Forgotten
}

// New returns an empty table.
func New(opts Options) *Table {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Table{opts: opts, convs: map[string]*entry{}, next: map[string]int{}}
}

// Agent returns the agent a handle names (codex-2 names codex), whether
// or not the conversation still exists, when that agent takes a session.
func (t *Table) Agent(handle string) (string, bool) {
	i := strings.LastIndexByte(handle, '-')
	if i <= 0 {
		return "", false
	}
	n, err := strconv.Atoi(handle[i+1:])
	if err != nil || n < 1 || strconv.Itoa(n) != handle[i+1:] {
		return "", false
	}
	name := handle[:i]
	if !slices.Contains(t.opts.Agents, name) {
		return "", false
	}
	return name, true
}

// Lookup returns the conversation a call continues, or a refusal the
// model can act on: it has ended, it was never issued, or it is running a
// turn.
func (t *Table) Lookup(handle string) (Conversation, error) {
	t.expire()
	c := t.convs[handle]
	if c == nil {
		if name, ok := t.Agent(handle); ok && t.issued(name, handle) {
			return Conversation{}, fmt.Errorf("conversation %s has ended: it was unused for too long (agent.conversation_idle_seconds), made room for a newer one (agent.max_conversations), or its first turn failed before the agent reported its session; omit session to start a new conversation", handle)
		}
		return Conversation{}, fmt.Errorf("session %q is not a conversation of this session; pass a handle an earlier agent result returned (such as %s), or omit session to start a new conversation", handle, t.ExampleHandle())
	}
	if c.busy {
		return Conversation{}, busyError(c)
	}
	return c.Conversation, nil
}

func busyError(c *entry) error {
	if c.job != "" {
		return fmt.Errorf("session busy: conversation %s is running a turn in background job %s; wait for it (agent_wait %s) or omit session to start a new conversation", c.Handle, c.job, c.job)
	}
	return fmt.Errorf("session busy: conversation %s is running a turn; wait for it to end, or omit session to start a new conversation", c.Handle)
}

// issued reports whether handle, which names agent, was issued.
func (t *Table) issued(agent, handle string) bool {
	n, _ := strconv.Atoi(handle[len(agent)+1:])
	return n <= t.next[agent]
}

// ExampleHandle is a handle to show in a refusal: the first agent's first.
func (t *Table) ExampleHandle() string {
	if len(t.opts.Agents) > 0 {
		return t.opts.Agents[0] + "-1"
	}
	return "codex-1"
}

// expire forgets idle conversations unused for Idle.
func (t *Table) expire() {
	now := t.opts.Now()
	for h, c := range t.convs {
		if !c.busy && now.Sub(c.used) >= t.opts.Idle {
			t.forget(h)
		}
	}
}

// Room refuses a new conversation when every remembered one is running a
// turn, so none can be forgotten to make room.
func (t *Table) Room() error {
	t.expire()
	if len(t.convs) < t.opts.Max || t.lruIdle() != nil {
		return nil
	}
	return t.fullError()
}

func (t *Table) fullError() error {
	return fmt.Errorf("all %d conversations this session keeps are running a turn (agent.max_conversations = %d), so none can be forgotten to start another; wait for one to end", t.opts.Max, t.opts.Max)
}

// lruIdle returns the least recently used idle conversation.
func (t *Table) lruIdle() *entry {
	var lru *entry
	for _, c := range t.convs {
		if !c.busy && (lru == nil || c.used.Before(lru.used) || c.used.Equal(lru.used) && c.Handle < lru.Handle) {
			lru = c
		}
	}
	return lru
}

// Start starts a new conversation of agent in dir, with its first turn
// running, forgetting the least recently used idle one when the table is
// full.
func (t *Table) Start(agent, dir string) (Conversation, error) {
	t.expire()
	if len(t.convs) >= t.opts.Max {
		lru := t.lruIdle()
		if lru == nil {
			return Conversation{}, t.fullError()
		}
		t.forget(lru.Handle)
	}
	t.next[agent]++
	h := agent + "-" + strconv.Itoa(t.next[agent])
	c := &entry{Conversation: Conversation{Handle: h, Agent: agent, Dir: dir, Turns: 1}, busy: true, used: t.opts.Now()}
	t.convs[h] = c
	return c.Conversation, nil
}

// Resume starts the next turn of the conversation handle, which must be
// idle; the conversation returned counts it.
func (t *Table) Resume(handle string) (Conversation, error) {
	t.expire()
	c := t.convs[handle]
	if c == nil {
		return Conversation{}, fmt.Errorf("conversation %s has ended since the call was checked; omit session to start a new conversation", handle)
	}
	if c.busy {
		return Conversation{}, busyError(c)
	}
	c.busy = true
	c.Turns++
	return c.Conversation, nil
}

// SetJob records the background job running the turn of handle, for the
// refusal of a call that finds the conversation busy.
func (t *Table) SetJob(handle, job string) {
	if c := t.convs[handle]; c != nil {
		c.job = job
	}
}

// End records that the running turn of handle ended, with the CLI session
// the run reported ("" for none). A conversation that still has no CLI
// session (its first turn ended before the CLI reported one) is
// forgotten, and so is every conversation once the table is closed. It
// reports whether the turn's result names the conversation: it has a CLI
// session to resume.
func (t *Table) End(handle, cli string) bool {
	c := t.convs[handle]
	if c == nil {
		return false
	}
	c.busy, c.job = false, ""
	c.used = t.opts.Now()
	if cli != "" {
		c.CLI = cli
	}
	if c.CLI == "" {
		t.forget(handle)
		return false
	}
	if t.closed {
		// The session ended while the turn ran: its handles end with it.
		t.forget(handle)
	}
	return true
}

// Close forgets every idle conversation; a running turn's conversation is
// forgotten when the turn ends.
func (t *Table) Close() {
	t.closed = true
	for h, c := range t.convs {
		if !c.busy {
			t.forget(h)
		}
	}
}

// forget forgets the conversation h, keeping its CLI session for
// TakeForgotten.
func (t *Table) forget(h string) {
	c := t.convs[h]
	if c == nil {
		return
	}
	delete(t.convs, h)
	if c.CLI != "" {
		t.forgotten = append(t.forgotten, Forgotten{Agent: c.Agent, CLI: c.CLI})
	}
}

// TakeForgotten returns the conversations with a CLI session forgotten
// since the last call, oldest first.
func (t *Table) TakeForgotten() []Forgotten {
	f := t.forgotten
	t.forgotten = nil
	return f
}
