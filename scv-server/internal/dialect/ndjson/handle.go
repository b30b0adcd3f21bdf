package ndjson

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/chatlog"
	"github.com/scv-cli/scv/shared/protocol"
)

// handle dispatches one frame. A returned error ends the connection; every
// refusal of a request is answered with an error event instead.
func (c *conn) handle(frame []byte) error {
	msg, err := protocol.DecodeClientMessage(frame)
	if err != nil {
		var de *protocol.DecodeError
		if errors.As(err, &de) {
			return c.sendError(de.RequestID, de.Code, de.Message, nil)
		}
		return c.sendError("", protocol.ErrInvalidRequest, err.Error(), nil)
	}
	if !c.ids.use(msg.Request()) {
		// Answered without the request_id: the answer must not be taken
		// for one to the earlier request that used it.
		return c.sendError("", protocol.ErrInvalidRequest,
			fmt.Sprintf("%s: request_id %q was already used on this connection; send a new request_id with every message", msg.Kind(), msg.Request()), nil)
	}
	if c.version == 0 {
		init, ok := msg.(*protocol.Initialize)
		if !ok {
			return c.sendError(msg.Request(), protocol.ErrNotInitialized,
				fmt.Sprintf("%s before initialize: send initialize with your protocol_version first", msg.Kind()), nil)
		}
		return c.initialize(init)
	}
	if since, _ := protocol.ClientMessageSince(msg.Kind()); since > c.version {
		return c.sendError(msg.Request(), protocol.ErrInvalidRequest,
			fmt.Sprintf("unknown message type %q for protocol version %d (it needs version %d or later)", msg.Kind(), c.version, since), nil)
	}
	err = c.dispatchRecovering(msg)
	return c.answer(msg.Request(), err)
}

// dispatchRecovering dispatches msg; a handler that panics (a bug) fails
// the request with internal_error instead of ending the server and every
// session in it. The panic and its stack go to the log.
func (c *conn) dispatchRecovering(msg protocol.ClientMessage) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.log.Error("A request handler panicked; the request gets internal_error and the server goes on",
				"type", msg.Kind(), "request_id", msg.Request(), "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("the server failed unexpectedly while handling %s (%v); it goes on, and its log has the details", msg.Kind(), r)
		}
	}()
	return c.dispatch(msg)
}

// answer turns a request's error into an error event, or ends the
// connection for a send that timed out.
func (c *conn) answer(requestID string, err error) error {
	if err == nil {
		return nil
	}
	var se *session.Error
	switch {
	case errors.As(err, &se):
		return c.sendError(requestID, se.Code, se.Message, se.Entry)
	case errors.Is(err, ErrBackpressure):
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return c.waitErr(err)
	default:
		c.log.Error("Request failed", "request_id", requestID, "err", err)
		return c.sendError(requestID, protocol.ErrInternal, err.Error(), nil)
	}
}

func (c *conn) initialize(m *protocol.Initialize) error {
	if m.ProtocolVersion < protocol.Oldest || m.ProtocolVersion > protocol.Latest {
		err := c.send(&protocol.Error{RequestID: m.RequestID, Code: protocol.ErrVersionMismatch, Fatal: true,
			Message: fmt.Sprintf("protocol version %d is not supported: this server speaks versions %d to %d", m.ProtocolVersion, protocol.Oldest, protocol.Latest)})
		if err != nil {
			return err
		}
		return ErrVersionMismatch
	}
	c.version = m.ProtocolVersion
	c.client = m.Client
	c.log.Info("Client initialized", "client", m.Client.Name, "client_version", m.Client.Version, "protocol_version", m.ProtocolVersion)
	return c.send(&protocol.Initialized{RequestID: m.RequestID, ProtocolVersion: m.ProtocolVersion, Server: serverInfo(c.opts.ServerName)})
}

func (c *conn) dispatch(msg protocol.ClientMessage) error {
	switch m := msg.(type) {
	case *protocol.Initialize:
		return &session.Error{Code: protocol.ErrInvalidRequest, Message: "the connection is already initialized; send initialize once"}
	case *protocol.SessionStart:
		return c.startSession(m)
	case *protocol.TurnStart:
		return c.withSession(m.SessionID, func(ctx context.Context, s *session.Session) error {
			return s.StartTurn(ctx, m.RequestID, m.Prompt, c.client.Name)
		})
	case *protocol.TurnCancel:
		return c.withSession(m.SessionID, func(_ context.Context, s *session.Session) error {
			if m.TurnID == "" {
				return &session.Error{Code: protocol.ErrInvalidRequest, Message: "turn.cancel needs the turn_id of the running turn"}
			}
			return s.CancelTurn(m.TurnID)
		})
	case *protocol.ApprovalResolve:
		return c.withSession(m.SessionID, func(ctx context.Context, s *session.Session) error {
			if m.Feedback != "" && c.version >= protocol.Version4 {
				if m.Approved || (m.Scope != "" && m.Scope != protocol.ScopeOnce) {
					return &session.Error{Code: protocol.ErrInvalidRequest, Message: "feedback goes with a denial of this call: send \"approved\":false and scope \"once\" (or none) with it"}
				}
				return s.DenyWithFeedbackBy(ctx, m.ApprovalID, m.Feedback, c.client.Name)
			}
			return s.ResolveApprovalBy(ctx, m.ApprovalID, m.Approved, m.Scope, c.client.Name)
		})
	case *protocol.SessionAttach:
		return c.attachSession(m)
	case *protocol.SessionDetach:
		return c.detachSession(m)
	case *protocol.DaemonStatus:
		return c.daemonStatus(m)
	case *protocol.SessionClear:
		return c.withSession(m.SessionID, func(ctx context.Context, s *session.Session) error {
			return s.Clear(ctx, m.RequestID)
		})
	case *protocol.SessionPause:
		return c.withSession(m.SessionID, func(ctx context.Context, s *session.Session) error {
			return s.Pause(ctx, m.RequestID, m.Paused)
		})
	case *protocol.QueueUpdate:
		return c.withSession(m.SessionID, func(ctx context.Context, s *session.Session) error {
			return s.UpdateQueued(ctx, m.RequestID, m.QueueID, m.Revision, m.Prompt)
		})
	case *protocol.QueueMove:
		return c.withSession(m.SessionID, func(ctx context.Context, s *session.Session) error {
			return s.MoveQueued(ctx, m.RequestID, m.QueueID, m.Revision, m.BeforeQueueID)
		})
	case *protocol.QueueRemove:
		return c.withSession(m.SessionID, func(ctx context.Context, s *session.Session) error {
			return s.RemoveQueued(ctx, m.RequestID, m.QueueID, m.Revision)
		})
	case *protocol.SessionList:
		return c.listSessions(m)
	case *protocol.SessionRules:
		return c.withSession(m.SessionID, func(_ context.Context, s *session.Session) error {
			return c.send(&protocol.RulesListed{RequestID: m.RequestID, SessionID: s.ID(), Rules: s.Rules()})
		})
	case *protocol.RuleRevoke:
		return c.withSession(m.SessionID, func(_ context.Context, s *session.Session) error {
			if err := s.RevokeRule(m.Key); err != nil {
				return err
			}
			return c.send(&protocol.RulesListed{RequestID: m.RequestID, SessionID: s.ID(), Rules: s.Rules()})
		})
	case *protocol.SessionCompact:
		return c.withSession(m.SessionID, func(ctx context.Context, s *session.Session) error {
			return s.Compact(ctx, m.RequestID)
		})
	case *protocol.SessionModels:
		return c.withSession(m.SessionID, func(ctx context.Context, s *session.Session) error {
			return c.sessionModel(m.RequestID, s, c.models(ctx, s))
		})
	case *protocol.SetModel:
		return c.withSession(m.SessionID, func(ctx context.Context, s *session.Session) error {
			return c.setModel(ctx, m, s)
		})
	}
	return &session.Error{Code: protocol.ErrInvalidRequest, Message: fmt.Sprintf("unknown message type %q", msg.Kind())}
}

// withSession runs op on an attached session, with the context of a
// request's waits (requestCtx).
func (c *conn) withSession(id string, op func(context.Context, *session.Session) error) error {
	s, err := c.session(id)
	if err != nil {
		return err
	}
	ctx, cancel := c.requestCtx()
	defer cancel()
	return op(ctx, s)
}

// session returns an attached session.
func (c *conn) session(id string) (*session.Session, error) {
	if id == "" {
		return nil, &session.Error{Code: protocol.ErrInvalidRequest, Message: "session_id is missing: send the id from session.started"}
	}
	c.mu.Lock()
	_, ok := c.attached[id]
	c.mu.Unlock()
	if !ok {
		msg := fmt.Sprintf("no session %q on this connection; start one with session.start", id)
		if c.version >= protocol.Version4 {
			msg = fmt.Sprintf("no session %q is attached on this connection; start one with session.start, or attach to a live one with session.attach", id)
		}
		return nil, &session.Error{Code: protocol.ErrSessionNotFound, Message: msg}
	}
	return c.mgr.Get(id)
}

// checkChannel checks a channel with a chat log (v4 channel.log): the
// server finds the log under platform, account and conversation in its
// chat archive, so each must be a plain name that cannot lead elsewhere.
func checkChannel(ch protocol.Channel) error {
	if !ch.Log {
		return nil
	}
	for _, p := range [][2]string{{"platform", ch.Platform}, {"account", ch.Account}, {"conversation", ch.Conversation}} {
		if err := chatlog.CheckSegment(p[1]); err != nil {
			return &session.Error{Code: protocol.ErrInvalidRequest, Message: fmt.Sprintf("channel.%s %v: a channel with \"log\":true names its chat log by platform, account and conversation, so each must be a plain name", p[0], err)}
		}
	}
	return nil
}

func (c *conn) startSession(m *protocol.SessionStart) error {
	opts := session.StartOptions{Cwd: m.Cwd, ProtocolVersion: c.version}
	if c.version >= protocol.Version3 {
		opts.Model = m.Model
		opts.AutoApprove = m.AutoApprove
		opts.Channel = m.Channel
		opts.Resume = m.Resume
		if m.Tools != nil && !*m.Tools {
			opts.ToolsOff = true
		}
		if m.DelegationDepth != nil {
			if *m.DelegationDepth < 0 {
				return &session.Error{Code: protocol.ErrInvalidRequest, Message: "delegation_depth must be 0 or more"}
			}
			opts.DelegationDepth = *m.DelegationDepth
		}
		if m.Channel != nil && m.Channel.Platform == "" {
			return &session.Error{Code: protocol.ErrInvalidRequest, Message: "channel.platform is missing: name the chat platform, such as \"wechat\""}
		}
		if m.Channel != nil {
			ch := *m.Channel
			if c.version < protocol.Version4 {
				ch.Log = false // a v4 member: older clients get what they always did
			}
			if err := checkChannel(ch); err != nil {
				return err
			}
			opts.Channel = &ch
		}
	}
	if c.version >= protocol.Version4 && m.ApprovalPolicy != "" {
		p, err := approval.ParsePolicy(m.ApprovalPolicy)
		if err != nil {
			return &session.Error{Code: protocol.ErrInvalidRequest, Message: fmt.Sprintf("approval_policy: %v", err)}
		}
		opts.Policy = p
	}
	s, err := c.mgr.Start(opts)
	if err != nil {
		return err
	}
	if err := c.attach(s); err != nil {
		return err
	}
	started := &protocol.SessionStarted{
		RequestID:             m.RequestID,
		SessionID:             s.ID(),
		Cwd:                   s.Cwd(),
		Model:                 s.Model(),
		ContextMaxTokens:      s.ContextMaxTokens(),
		MaxServerFrameBytes:   int64(c.opts.MaxServerFrameBytes),
		MaxTranscriptBytes:    protocol.DefaultMaxTranscriptBytes,
		MaxTranscriptItems:    protocol.DefaultMaxTranscriptItems,
		MaxPromptHistoryBytes: protocol.DefaultMaxPromptHistoryBytes,
		MaxPromptHistoryItems: protocol.DefaultMaxPromptHistoryItems,
	}
	if s.Resumed() {
		u := s.Usage()
		started.Resumed, started.Usage = true, &u
	}
	if c.version >= protocol.Version4 && c.opts.MCPServers != nil {
		// Older clients get exactly the bytes they always did.
		started.MCPServers = c.opts.MCPServers()
	}
	if c.version >= protocol.Version4 {
		started.Warnings = s.Warnings()
		if c.opts.Catalog != nil {
			started.Provider, started.Price = s.Provider().Name(), c.price(s)
		}
	}
	if err := c.send(started); err != nil {
		return err
	}
	if s.Resumed() {
		if err := c.sendReplay(m.RequestID, s); err != nil {
			return err
		}
	}
	if c.version >= protocol.Version2 {
		ctx, cancel := c.requestCtx()
		defer cancel()
		return s.EmitSnapshot(ctx, m.RequestID)
	}
	return nil
}
