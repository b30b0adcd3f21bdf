// Package appserver is the App Server dialect: bidirectional JSON-RPC 2.0
// over JSON lines for desktop apps and IDE shells (docs/app-server.md). It
// maps threads onto SCV sessions, turns onto session turns and session
// events onto items, beside the NDJSON and ACP dialects over the same
// session runtime.
//
// Layers: wire.go is the framing (lines, decoding, the bounded outbox);
// server.go the connection and its dispatch; threads.go the threads and
// their records; project.go the projection of session events onto items
// and notifications; approvals.go the approval requests.
//
// Goroutines, all owned by Serve and joined before it returns: the reader
// (Serve's own), the writer, and one timer per open approval request
// (time.AfterFunc, stopped when the request is settled). Session events
// reach the connection on the session's turn goroutines, through the
// thread's projector, and wait for room in the outbox.
package appserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/session"
)

// Defaults.
const (
	// DefaultApprovalTimeout is how long an approval request waits for the
	// client before it is settled as "timeout" (a denial).
	DefaultApprovalTimeout = 30 * time.Second
	// DefaultQueueLimit bounds the messages waiting for the client.
	DefaultQueueLimit = 4096
	// responseReserve is the room responses have beyond the limit.
	responseReserve = 256
)

// ResolveRequest is what a turn's configuration is resolved from: the
// thread as it is stored.
type ResolveRequest struct {
	ThreadID string
	AgentKey string
	Cwd      string
	Metadata map[string]any
}

// Resolution is the configuration of one turn.
type Resolution struct {
	Model  string
	Policy approval.Policy
	// Tools, when not nil, is the configuration the thread's tools are
	// rebuilt from for the turn (session.Retool); ToolsKey names it, so an
	// unchanged configuration keeps the tools as they are.
	Tools    *session.WorkspaceConfig
	ToolsKey string
}

// Host resolves threads' configuration and lists models; the server
// package implements it over SCV's configuration.
type Host interface {
	// Resolve is called for every turn/start (and turn/followUp), after the
	// configuration is read again. An error refuses the turn with -32603.
	Resolve(ctx context.Context, req ResolveRequest) (Resolution, error)
	// Models lists the configured providers' models; empty is allowed.
	Models(ctx context.Context) []Model
}

// Options configure a connection.
type Options struct {
	// Host resolves turns; nil disables threads (threadLifecycle false).
	Host Host
	// Threads is the process's thread registry (shared by the daemon's
	// connections).
	Threads *Registry
	// CloseManager makes the end of input the end of the manager's turns
	// (stdio).
	CloseManager bool
	QueueLimit   int
	Grace        time.Duration
	Logger       *slog.Logger
}

// Serve runs one App Server connection over rw until its input ends or
// ctx ends. The end of input cancels running turns (with CloseManager),
// waits for their terminal notifications to be written and returns nil.
func Serve(ctx context.Context, mgr *session.Manager, rw io.ReadWriter, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.QueueLimit <= 0 {
		opts.QueueLimit = DefaultQueueLimit
	}
	if opts.Grace <= 0 {
		opts.Grace = 3 * time.Second
	}
	if opts.Threads == nil {
		opts.Threads = NewRegistry(mgr, "", opts.Logger)
	}
	connCtx, stop := context.WithCancel(context.Background())
	defer stop()
	c := &conn{opts: opts, mgr: mgr, log: opts.Logger, ctx: connCtx, out: newOutbox(opts.QueueLimit, responseReserve),
		threads: map[string]*projector{}, asked: map[string]*projector{}}
	// A failed write (the client is gone) ends the reading too.
	readCtx, cancelRead := context.WithCancel(ctx)
	defer cancelRead()
	writerDone := make(chan error, 1)
	go func() {
		err := c.writeLoop(rw)
		if err != nil {
			cancelRead()
		}
		writerDone <- err
	}()

	readErr := c.readLoop(readCtx, rw)

	// The end: cancel the turns (stdio) and wait, within the grace period,
	// for their terminal notifications; then detach and drain the writer.
	graceCtx, cancel := context.WithTimeout(context.Background(), opts.Grace)
	defer cancel()
	if opts.CloseManager {
		mgr.CancelAll()
		mgr.Close(graceCtx)
	}
	c.detachAll()
	c.out.close()
	var writeErr error
	select {
	case writeErr = <-writerDone:
	case <-graceCtx.Done():
		c.log.Warn("The App Server writer did not finish within the grace period; the client is not reading its output")
		stop()
		writeErr = <-writerDone
	}
	if writeErr != nil && !errors.Is(writeErr, io.ErrClosedPipe) {
		return writeErr
	}
	if readErr != nil && (ctx.Err() != nil || !errors.Is(readErr, context.Canceled)) {
		return readErr
	}
	return nil
}

// conn is one client connection.
type conn struct {
	opts Options
	mgr  *session.Manager
	log  *slog.Logger
	ctx  context.Context // ends when the connection is torn down
	out  *outbox

	initialized atomic.Bool
	mu          sync.Mutex
	optOut      map[string]bool       // guarded by mu
	clientName  string                // guarded by mu
	threads     map[string]*projector // subscribed threads, guarded by mu
	asked       map[string]*projector // open approval/request ids → thread, guarded by mu
	// currentID is the id of the request being dispatched (the reader's
	// goroutine only): methods that answer before their notifications
	// write the response themselves and return answered.
	currentID json.RawMessage
}

// answered is the result of a method that wrote its response itself.
var answered = &struct{}{}

// readLoop reads and dispatches lines until the input ends.
func (c *conn) readLoop(ctx context.Context, r io.Reader) error {
	lr := newLineReader(r)
	lines := make(chan []byte)
	errc := make(chan error, 1)
	go func() {
		defer close(lines)
		for {
			line, err := lr.next()
			if errors.Is(err, errTooLong) {
				c.reply(nullID, nil, rpcErrorf(CodeInvalidRequest, "Invalid request: the message is longer than %d bytes", MaxLineBytes))
				continue
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					errc <- fmt.Errorf("reading the client's messages: %w", err)
				}
				return
			}
			select {
			case lines <- line:
			case <-c.ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				select {
				case err := <-errc:
					return err
				default:
					return nil
				}
			}
			c.handleLine(line)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// writeLoop writes the outbox until it is closed and drained.
func (c *conn) writeLoop(w io.Writer) error {
	for {
		b := c.out.take(c.ctx)
		if b == nil {
			return nil
		}
		if _, err := w.Write(b); err != nil {
			c.out.close()
			for c.out.take(c.ctx) != nil {
			}
			return fmt.Errorf("writing to the client: %w", err)
		}
	}
}

// handleLine decodes and dispatches one line.
func (c *conn) handleLine(line []byte) {
	m, id, rerr := Decode(line)
	if rerr != nil {
		if id == nil {
			id = nullID
		}
		c.reply(id, nil, rerr)
		return
	}
	switch {
	case m.IsResponse():
		c.answered(m)
	case m.IsNotification():
		c.notification(m)
	default:
		if c.out.full() {
			c.reply(m.ID, nil, &RPCError{Code: CodeOverloaded, Message: "server overloaded: the client is not reading the server's messages fast enough; read them, then retry"})
			return
		}
		c.currentID = m.ID
		res, err := c.dispatch(m)
		c.reply(m.ID, res, err)
	}
}

// reply queues a response; a nil result with a nil error is sent as {}.
func (c *conn) reply(id json.RawMessage, result any, err error) {
	if err == nil && result == any(answered) {
		return
	}
	c.out.put(c.ctx, responseLine(id, result, err), true)
}

// responseLine encodes a response.
func responseLine(id json.RawMessage, result any, err error) []byte {
	if err != nil {
		var re *RPCError
		if !errors.As(err, &re) {
			re = &RPCError{Code: CodeInternal, Message: err.Error()}
		}
		return encode(Message{ID: id, Error: re})
	}
	b, merr := json.Marshal(result)
	if merr != nil {
		return encode(Message{ID: id, Error: rpcErrorf(CodeInternal, "Internal error: encoding the result failed: %v", merr)})
	}
	return encode(Message{ID: id, Result: b})
}

// optedOut reports whether the client opted out of method.
func (c *conn) optedOut(method string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.optOut[method]
}

// notify queues a notification unless the client opted out of method;
// it waits for room until ctx or the connection ends.
func (c *conn) notify(ctx context.Context, method string, params any) bool {
	if c.optedOut(method) {
		return true
	}
	b, err := json.Marshal(params)
	if err != nil {
		c.log.Error("Could not encode a notification", "method", method, "err", err)
		return true
	}
	return c.put(ctx, encode(Message{Method: method, Params: b}))
}

// put queues a notification or server request line.
func (c *conn) put(ctx context.Context, line []byte) bool {
	merged, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(c.ctx, cancel)
	defer stop()
	return c.out.put(merged, line, false)
}

// notification handles a client notification.
func (c *conn) notification(m Message) {
	switch m.Method {
	case "initialized":
		// Optional and idempotent: the server is ready after initialize.
	default:
		c.log.Debug("Ignored an unknown notification", "method", m.Method)
	}
}

// detachAll unsubscribes from every thread.
func (c *conn) detachAll() {
	c.mu.Lock()
	all := c.threads
	c.threads = map[string]*projector{}
	c.mu.Unlock()
	for _, p := range all {
		p.unsubscribe(c, false)
	}
}

// decodeParams unmarshals params into v; absent params are {}.
func decodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	// Unknown fields are allowed: newer clients may send more.
	if err := json.Unmarshal(raw, v); err != nil {
		return rpcErrorf(CodeInvalidParams, "Invalid params: %v", err)
	}
	return nil
}
