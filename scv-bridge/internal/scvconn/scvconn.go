// Package scvconn is the bridge's side of the SCV protocol: one
// connection (shared/client) to an `scv-server --stdio` child, carrying
// the sessions of every conversation. It implements core.Agent: a turn
// is turn.start, then the events of that request until the turn ends;
// turns the server starts on its own (background reports) go to the
// session's report function.
package scvconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/core"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/protocol"
)

// maxFrame bounds one server frame (the server's own bound is lower).
const maxFrame = 16 << 20

// Conn is a protocol connection carrying many sessions.
type Conn struct {
	conn   *client.Conn
	proc   *client.Process
	nextID atomic.Uint64

	mu       sync.Mutex
	requests map[string]chan protocol.Event // request id -> its answer
	sessions map[string]*session
	err      error
	done     chan struct{}
}

// Start starts `serverPath --stdio` with env (nil: this process's) and
// initializes protocol 4 (the version that has session.start's
// channel.log).
func Start(ctx context.Context, serverPath string, env []string, stderr io.Writer) (*Conn, error) {
	p, err := client.Start(client.Command{Path: serverPath, Args: []string{"--stdio"}, Env: env, Stderr: stderr})
	if err != nil {
		return nil, err
	}
	c := &Conn{conn: client.NewConn(p.Stream(), maxFrame), proc: p,
		requests: map[string]chan protocol.Event{}, sessions: map[string]*session{}, done: make(chan struct{})}
	go c.read()
	hello := client.HelloAt(protocol.Version4, c.id(), "scv-bridge")
	ev, err := c.request(ctx, hello)
	if err == nil {
		if init, ok := ev.(*protocol.Initialized); ok {
			_, err = client.Negotiated(hello, init)
		} else {
			err = fmt.Errorf("the server answered initialize with %s", ev.Kind())
		}
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("start scv-server: %w", err)
	}
	return c, nil
}

// Done is closed when the connection ended; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended.
func (c *Conn) Err() error { c.mu.Lock(); defer c.mu.Unlock(); return c.err }

// Close ends the server (end of input, then a grace period).
func (c *Conn) Close() error {
	err := c.proc.Stop(context.Background(), 5*time.Second)
	<-c.done
	return err
}

func (c *Conn) id() string { return "b" + strconv.FormatUint(c.nextID.Add(1), 10) }

// request sends m (whose request id is set) and waits for its answer.
func (c *Conn) request(ctx context.Context, m protocol.ClientMessage) (protocol.Event, error) {
	rid := requestID(m)
	ch := make(chan protocol.Event, 1)
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.requests[rid] = ch
	c.mu.Unlock()
	defer func() { c.mu.Lock(); delete(c.requests, rid); c.mu.Unlock() }()
	if err := c.conn.Send(m); err != nil {
		return nil, err
	}
	select {
	case ev := <-ch:
		if e, ok := ev.(*protocol.Error); ok {
			return nil, fmt.Errorf("the server refused %s: %s (%s)", m.Kind(), e.Message, e.Code)
		}
		return ev, nil
	case <-c.done:
		return nil, c.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func requestID(m protocol.ClientMessage) string {
	switch m := m.(type) {
	case *protocol.Initialize:
		return m.RequestID
	case *protocol.SessionStart:
		return m.RequestID
	}
	return ""
}

// read is the connection's one reader: it answers requests and feeds
// each session's turns, until the server's output ends.
func (c *Conn) read() {
	var err error
	for {
		var f client.Frame
		f, err = c.conn.Read()
		if err != nil {
			break
		}
		if f.Event != nil {
			c.dispatch(f.Event)
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("scv-server ended")
	}
	if perr := c.proc.ExitError(); perr != nil {
		err = fmt.Errorf("scv-server ended: %w", perr)
	}
	c.mu.Lock()
	c.err = fmt.Errorf("the connection to scv-server is closed: %w", err)
	sessions := c.sessions
	c.mu.Unlock()
	close(c.done)
	for _, s := range sessions {
		s.fail(c.Err())
	}
}

func (c *Conn) dispatch(ev protocol.Event) {
	if sq, ok := ev.(protocol.Sequenced); ok {
		c.mu.Lock()
		s := c.sessions[sq.Session()]
		c.mu.Unlock()
		if s != nil {
			s.event(ev)
			return
		}
	}
	var rid string
	switch e := ev.(type) {
	case *protocol.Initialized:
		rid = e.RequestID
	case *protocol.SessionStarted:
		rid = e.RequestID
	case *protocol.Error:
		rid = e.RequestID
	}
	c.mu.Lock()
	ch := c.requests[rid]
	c.mu.Unlock()
	if ch != nil {
		select {
		case ch <- ev:
		default:
		}
	}
}

// Start starts a session (core.Agent).
func (c *Conn) Start(ctx context.Context, req protocol.SessionStart, report func(string)) (core.Session, error) {
	req.RequestID = c.id()
	ev, err := c.request(ctx, &req)
	if err != nil {
		return nil, err
	}
	st, ok := ev.(*protocol.SessionStarted)
	if !ok {
		return nil, fmt.Errorf("the server answered session.start with %s", ev.Kind())
	}
	s := &session{c: c, id: st.SessionID, report: report, turns: map[string]*turn{}, waiters: map[string]*turn{}}
	c.mu.Lock()
	c.sessions[s.id] = s
	c.mu.Unlock()
	return s, nil
}
