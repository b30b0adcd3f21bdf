package appserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/protocol"
)

// maxToolOutputBytes bounds the output a toolCall item keeps while its
// call runs; the completed item has the tool's own (bounded) output.
const maxToolOutputBytes = 64 << 10

// projector is a thread's one subscriber to its session: it turns the
// session's events into items and notifications, keeps the thread's
// record, and fans the notifications out to the connections subscribed
// to the thread. Deliver runs under the session's emit lock, so events
// are projected in order.
type projector struct {
	reg    *Registry
	s      *session.Session
	ctx    context.Context // ends when the thread is closed
	cancel context.CancelFunc
	unsub  func()

	mu     sync.Mutex
	rec    *record                // guarded by mu
	subs   map[*conn]bool         // guarded by mu
	turn   *turnState             // the running turn (guarded by mu)
	starts map[string]starter     // turn/start requests by request id (guarded by mu)
	inputs map[string][]InputItem // queued follow-ups' input by request id (guarded by mu)
	// settings are queued follow-ups' model and policy by request id,
	// settled when their turn starts (guarded by mu).
	settings  map[string]Resolution
	approvals map[string]*pendingAsk // open approval requests (guarded by mu)
	items     map[string]int         // item id → index in rec.Items (guarded by mu)
	nextItem  int                    // guarded by mu
}

// starter answers a turn/start once its turn has started.
type starter struct {
	c     *conn
	id    json.RawMessage
	input []InputItem
}

// turnState is the projection's state of the running turn.
type turnState struct {
	id        string
	index     int // in rec.Turns
	msg       string
	msgText   strings.Builder
	reason    string
	reasonTxt strings.Builder
	calls     map[string]*callState
	cycles    []Cycle
	final     string
}

// callState is a tool call of the running turn.
type callState struct {
	args    json.RawMessage
	item    string // empty until started
	started time.Time
	meta    *ToolMetadata
	output  strings.Builder
}

// outMsg is one line for the subscribers, or for one connection only.
type outMsg struct {
	line   []byte
	method string // of a notification, for the opt-outs
	only   *conn
	// response lines use the outbox's reserve
	response bool
}

func newProjector(r *Registry, s *session.Session, rec *record) *projector {
	ctx, cancel := context.WithCancel(context.Background())
	p := &projector{reg: r, s: s, ctx: ctx, cancel: cancel, rec: rec, subs: map[*conn]bool{},
		starts: map[string]starter{}, inputs: map[string][]InputItem{}, settings: map[string]Resolution{}, approvals: map[string]*pendingAsk{}, items: map[string]int{}}
	for i, it := range rec.Items {
		p.items[it.ItemID] = i
	}
	p.nextItem = len(rec.Items)
	return p
}

// Room reports whether every subscriber's outbox has room.
func (p *projector) Room(int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.subs {
		if c.out.full() {
			return false
		}
	}
	return true
}

// Deliver projects one session event and sends what it yields.
func (p *projector) Deliver(ctx context.Context, ev protocol.Sequenced) error {
	p.mu.Lock()
	out := p.project(ev)
	subs := p.subscribers()
	p.mu.Unlock()
	p.send(ctx, subs, out)
	return nil
}

// ObserveReasoning collects the model's reasoning into a reasoning item.
func (p *projector) ObserveReasoning(ctx context.Context, turnID, text string) error {
	p.mu.Lock()
	t := p.turn
	if t == nil || t.id != turnID {
		p.mu.Unlock()
		return nil
	}
	var out []outMsg
	if t.reason == "" {
		var it Item
		t.reason, it = p.startItem(ItemReasoning, ReasoningPayload{})
		out = append(out, p.note("item/started", it))
	}
	t.reasonTxt.WriteString(text)
	subs := p.subscribers()
	p.mu.Unlock()
	p.send(ctx, subs, out)
	return nil
}

func (p *projector) subscribers() []*conn {
	subs := make([]*conn, 0, len(p.subs))
	for c := range p.subs {
		subs = append(subs, c)
	}
	return subs
}

// send queues out on the subscribers, waiting for room.
func (p *projector) send(ctx context.Context, subs []*conn, out []outMsg) {
	for _, o := range out {
		if o.only != nil {
			if o.response {
				o.only.out.put(o.only.ctx, o.line, true)
			} else {
				o.only.put(ctx, o.line)
			}
			continue
		}
		for _, c := range subs {
			if !c.optedOut(o.method) {
				c.put(ctx, o.line)
			}
		}
	}
}

// note encodes a notification for the subscribers (send skips those that
// opted out of method).
func (p *projector) note(method string, params any) outMsg {
	return outMsg{line: encode(Message{Method: method, Params: mustJSON(params)}), method: method}
}

func (p *projector) now() int64 { return p.reg.millis() }

// startItem appends an in-progress item to the record.
func (p *projector) startItem(typ string, payload any) (string, Item) {
	p.nextItem++
	id := fmt.Sprintf("item_%d", p.nextItem)
	now := p.now()
	turnID := ""
	if p.turn != nil {
		turnID = p.turn.id
	}
	it := Item{ItemID: id, ThreadID: p.s.ID(), TurnID: turnID, Type: typ, Status: ItemInProgress, Payload: mustJSON(payload), CreatedAt: now, UpdatedAt: now}
	p.items[id] = len(p.rec.Items)
	p.rec.Items = append(p.rec.Items, it)
	return id, it
}

// completeItem settles an item and returns its item/completed.
func (p *projector) completeItem(id, status string, payload any) outMsg {
	i := p.items[id]
	it := &p.rec.Items[i]
	it.Status, it.Payload, it.UpdatedAt = status, mustJSON(payload), p.now()
	return p.note("item/completed", *it)
}

// wholeItem is an item that starts and completes at once.
func (p *projector) wholeItem(typ string, payload any) []outMsg {
	id, it := p.startItem(typ, payload)
	return []outMsg{p.note("item/started", it), p.completeItem(id, ItemCompleted, payload)}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// project maps one event; p.mu is held.
func (p *projector) project(ev protocol.Sequenced) []outMsg {
	switch e := ev.(type) {
	case *protocol.TurnStarted:
		return p.turnStarted(e)
	case *protocol.QueueDequeued, *protocol.QueueRemoved:
		return nil
	}
	t := p.turn
	if t == nil {
		return nil
	}
	switch e := ev.(type) {
	case *protocol.AssistantDelta:
		out := p.closeReasoning()
		if t.msg == "" {
			var it Item
			t.msg, it = p.startItem(ItemAgentMessage, AgentMessagePayload{})
			out = append(out, p.note("item/started", it))
		}
		t.msgText.WriteString(e.Content)
		it := p.rec.Items[p.items[t.msg]]
		it.Payload = mustJSON(AgentMessagePayload{Text: e.Content})
		return append(out, p.note("item/agentMessage/delta", ItemDeltaParams{Item: it, Delta: e.Content}))
	case *protocol.AssistantCompleted:
		return p.assistantCompleted(e)
	case *protocol.ToolProposed:
		t.calls[e.CallID] = &callState{args: e.Arguments}
	case *protocol.ApprovalRequested:
		return p.approvalRequested(e)
	case *protocol.ToolStarted:
		return p.toolStarted(e)
	case *protocol.ToolProgress:
		cs := t.calls[e.CallID]
		if cs == nil || cs.item == "" {
			return nil
		}
		if cs.output.Len()+len(e.Line)+1 <= maxToolOutputBytes {
			cs.output.WriteString(e.Line)
			cs.output.WriteByte('\n')
		}
		it := p.rec.Items[p.items[cs.item]]
		return []outMsg{p.note("item/toolCall/delta", ItemDeltaParams{Item: it, Delta: e.Line + "\n"})}
	case *protocol.ToolCompleted:
		return p.toolCompleted(e)
	case *protocol.ContextCompacted:
		return p.wholeItem(ItemContextCompaction, ContextCompactionPayload{BeforeTokens: e.BeforeTokens, AfterTokens: e.AfterTokens, RemovedMessages: e.RemovedMessages})
	case *protocol.TurnCompleted:
		return p.turnEnded(TurnCompleted, nil)
	case *protocol.TurnCancelled:
		return p.turnEnded(TurnInterrupted, &TurnError{Code: "interrupted", Message: "the turn was interrupted"})
	case *protocol.TurnFailed:
		return p.turnEnded(TurnFailed, &TurnError{Code: string(e.Code), Message: e.Message})
	}
	return nil
}

// turnStarted opens a turn: the turn/start response (when this server
// started it), turn/started, the thread's status and the user's message.
func (p *projector) turnStarted(e *protocol.TurnStarted) []outMsg {
	input := p.inputs[e.RequestID]
	delete(p.inputs, e.RequestID)
	if res, ok := p.settings[e.RequestID]; ok {
		// turn.started reaches subscribers before the turn reads the
		// session's model and policy (Session.launchTurnLocked).
		delete(p.settings, e.RequestID)
		settle(p.s, res)
	}
	var out []outMsg
	if st, ok := p.starts[e.RequestID]; ok {
		delete(p.starts, e.RequestID)
		input = st.input
		out = append(out, outMsg{only: st.c, response: true,
			line: responseLine(st.id, TurnStartResult{ThreadID: p.s.ID(), TurnID: e.TurnID, Status: TurnRunning}, nil)})
	}
	p.turn = &turnState{id: e.TurnID, index: len(p.rec.Turns), calls: map[string]*callState{}}
	now := p.now()
	p.rec.Turns = append(p.rec.Turns, Turn{TurnID: e.TurnID, ThreadID: p.s.ID(), Status: TurnRunning, StartedAt: now, Input: nonNil(input)})
	p.rec.Thread.UpdatedAt = now
	out = append(out, p.note("turn/started", TurnStartedParams{ThreadID: p.s.ID(), TurnID: e.TurnID}),
		p.note("thread/status/changed", ThreadStatusChangedParams{ThreadID: p.s.ID(), Status: ThreadRunning}))
	if len(input) > 0 {
		out = append(out, p.userMessage(input)...)
	}
	return out
}

// userMessage is the items of user input.
func (p *projector) userMessage(input []InputItem) []outMsg {
	text, _ := joinInput(input)
	return p.wholeItem(ItemUserMessage, UserMessagePayload{Text: text, Input: input})
}

// closeReasoning completes the open reasoning item.
func (p *projector) closeReasoning() []outMsg {
	t := p.turn
	if t == nil || t.reason == "" {
		return nil
	}
	id := t.reason
	t.reason = ""
	text := t.reasonTxt.String()
	t.reasonTxt.Reset()
	return []outMsg{p.completeItem(id, ItemCompleted, ReasoningPayload{Text: text})}
}

// assistantCompleted closes the message of one model reply and counts its
// usage as a cycle.
func (p *projector) assistantCompleted(e *protocol.AssistantCompleted) []outMsg {
	t := p.turn
	out := p.closeReasoning()
	if e.Usage != nil {
		t.cycles = append(t.cycles, Cycle{CycleIndex: len(t.cycles) + 1, Usage: CycleUsage{SchemaVersion: UsageSchema,
			InputTokens: e.Usage.InputTokens, OutputTokens: e.Usage.OutputTokens, TotalTokens: e.Usage.InputTokens + e.Usage.OutputTokens,
			UsageSource: "provider_reported", CacheUsage: cacheUsage(e.Usage.InputTokens, e.Usage.CachedInputTokens, "provider_usage")}})
	}
	if e.Content != "" {
		t.final = e.Content
	}
	switch {
	case t.msg != "":
		id := t.msg
		t.msg = ""
		t.msgText.Reset()
		out = append(out, p.completeItem(id, ItemCompleted, AgentMessagePayload{Text: e.Content}))
	case e.Content != "":
		out = append(out, p.wholeItem(ItemAgentMessage, AgentMessagePayload{Text: e.Content})...)
	}
	return out
}

// missingCache is cache accounting the provider did not report: null,
// never an observed zero.
func missingCache(source string) CacheUsage {
	return CacheUsage{Status: "accounting_missing", Source: source}
}

// cacheUsage is the cache accounting of input tokens of which cached were
// read from the provider's prompt cache (nil: the provider did not say).
// OpenAI-compatible providers report no cache writes, so those stay null.
func cacheUsage(input int64, cached *int64, source string) CacheUsage {
	if cached == nil {
		return missingCache(source)
	}
	read, uncached := *cached, max(input-*cached, 0)
	return CacheUsage{Status: "provider_reported", ReadInputTokens: &read, UncachedInputTokens: &uncached, Source: source}
}

// toolMetadata derives a call's metadata from the risk its tool declared.
func toolMetadata(r protocol.Risk) *ToolMetadata {
	if r == "" {
		return nil
	}
	m := &ToolMetadata{SideEffect: "external", Idempotency: "unknown", CapabilityTags: []string{"scv.risk." + string(r)}, CostDimensions: []string{}}
	switch r {
	case protocol.RiskReadOnly:
		m.SideEffect, m.Idempotency = "read", "supported"
	case protocol.RiskFilesystem:
		m.SideEffect = "write"
	}
	return m
}

// toolStarted opens a toolCall item.
func (p *projector) toolStarted(e *protocol.ToolStarted) []outMsg {
	t := p.turn
	cs := t.calls[e.CallID]
	if cs == nil {
		cs = &callState{}
		t.calls[e.CallID] = cs
	}
	cs.started = time.Now()
	cs.meta = toolMetadata(e.Risk)
	started := true
	var it Item
	cs.item, it = p.startItem(ItemToolCall, ToolCallPayload{ToolCallID: e.CallID, ToolName: e.Name, Arguments: cs.args,
		Status: "running", ExecutionStarted: &started, ToolMetadata: cs.meta})
	return append(p.closeReasoning(), p.note("item/started", it))
}

// toolCompleted settles a toolCall item; a call that never started gets
// only a failed item/completed.
func (p *projector) toolCompleted(e *protocol.ToolCompleted) []outMsg {
	t := p.turn
	cs := t.calls[e.CallID]
	delete(t.calls, e.CallID)
	if cs == nil {
		cs = &callState{}
	}
	status, itemStatus := "success", ItemCompleted
	if !e.Success {
		status, itemStatus = "failed", ItemFailed
	}
	code := json.RawMessage("null")
	if e.ErrorCode != "" {
		code = mustJSON(e.ErrorCode)
	}
	payload := ToolCallPayload{ToolCallID: e.CallID, ToolName: e.Name, Arguments: cs.args, Status: status, Output: e.Output,
		Truncated: e.Truncated, ErrorCode: code, ToolMetadata: cs.meta}
	started := cs.item != ""
	payload.ExecutionStarted = &started
	if started {
		payload.DurationMs = mustJSON(time.Since(cs.started).Milliseconds())
		return []outMsg{p.completeItem(cs.item, itemStatus, payload)}
	}
	payload.DurationMs = json.RawMessage("null")
	id, _ := p.startItem(ItemToolCall, payload)
	return append(p.closeReasoning(), p.completeItem(id, ItemFailed, payload))
}

// turnEnded closes the turn: open items, its record, turn/completed.
func (p *projector) turnEnded(status string, terr *TurnError) []outMsg {
	t := p.turn
	out := p.closeReasoning()
	if t.msg != "" {
		out = append(out, p.completeItem(t.msg, ItemCompleted, AgentMessagePayload{Text: t.msgText.String()}))
	}
	out = append(out, p.settleTurnApprovals(t.id)...)
	params := TurnCompletedParams{ThreadID: p.s.ID(), TurnID: t.id, Status: status, FinalOutput: t.final, Error: terr, TokenUsage: tokenUsage(t.cycles)}
	now := p.now()
	tr := &p.rec.Turns[t.index]
	tr.Status, tr.CompletedAt = status, now
	tr.Result = &TurnResult{FinalOutput: params.FinalOutput, Error: terr, TokenUsage: params.TokenUsage}
	p.rec.Thread.UpdatedAt = now
	p.turn = nil
	p.reg.save(p.rec)
	return append(out, p.note("turn/completed", params),
		p.note("thread/status/changed", ThreadStatusChangedParams{ThreadID: p.s.ID(), Status: ThreadIdle}))
}

// tokenUsage sums a turn's cycles; nil when the provider reported none.
func tokenUsage(cycles []Cycle) *TokenUsage {
	if len(cycles) == 0 {
		return nil
	}
	u := &TokenUsage{SchemaVersion: TaskUsageSchema, Cycles: cycles}
	// The aggregate's cache accounting is known only when every cycle's
	// is: one unreported cycle would make a sum look like a lower hit rate.
	var read int64
	known := true
	for _, c := range cycles {
		u.InputTokens += c.Usage.InputTokens
		u.OutputTokens += c.Usage.OutputTokens
		if r := c.Usage.CacheUsage.ReadInputTokens; r != nil && c.Usage.CacheUsage.Status == "provider_reported" {
			read += *r
		} else {
			known = false
		}
	}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	if known {
		u.CacheUsage = cacheUsage(u.InputTokens, &read, "aggregate")
	} else {
		u.CacheUsage = missingCache("aggregate")
	}
	return u
}

// status is the thread's status now.
func (p *projector) status() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.statusLocked()
}

func (p *projector) statusLocked() string {
	if p.turn != nil {
		return ThreadRunning
	}
	return ThreadIdle
}

// read is the thread's history for thread/read and thread/resume.
func (p *projector) read() ThreadReadResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	th := p.rec.Thread
	th.Status = p.statusLocked()
	return ThreadReadResult{Thread: th, Turns: append([]Turn{}, p.rec.Turns...), Items: append([]Item{}, p.rec.Items...)}
}

// subscribe adds c and returns the thread as it is.
func (p *projector) subscribe(c *conn) Thread {
	p.mu.Lock()
	p.subs[c] = true
	th := p.rec.Thread
	th.Status = p.statusLocked()
	p.mu.Unlock()
	c.mu.Lock()
	c.threads[p.s.ID()] = p
	c.mu.Unlock()
	return th
}

// unsubscribe removes c; with closeIdle (thread/unsubscribe) it reports
// whether the thread closed (no subscriber, no running turn, no other
// client of the session). The end of a connection does not close its
// threads: on the daemon they outlive it, on stdio the manager closes.
func (p *projector) unsubscribe(c *conn, closeIdle bool) bool {
	p.mu.Lock()
	delete(p.subs, c)
	for id, st := range p.starts {
		if st.c == c {
			delete(p.starts, id)
		}
	}
	release := len(p.subs) == 0 && p.turn == nil
	p.mu.Unlock()
	if closeIdle {
		return p.closeIfIdle()
	}
	if release {
		// Nobody watches: the projector lets the session go (the daemon's
		// idle rule applies to it) and a later thread/resume makes a new
		// one from the stored record.
		p.reg.forget(p)
		p.unsub()
		p.cancel()
	}
	return false
}

// closeIfIdle closes the thread's session when nothing holds it.
func (p *projector) closeIfIdle() bool {
	p.mu.Lock()
	idle := len(p.subs) == 0 && p.turn == nil && !p.s.Active() && p.s.Clients() <= 1
	p.mu.Unlock()
	if !idle {
		return false
	}
	p.reg.forget(p)
	p.unsub()
	p.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := p.reg.mgr.CloseSession(ctx, p.s.ID()); err != nil {
		p.reg.log.Debug("Closing the session of a thread", "thread", p.s.ID(), "err", err)
	}
	return true
}
