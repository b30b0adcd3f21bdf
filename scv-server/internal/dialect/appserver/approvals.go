package appserver

import (
	"encoding/json"
	"time"

	"github.com/scv-cli/scv/shared/protocol"
)

// pendingAsk is an approval request the client has not answered yet.
type pendingAsk struct {
	params ApprovalRequestParams
	timer  *time.Timer
	asked  []*conn // connections sent approval/request
}

// approvalRequested opens an approval request: approval/requested to
// every subscriber, and the approval/request server request, whose id is
// the request id; unanswered, it times out as "timeout" (a denial).
func (p *projector) approvalRequested(e *protocol.ApprovalRequested) []outMsg {
	t := p.turn
	var args json.RawMessage
	if cs := t.calls[e.CallID]; cs != nil {
		args = cs.args
	}
	preview := e.Summary
	if preview == "" {
		preview = e.Name
	}
	params := ApprovalRequestParams{RequestID: e.ApprovalID, ThreadID: p.s.ID(), TurnID: t.id, ToolCallID: e.CallID,
		ToolName: e.Name, Preview: preview, Arguments: args, Risk: string(e.Risk)}
	ask := &pendingAsk{params: params}
	p.approvals[e.ApprovalID] = ask
	id := e.ApprovalID
	ask.timer = time.AfterFunc(p.reg.approvalTimeout(), func() { p.resolve(id, DecisionTimeout) })
	out := []outMsg{p.note("approval/requested", params)}
	request := encode(Message{ID: mustJSON(e.ApprovalID), Method: "approval/request", Params: mustJSON(params)})
	for c := range p.subs {
		ask.asked = append(ask.asked, c)
		c.mu.Lock()
		c.asked[e.ApprovalID] = p
		c.mu.Unlock()
		out = append(out, outMsg{only: c, line: request})
	}
	return out
}

// resolve settles an open approval request with the client's decision and
// tells every subscriber; false when it is not open (answered already).
func (p *projector) resolve(requestID, decision string) bool {
	p.mu.Lock()
	ask := p.approvals[requestID]
	delete(p.approvals, requestID)
	subs := p.subscribers()
	p.mu.Unlock()
	if ask == nil {
		return false
	}
	ask.timer.Stop()
	for _, c := range ask.asked {
		c.mu.Lock()
		delete(c.asked, requestID)
		c.mu.Unlock()
	}
	// approval/resolved goes out before the session hears the decision,
	// so it precedes the call's item/started.
	note := p.note("approval/resolved", ApprovalResolvedParams{ThreadID: p.s.ID(), TurnID: ask.params.TurnID, RequestID: requestID, Decision: decision})
	p.send(p.ctx, subs, []outMsg{note})
	approved, scope := false, protocol.ScopeOnce
	switch decision {
	case DecisionAllow:
		approved = true
	case DecisionAllowSession:
		approved, scope = true, protocol.ScopeSession
	}
	err := p.s.ResolveApproval(requestID, approved, scope)
	if err != nil && scope == protocol.ScopeSession {
		// The call proposed no session rule: it is allowed once, and the
		// client's decision is still reported as it was.
		err = p.s.ResolveApproval(requestID, true, protocol.ScopeOnce)
	}
	if err != nil {
		p.reg.log.Debug("Approval already settled in the session", "approval", requestID, "err", err)
	}
	return true
}

// settleTurnApprovals forgets the open requests of an ended turn (the
// session denied them as the turn ended). p.mu is held.
func (p *projector) settleTurnApprovals(turnID string) []outMsg {
	var out []outMsg
	for id, ask := range p.approvals {
		if ask.params.TurnID != turnID {
			continue
		}
		ask.timer.Stop()
		delete(p.approvals, id)
		out = append(out, p.note("approval/resolved", ApprovalResolvedParams{ThreadID: p.s.ID(), TurnID: turnID, RequestID: id, Decision: DecisionDeny}))
	}
	return out
}

// validDecision reports whether d is a canonical decision.
func validDecision(d string) bool {
	switch d {
	case DecisionAllow, DecisionAllowSession, DecisionDeny, DecisionTimeout:
		return true
	}
	return false
}

// answered handles the client's response to a server request.
func (c *conn) answered(m Message) {
	var id string
	if json.Unmarshal(m.ID, &id) != nil {
		c.log.Debug("A response to no request of this server", "id", string(m.ID))
		return
	}
	c.mu.Lock()
	p := c.asked[id]
	c.mu.Unlock()
	if p == nil {
		c.log.Debug("A response to a request that is settled or unknown", "id", id)
		return
	}
	decision := DecisionDeny
	if m.Error != nil {
		c.log.Info("The client answered an approval request with an error; the call is denied", "request", id, "err", m.Error.Message)
	} else {
		var d ApprovalDecision
		if json.Unmarshal(m.Result, &d) != nil || !validDecision(d.Decision) {
			c.log.Warn("The client answered an approval request without a valid decision; the call is denied", "request", id, "result", string(m.Result))
		} else {
			decision = d.Decision
		}
	}
	p.resolve(id, decision)
}

// approvalResolve settles an approval request by its id.
func (c *conn) approvalResolve(_ Message, p ApprovalResolveParams) (any, error) {
	if !validDecision(p.Decision) {
		return nil, rpcErrorf(CodeInvalidParams, "Invalid params: decision %q is not one of allow, allow_session, deny, timeout", p.Decision)
	}
	pr := c.opts.Threads.get(p.ThreadID)
	if pr == nil {
		return nil, rpcErrorf(CodeNotFound, "thread %s is not open; thread/resume it first", p.ThreadID)
	}
	if !pr.resolve(p.RequestID, p.Decision) {
		return nil, rpcErrorf(CodeInvalidParams, "Invalid params: approval request %q is unknown or already resolved", p.RequestID)
	}
	return ApprovalResolveResult{RequestID: p.RequestID, Decision: p.Decision}, nil
}

// approvalTimeout is the registry's timeout for approval requests.
func (r *Registry) approvalTimeout() time.Duration {
	if r.askTimeout > 0 {
		return r.askTimeout
	}
	return DefaultApprovalTimeout
}
