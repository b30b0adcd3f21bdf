package appserver

import (
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/scv-cli/scv/scv-server/internal/session"
)

// requestSeq numbers the session requests this dialect makes.
var requestSeq atomic.Uint64

func newRequestID() string { return "app-" + strconv.FormatUint(requestSeq.Add(1), 10) }

// live returns the open thread id, subscribing c to it.
func (c *conn) live(threadID string) (*projector, error) {
	if threadID == "" {
		return nil, rpcErrorf(CodeInvalidParams, "Invalid params: threadId is required")
	}
	pr := c.opts.Threads.get(threadID)
	if pr == nil {
		return nil, rpcErrorf(CodeNotFound, "thread %s is not open: thread/start a thread, or thread/resume this one", threadID)
	}
	c.mu.Lock()
	_, subscribed := c.threads[threadID]
	c.mu.Unlock()
	if !subscribed {
		pr.subscribe(c)
	}
	return pr, nil
}

// resolve reads the configuration again for the thread's next turn and
// rebuilds the session's tools with it (a running turn keeps its own); the
// caller applies the model and policy (settle). An error is -32603, no
// turn is made and nothing changes.
func (c *conn) resolve(pr *projector) (Resolution, error) {
	pr.mu.Lock()
	th := pr.rec.Thread
	pr.mu.Unlock()
	res, err := c.opts.Host.Resolve(c.ctx, ResolveRequest{ThreadID: th.ThreadID, AgentKey: th.AgentKey, Cwd: pr.s.Cwd(), Metadata: th.Metadata})
	if err != nil {
		return res, &RPCError{Code: CodeInternal, Message: fmt.Sprintf("Internal error: the configuration of thread %s could not be resolved, so no turn was started: %v", th.ThreadID, err)}
	}
	if res.Tools != nil {
		if err := pr.s.Retool(res.ToolsKey, *res.Tools); err != nil {
			return res, &RPCError{Code: CodeInternal, Message: fmt.Sprintf("Internal error: the tools of thread %s could not be set up, so no turn was started: %v", th.ThreadID, err)}
		}
	}
	return res, nil
}

// settle applies a resolution's model and policy to the session. The
// session reads them from then on, a running turn's next model request
// included, so a follow-up's are settled when its turn starts
// (projector.turnStarted).
func settle(s *session.Session, res Resolution) {
	if res.Model != "" {
		s.SetModel(res.Model)
	}
	if res.Policy != "" {
		s.SetPolicy(res.Policy)
	}
}

// turnStart resolves the configuration and starts a turn; the response
// goes out when the turn has started, before turn/started.
func (c *conn) turnStart(m Message, p TurnStartParams) (any, error) {
	pr, err := c.live(p.ThreadID)
	if err != nil {
		return nil, err
	}
	text, err := inputText(p.Input)
	if err != nil {
		return nil, err
	}
	if active := pr.s.ActiveTurn(); active != "" {
		return nil, rpcErrorf(CodeInvalidParams, "Invalid params: turn %s is running in thread %s; add to it with turn/steer, queue after it with turn/followUp, or stop it with turn/interrupt", active, p.ThreadID)
	}
	res, err := c.resolve(pr)
	if err != nil {
		return nil, err
	}
	settle(pr.s, res)
	id := newRequestID()
	pr.mu.Lock()
	pr.starts[id] = starter{c: c, id: m.ID, input: p.Input}
	pr.mu.Unlock()
	err = pr.s.StartTurn(c.ctx, id, text, c.submitter())
	pr.mu.Lock()
	_, pending := pr.starts[id]
	delete(pr.starts, id)
	if pending && err == nil {
		// Another turn started meanwhile, and this one was queued after it.
		pr.inputs[id] = p.Input
	}
	pr.mu.Unlock()
	switch {
	case err != nil:
		return nil, mapErr(err)
	case pending:
		return TurnStartResult{ThreadID: p.ThreadID, Status: "queued"}, nil
	}
	return answered, nil
}

// guard checks expectedTurnId against the running turn.
func guard(pr *projector, threadID, expected string) (string, error) {
	active := pr.s.ActiveTurn()
	if active == "" {
		return "", &RPCError{Code: CodeNoActiveTurn, Message: fmt.Sprintf("no turn is running in thread %s", threadID)}
	}
	if expected != active {
		return "", &RPCError{Code: CodeStaleTurn, Message: fmt.Sprintf("expectedTurnId %q is not the running turn of thread %s (it is %s)", expected, threadID, active),
			Data: map[string]any{"activeTurnId": active}}
	}
	return active, nil
}

// guarded checks a steer or follow-up: the thread, expectedTurnId and the
// input, which it returns as text.
func (c *conn) guarded(p TurnSteerParams) (*projector, string, string, error) {
	pr, err := c.live(p.ThreadID)
	if err != nil {
		return nil, "", "", err
	}
	active, err := guard(pr, p.ThreadID, p.ExpectedTurnID)
	if err != nil {
		return nil, "", "", err
	}
	text, err := inputText(p.Input)
	if err != nil {
		return nil, "", "", err
	}
	return pr, active, text, nil
}

// turnSteer adds input to the running turn: the model reads it before its
// next request.
func (c *conn) turnSteer(_ Message, p TurnSteerParams) (any, error) {
	pr, active, text, err := c.guarded(p)
	if err != nil {
		return nil, err
	}
	if err := pr.s.Steer(active, text); err != nil {
		return nil, &RPCError{Code: CodeNoActiveTurn, Message: fmt.Sprintf("turn %s ended before the input could be added", active)}
	}
	pr.mu.Lock()
	var out []outMsg
	if pr.turn != nil && pr.turn.id == active {
		tr := &pr.rec.Turns[pr.turn.index]
		tr.Input = append(tr.Input, p.Input...)
		out = pr.userMessage(p.Input)
	}
	subs := pr.subscribers()
	pr.mu.Unlock()
	pr.send(c.ctx, subs, out)
	return TurnQueuedResult{ThreadID: p.ThreadID, TurnID: active, Queued: true}, nil
}

// turnFollowUp queues a turn after the running one; its configuration is
// resolved now (an error refuses it) and applies from its start: the
// running turn keeps its model, policy and tools.
func (c *conn) turnFollowUp(_ Message, p TurnSteerParams) (any, error) {
	pr, active, text, err := c.guarded(p)
	if err != nil {
		return nil, err
	}
	res, err := c.resolve(pr)
	if err != nil {
		return nil, err
	}
	id := newRequestID()
	pr.mu.Lock()
	pr.inputs[id] = p.Input
	pr.settings[id] = res
	pr.mu.Unlock()
	if err := pr.s.StartTurn(c.ctx, id, text, c.submitter()); err != nil {
		pr.mu.Lock()
		delete(pr.inputs, id)
		delete(pr.settings, id)
		pr.mu.Unlock()
		return nil, mapErr(err)
	}
	return TurnQueuedResult{ThreadID: p.ThreadID, TurnID: active, Queued: true}, nil
}

// turnInterrupt cancels the running turn; turn/completed with status
// interrupted follows.
func (c *conn) turnInterrupt(_ Message, p TurnInterruptParams) (any, error) {
	pr, err := c.live(p.ThreadID)
	if err != nil {
		return nil, err
	}
	active, err := guard(pr, p.ThreadID, p.ExpectedTurnID)
	if err != nil {
		return nil, err
	}
	if err := pr.s.CancelTurn(active); err != nil {
		return nil, &RPCError{Code: CodeNoActiveTurn, Message: fmt.Sprintf("turn %s ended before it could be interrupted", active)}
	}
	return TurnInterruptResult{ThreadID: p.ThreadID, TurnID: active, Interrupted: true}, nil
}
