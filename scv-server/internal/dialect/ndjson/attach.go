package ndjson

import (
	"context"
	"fmt"

	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/protocol"
)

// attachSession answers session.attach (v4): session.attached with the
// session's state, the replayed events, then the live ones.
func (c *conn) attachSession(m *protocol.SessionAttach) error {
	if m.SessionID == "" {
		return &session.Error{Code: protocol.ErrInvalidRequest, Message: "session_id is missing: send the id of a live session (session.list lists them)"}
	}
	c.mu.Lock()
	_, already := c.attached[m.SessionID]
	c.mu.Unlock()
	if already {
		return &session.Error{Code: protocol.ErrInvalidRequest, Message: fmt.Sprintf("session %q is already attached on this connection; send session.detach first to attach again with after_seq", m.SessionID)}
	}
	s, err := c.mgr.Get(m.SessionID)
	if err != nil {
		return &session.Error{Code: protocol.ErrSessionNotFound,
			Message: fmt.Sprintf("no live session has id %q; session.list lists the live ones, and session.start with resume reopens a stored one", m.SessionID)}
	}
	ctx, cancel := c.requestCtx()
	defer cancel()
	// The state and the replay are queued under the session's emit lock,
	// so a client that does not read must not hold it: on a daemon's
	// connection they wait for room at most DetachWait, like events.
	pushCtx, cancelPush := c.waitCtx, func() {}
	if !c.opts.CloseManager {
		pushCtx, cancelPush = context.WithTimeout(c.waitCtx, c.opts.DetachWait)
	}
	defer cancelPush()
	push := func(ev protocol.Event) error {
		frame, err := c.encode(ev)
		if err != nil {
			return err
		}
		if err := c.q.Push(pushCtx, frame); err != nil {
			if c.waitCtx.Err() == nil && pushCtx.Err() != nil {
				c.queueFull.Store(true)
				c.tooSlow()
				return fmt.Errorf("%w: its queue stayed full while it attached", ErrBackpressure)
			}
			return c.waitErr(err)
		}
		return nil
	}
	var prov string
	if c.opts.Catalog != nil {
		prov = s.Provider().Name()
	}
	unsub, err := s.Attach(ctx, c, m.AfterSeq, func(st session.AttachState) error {
		if err := push(&protocol.SessionAttached{
			Provider:            prov,
			Price:               c.price(s),
			RequestID:           m.RequestID,
			SessionID:           s.ID(),
			Cwd:                 s.Cwd(),
			Model:               s.Model(),
			ContextMaxTokens:    s.ContextMaxTokens(),
			MaxServerFrameBytes: int64(c.opts.MaxServerFrameBytes),
			LastSeq:             st.LastSeq,
			TurnID:              st.TurnID,
			Queue:               st.Queue,
			Paused:              st.Paused,
			PendingApprovals:    st.PendingApprovals,
			Replayed:            len(st.Replay),
			ReplayTruncated:     st.ReplayTruncated,
			Clients:             st.Clients,
		}); err != nil {
			return err
		}
		for _, ev := range st.Replay {
			if err := push(ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.attached[s.ID()] = unsub
	c.mu.Unlock()
	return nil
}

// detachSession answers session.detach: the session and its turns go on.
func (c *conn) detachSession(m *protocol.SessionDetach) error {
	c.mu.Lock()
	unsub, ok := c.attached[m.SessionID]
	delete(c.attached, m.SessionID)
	c.mu.Unlock()
	if !ok {
		return &session.Error{Code: protocol.ErrSessionNotFound, Message: fmt.Sprintf("session %q is not attached on this connection", m.SessionID)}
	}
	unsub()
	return c.send(&protocol.SessionDetached{RequestID: m.RequestID, SessionID: m.SessionID})
}

// daemonStatus answers daemon.status on a daemon's connection.
func (c *conn) daemonStatus(m *protocol.DaemonStatus) error {
	if c.opts.Status == nil {
		return &session.Error{Code: protocol.ErrInvalidRequest, Message: "daemon.status: this server is not a daemon (it serves one client on stdio); run `scv daemon start`"}
	}
	st := c.opts.Status()
	st.RequestID = m.RequestID
	live, err := c.mgr.Live("")
	if err != nil {
		return err
	}
	st.Sessions = live
	return c.send(&st)
}
