// Package ndjson is the NDJSON protocol dialect (versions 1 to 4): it reads
// client frames from a transport, dispatches them to the session runtime,
// and writes events back through a bounded frame queue.
//
// Goroutines of one connection, all owned by Serve and joined before it
// returns (except an I/O goroutine blocked in a system call on a transport
// that cannot be interrupted, which the process exit ends):
//   - the reader splits the input into frames and hands them over;
//   - the writer drains the frame queue to the output;
//   - Serve's own goroutine dispatches frames and watches both.
//
// Shutdown: at end of input the running turns are cancelled and their
// terminal events flushed; on a write failure, or when the client is too
// slow (see below), the same cleanup runs. Either way turns get Grace to
// end before their work is aborted and joined.
//
// Slow clients. The writer queue is bounded, so a client that reads
// slowly holds back what the server produces instead of growing its
// memory: requests and turn events wait for room (the session coalesces
// a turn's streamed text meanwhile, see package session). A client is
// too slow only when the writer has had output for it and none of it
// could be written for StallLimit (ten minutes by default): a paused
// terminal or a laptop lid costs nothing. That decision is the writer's
// watchdog; what is done about it is separate: the connection ends. With
// stdio (CloseManager) that ends the server, after the usual cleanup; a
// server that keeps sessions beyond their connections (a daemon, serving
// without CloseManager) thereby detaches the client, and its sessions and
// their turns go on for the next client to attach.
package ndjson

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/framequeue"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/version"
)

// Transport is a bidirectional byte stream. Close unblocks a pending Read
// and Write where the transport can.
type Transport interface {
	io.Reader
	io.Writer
	Close() error
}

// DefaultStallLimit is how long the writer may have output for the client
// and write none of it before the client counts as too slow.
const DefaultStallLimit = 10 * time.Minute

// Options configure a connection.
type Options struct {
	MaxClientFrameBytes int
	MaxServerFrameBytes int
	// StallLimit is how long the client may leave the server's output
	// unread, with output waiting, before it counts as too slow
	// (DefaultStallLimit when 0).
	StallLimit time.Duration
	// Grace is how long work may take to wind down in cleanup.
	Grace time.Duration
	// ServerName is reported in initialized.
	ServerName string
	// CloseManager makes the end of the connection the end of the
	// manager's turns, as for stdio, where the client's EOF ends the
	// server. Otherwise sessions outlive the connection.
	CloseManager bool
	// DetachWait is how long, without CloseManager, a session event waits
	// for room in the connection's queue before the client counts as too
	// slow for its sessions and is detached (DefaultDetachWait when 0).
	DetachWait time.Duration
	// Status, when not nil, answers daemon.status (a daemon's
	// connections); the connection fills in its sessions.
	Status func() protocol.DaemonStatusReported
	// MCPServers, when not nil, reports the MCP servers' status for
	// session.started (v4 clients only).
	MCPServers func() []protocol.MCPServer
	// Models, when not nil, lists the models the provider serves, for
	// session.models and session.set_model (nil or empty when it lists
	// none: a session then offers its configured model only).
	Models func(ctx context.Context) []string
	// Catalog, when not nil, lists the models of every configured
	// provider and builds the provider a session switches to
	// (session.set_model with a provider); without it a session may only
	// switch among the models Models lists.
	Catalog Catalog
	Logger  *slog.Logger
}

// DefaultDetachWait is how long a daemon's session event waits for room in
// a client's full queue before the client is detached. The wait holds the
// session's emission (every client of the session waits with it), so it is
// short; the detached client re-attaches with after_seq and catches up
// from the session's ring.
const DefaultDetachWait = 2 * time.Second

func (o Options) withDefaults() Options {
	if o.MaxClientFrameBytes <= 0 {
		o.MaxClientFrameBytes = protocol.MaxClientFrameBytes
	}
	if o.MaxServerFrameBytes <= 0 {
		o.MaxServerFrameBytes = protocol.MaxServerFrameBytes
	}
	if o.StallLimit <= 0 {
		o.StallLimit = DefaultStallLimit
	}
	if o.Grace <= 0 {
		o.Grace = 3 * time.Second
	}
	if o.DetachWait <= 0 {
		o.DetachWait = DefaultDetachWait
	}
	if o.ServerName == "" {
		o.ServerName = "scv-server"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// QueueBytes is the writer queue's byte bound for a frame limit: at least
// 16 MiB, else twice the frame limit.
func QueueBytes(maxFrame int) int64 {
	return max(16<<20, 2*int64(maxFrame))
}

// QueueFrames is the writer queue's frame bound.
const QueueFrames = 256

// Ending errors of Serve.
var (
	// ErrVersionMismatch ends a connection whose client speaks a version
	// this server does not.
	ErrVersionMismatch = errors.New("client protocol version not supported")
	// ErrBackpressure ends a connection whose client is too slow: it left
	// the server's output unread for the stall limit.
	ErrBackpressure = errors.New("client stopped reading")
)

type conn struct {
	opts Options
	log  *slog.Logger
	mgr  *session.Manager
	q    *framequeue.Queue
	// ctx ends when the connection is torn down; the writer's and the
	// reader's waits end with it.
	ctx context.Context
	// waitCtx bounds the waits of requests for room: it ends when the
	// client is found too slow (cause ErrBackpressure) or Serve's context
	// ends (a signal).
	waitCtx  context.Context
	tooSlow  func()        // the slow-client rule fired: ends waitCtx, wakes Serve
	slow     chan struct{} // closed by tooSlow
	slowOnce sync.Once
	// queueFull is set before tooSlow when a session event found the
	// queue full for DetachWait (a daemon's connection).
	queueFull atomic.Bool

	version int
	client  protocol.ClientInfo
	ids     *requestIDs // used by the dispatch goroutine only

	mu       sync.Mutex
	attached map[string]func() // guarded by mu; session id → unsubscribe
}

type inbound struct {
	frame []byte
	err   error
}

// Serve runs one connection over t until the client's input ends, the
// output fails, or ctx is cancelled. It returns nil after a clean end of
// input, ErrVersionMismatch after a fatal version error, and another error
// when the output failed or the client stopped reading.
func Serve(ctx context.Context, mgr *session.Manager, t Transport, opts Options) error {
	opts = opts.withDefaults()
	connCtx, abort := context.WithCancel(context.Background())
	defer abort()
	waitCtx, stopWaits := context.WithCancelCause(ctx)
	defer stopWaits(nil)
	c := &conn{
		opts: opts, log: opts.Logger, mgr: mgr, ctx: connCtx, waitCtx: waitCtx,
		q:        framequeue.New(QueueFrames, QueueBytes(opts.MaxServerFrameBytes)),
		attached: map[string]func(){},
		ids:      newRequestIDs(),
		slow:     make(chan struct{}),
	}
	c.tooSlow = func() {
		c.slowOnce.Do(func() {
			stopWaits(ErrBackpressure)
			close(c.slow)
		})
	}

	writerDone := make(chan error, 1)
	go func() { writerDone <- c.writeLoop(t) }()

	frames := make(chan inbound)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		c.readLoop(t, frames)
	}()

	endErr := c.dispatchLoop(ctx, frames, writerDone)

	// Cleanup: detach, cancel this connection's turns, give them the grace
	// period to emit their ends, then abort the rest.
	// Closing the queue first releases any session emission still blocked
	// on it, so detaching never waits on a client that is gone.
	c.q.Close()
	c.detachAll()
	graceCtx, cancelGrace := context.WithTimeout(context.Background(), opts.Grace)
	defer cancelGrace()
	select {
	case err := <-writerDone:
		if endErr == nil && err != nil {
			endErr = err
		}
		writerDone <- err
	case <-graceCtx.Done():
	}
	abort()
	_ = t.Close()
	// Join the I/O goroutines where the transport let Close unblock them.
	joinCtx, cancelJoin := context.WithTimeout(context.Background(), opts.Grace)
	defer cancelJoin()
	select {
	case <-writerDone:
	case <-joinCtx.Done():
		c.log.Warn("Output writer is still blocked after the grace period; leaving it to process exit")
	}
	select {
	case <-readerDone:
	case <-joinCtx.Done():
	}
	return endErr
}

// dispatchLoop selects over input, writer failure, the slow-client rule
// and ctx.
func (c *conn) dispatchLoop(ctx context.Context, frames <-chan inbound, writerDone chan error) error {
	for {
		select {
		case <-c.slow:
			return c.endTooSlow()
		case in, ok := <-frames:
			if !ok {
				if c.opts.CloseManager {
					c.log.Info("Client input ended; shutting down")
				} else {
					c.log.Info("Client input ended; closing its connection")
				}
				c.finishTurns()
				return nil
			}
			if in.err != nil {
				var big *protocol.ErrFrameTooLarge
				if errors.As(in.err, &big) {
					if err := c.sendError("", protocol.ErrInvalidRequest,
						fmt.Sprintf("the frame is %d bytes, over the %d-byte limit; it was discarded (split large content into files the tools can read)", big.Size, big.Limit), nil); err != nil {
						return err
					}
					continue
				}
				c.log.Warn("Reading client input failed", "err", in.err)
				c.finishTurns()
				return nil
			}
			if err := c.handle(in.frame); err != nil {
				c.cleanupTurns()
				return err
			}
		case err := <-writerDone:
			writerDone <- err
			c.log.Error("Writing to the client failed; cleaning up", "err", err)
			c.cleanupTurns()
			if err == nil {
				err = errors.New("writer stopped")
			}
			return err
		case <-ctx.Done():
			c.cleanupTurns()
			return ctx.Err()
		}
	}
}

// endTooSlow is what is done about a client the slow-client rule found too
// slow: the connection ends. With CloseManager (stdio) its turns are
// cancelled and the server ends; otherwise its sessions keep running,
// detached from it.
func (c *conn) endTooSlow() error {
	if c.queueFull.Load() {
		c.log.Warn("The client's queue stayed full; detaching it from its sessions, which go on", "wait", c.opts.DetachWait)
		c.cleanupTurns()
		return fmt.Errorf("%w: its queue stayed full for %v; it was detached from its sessions", ErrBackpressure, c.opts.DetachWait)
	}
	c.log.Error("The client has left the server's output unread for the stall limit; ending the connection", "limit", c.opts.StallLimit)
	c.cleanupTurns()
	return fmt.Errorf("%w: no output could be written to it for %v", ErrBackpressure, c.opts.StallLimit)
}

// finishTurns cancels the turns and waits (up to the grace period) for
// their terminal events to be queued, so a client that closed its input
// still reads how each turn ended.
func (c *conn) finishTurns() { c.cleanupTurns() }

func (c *conn) cleanupTurns() {
	if !c.opts.CloseManager {
		return
	}
	graceCtx, cancel := context.WithTimeout(context.Background(), c.opts.Grace)
	defer cancel()
	c.mgr.Close(graceCtx)
}

func (c *conn) readLoop(r io.Reader, out chan<- inbound) {
	defer close(out)
	fr := protocol.NewFrameReader(r, c.opts.MaxClientFrameBytes)
	for {
		frame, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		var in inbound
		if err != nil {
			in.err = err
		} else {
			in.frame = append([]byte(nil), frame...)
		}
		select {
		case out <- in:
		case <-c.ctx.Done():
			return
		}
		var big *protocol.ErrFrameTooLarge
		if err != nil && !errors.As(err, &big) {
			return
		}
	}
}

// writeLoop drains the queue to w. Frames already queued are written
// together, through a buffer flushed whenever the queue runs dry, so a
// burst of deltas costs a few system calls rather than one each.
//
// Its watchdog is the slow-client rule: a write to the client blocked
// for StallLimit (output waiting, none of it read) makes the client too
// slow. The write itself cannot be interrupted, so cleanup proceeds around
// it.
func (c *conn) writeLoop(w io.Writer) error {
	watchdog := time.AfterFunc(time.Hour, c.tooSlow)
	watchdog.Stop()
	defer watchdog.Stop()
	bw := bufio.NewWriterSize(&watchedWriter{w: w, watchdog: watchdog, timeout: c.opts.StallLimit}, writeBuffer)
	for {
		frame, ok := c.q.Pop(c.ctx)
		if !ok {
			return bw.Flush()
		}
		for ok {
			if _, err := bw.Write(frame); err != nil {
				return fmt.Errorf("writing a frame: %w", err)
			}
			frame, ok = c.q.TryPop()
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("writing a frame: %w", err)
		}
	}
}

// writeBuffer is the writer's batch size.
const writeBuffer = 64 << 10

// watchedWriter arms the watchdog around every write to the client.
type watchedWriter struct {
	w        io.Writer
	watchdog *time.Timer
	timeout  time.Duration
}

func (ww *watchedWriter) Write(p []byte) (int, error) {
	ww.watchdog.Reset(ww.timeout)
	n, err := ww.w.Write(p)
	ww.watchdog.Stop()
	return n, err
}

// encode returns ev's frame with its newline, or *protocol.ErrFrameTooLarge.
func (c *conn) encode(ev protocol.Event) ([]byte, error) {
	buf, err := protocol.AppendEvent(make([]byte, 0, 256), ev)
	if err != nil {
		return nil, err
	}
	if len(buf) > c.opts.MaxServerFrameBytes {
		return nil, &protocol.ErrFrameTooLarge{Size: len(buf), Limit: c.opts.MaxServerFrameBytes}
	}
	return append(buf, '\n'), nil
}

// Deliver implements session.Subscriber: session events wait for room
// until ctx (the turn's or the request's) ends. A connection that is
// closing has been detached from its sessions: what is delivered to it
// then is dropped, and the session goes on.
//
// Without CloseManager (a daemon) a client must not hold a session that
// others share: an event that finds no room within DetachWait is dropped
// and the connection ends as too slow, detaching it from its sessions.
func (c *conn) Deliver(ctx context.Context, ev protocol.Sequenced) error {
	frame, err := c.encode(ev)
	if err != nil {
		return err
	}
	if !c.opts.CloseManager && c.queueFull.Load() {
		return nil // being detached: drop, never wait again
	}
	if c.opts.CloseManager || c.q.Room(len(frame)) {
		if err := c.q.Push(ctx, frame); err != nil && !errors.Is(err, framequeue.ErrClosed) {
			return err
		}
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, c.opts.DetachWait)
	defer cancel()
	err = c.q.Push(wctx, frame)
	switch {
	case err == nil, errors.Is(err, framequeue.ErrClosed):
		return nil
	case ctx.Err() != nil:
		return err
	}
	c.queueFull.Store(true)
	c.tooSlow()
	return nil
}

// Room implements session.Subscriber.
func (c *conn) Room(size int) bool { return c.q.Room(size) }

// send queues a connection-level event, waiting for room until the client
// is found too slow or Serve's context ends.
func (c *conn) send(ev protocol.Event) error {
	frame, err := c.encode(ev)
	if err != nil {
		return err
	}
	if err := c.q.Push(c.waitCtx, frame); err != nil {
		return c.waitErr(err)
	}
	return nil
}

// waitErr is the error of a request whose wait for room ended: the client
// was too slow, or Serve's context ended.
func (c *conn) waitErr(err error) error {
	if cause := context.Cause(c.waitCtx); cause != nil {
		if errors.Is(cause, ErrBackpressure) {
			return fmt.Errorf("%w: a request's answer could not be queued", ErrBackpressure)
		}
		return cause
	}
	return err
}

func (c *conn) sendError(requestID string, code protocol.ErrorCode, msg string, entry *protocol.QueueEntry) error {
	return c.send(&protocol.Error{RequestID: requestID, Code: code, Message: msg, Entry: entry})
}

// requestCtx is the context of a request's waits on the session (for the
// emit lock, for room): they end when the client is too slow or Serve's
// context ends.
func (c *conn) requestCtx() (context.Context, context.CancelFunc) {
	return context.WithCancel(c.waitCtx)
}

func (c *conn) attach(s *session.Session) error {
	ctx, cancel := c.requestCtx()
	defer cancel()
	unsub, err := s.Subscribe(ctx, c)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.attached[s.ID()] = unsub
	c.mu.Unlock()
	return nil
}

func (c *conn) detachAll() {
	c.mu.Lock()
	subs := c.attached
	c.attached = map[string]func(){}
	c.mu.Unlock()
	for _, unsub := range subs {
		unsub()
	}
}

func serverInfo(name string) protocol.ServerInfo {
	return protocol.ServerInfo{Name: name, Version: version.Version}
}
