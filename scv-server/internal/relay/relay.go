// Package relay is `scv-server connect`: a relay between a client's
// stdio and the daemon's socket, for a client built to run `scv-server
// --stdio` as its child (the TUI). It survives a planned restart of the
// daemon: when the daemon closes the connection for one, the relay dials
// the restarted daemon, initializes it as the client did and attaches to
// every session the client had started or attached to, after the last
// event it relayed, so the client sees one continuous stream
// (docs/daemon.md#through-a-planned-restart).
package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/protocol"
)

// Options configure a relay.
type Options struct {
	// Home is the daemon's SCV_HOME.
	Home string
	// In and Out are the client's side: its frames come on In, the
	// daemon's go to Out.
	In  io.Reader
	Out io.Writer
	Log *slog.Logger
	// ReattachTimeout bounds the wait for a restarted daemon; zero means
	// client.ReattachTimeout.
	ReattachTimeout time.Duration
}

// session is what the relay knows of one of the client's sessions.
type session struct {
	// seq is the last seq the daemon sent, in its numbering; offset is
	// added to it before the client sees it: a restarted daemon numbers
	// the session's events from 1 again, and the client must see them
	// follow the ones it has.
	seq, offset uint64
}

// Relay is one client's relay. The pump goroutine (client to daemon) and
// Run's loop (daemon to client) share the current connection under mu.
type Relay struct {
	opts Options

	mu        sync.Mutex
	cond      *sync.Cond
	uc        *net.UnixConn // nil while a restarted daemon is dialed
	ended     bool          // Run returned: the pump stops waiting
	inputDone bool          // the client's input ended
	version   int           // the client's initialize
	name      string

	// Only Run's loop touches these.
	conn     *client.Conn
	instance string
	sessions map[string]*session
	own      map[string]bool // request ids of the relay's own attaches

	outMu sync.Mutex // the pump writes frame errors to Out too
}

// New returns a relay over uc, the connection already dialed.
func New(opts Options, uc *net.UnixConn) *Relay {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	r := &Relay{opts: opts, uc: uc, conn: client.NewConn(uc, 0), sessions: map[string]*session{}, own: map[string]bool{}}
	r.cond = sync.NewCond(&r.mu)
	if info, err := daemonfile.Read(opts.Home); err == nil {
		r.instance = info.Instance
	}
	return r
}

// Run relays until the client's input has ended and the daemon closed
// the connection (nil), or the daemon closed it for good: nil after a
// stop or a crash, as a stdio server's exit; an error when a restart did
// not bring a daemon back in time. The pump goroutine it starts ends when
// the client's input does (a read blocked on a real stdin is left to the
// process exit, as before).
func (r *Relay) Run(ctx context.Context) error {
	go r.pump()
	defer func() {
		r.mu.Lock()
		r.ended = true
		if r.uc != nil {
			_ = r.uc.Close()
		}
		r.cond.Broadcast()
		r.mu.Unlock()
	}()
	for {
		f, err := r.conn.Read()
		if err == nil {
			if err := r.relay(f); err != nil {
				return err
			}
			continue
		}
		if !r.restarting() {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("relaying the daemon's output: %w", err)
		}
		if err := r.reconnect(ctx); err != nil {
			return err
		}
	}
}

// restarting reports whether the connection that just ended should be
// followed into a restarted daemon: the client still talks, speaks
// protocol 4 (session.attach), and the daemon is restarting.
func (r *Relay) restarting() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inputDone || r.version < protocol.Version4 {
		return false
	}
	_ = r.uc.Close()
	r.uc = nil // the pump waits for the next connection
	return client.RestartUnderway(r.opts.Home)
}

// reconnect dials the restarted daemon, initializes it as the client,
// and sends an attach for each session; their answers are the relay's
// (relay drops them), the events that follow the client's.
func (r *Relay) reconnect(ctx context.Context) error {
	wait := r.opts.ReattachTimeout
	if wait <= 0 {
		wait = client.ReattachTimeout
	}
	r.opts.Log.Info("The daemon is restarting; reconnecting", "sessions", len(r.sessions), "limit", wait)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	r.mu.Lock()
	name := r.name
	r.mu.Unlock()
	var dc *client.DaemonConn
	for {
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := client.DialDaemon(dctx, r.opts.Home, name)
		dcancel()
		if err == nil {
			dc = c
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the daemon closed the connection for a restart and did not come back within %s (last error: %v); start it with `scv daemon start`", wait, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	restarted := r.instance != "" && dc.Instance != r.instance
	r.instance = dc.Instance
	clear(r.own)
	var attaches []protocol.ClientMessage
	for id, s := range r.sessions {
		pos := client.Position{Seq: s.seq}
		if restarted {
			// The new numbering starts after what the client saw.
			s.offset += s.seq
			s.seq = 0
			pos.Seq = 0
		}
		after := pos.Seq
		rid := "scv-relay-" + strconv.Itoa(len(r.own)+1)
		r.own[rid] = true
		attaches = append(attaches, &protocol.SessionAttach{RequestID: rid, SessionID: id, AfterSeq: &after})
	}
	if len(attaches) > 0 {
		if err := dc.Send(attaches...); err != nil {
			_ = dc.Close()
			return fmt.Errorf("re-attaching the client's sessions: %w", err)
		}
	}
	r.conn = dc.Conn
	r.mu.Lock()
	r.uc = dc.Socket()
	if r.inputDone {
		// The input ended while no connection was there to half-close.
		_ = r.uc.CloseWrite()
	}
	r.cond.Broadcast()
	r.mu.Unlock()
	r.opts.Log.Info("Reconnected to the daemon", "instance", dc.Instance, "sessions", len(attaches))
	return nil
}

// relay passes one of the daemon's frames on to the client, keeping
// track of the client's sessions and renumbering a restarted session's
// events; it drops the answers to the relay's own attaches.
func (r *Relay) relay(f client.Frame) error {
	raw := f.Raw
	switch ev := f.Event.(type) {
	case *protocol.SessionStarted:
		r.track(ev.SessionID)
	case *protocol.SessionAttached:
		if r.own[ev.RequestID] {
			if ev.ReplayTruncated {
				r.opts.Log.Warn("Events of a session are gone from the daemon's ring; the client sees a gap", "session", ev.SessionID)
			}
			return nil
		}
		r.track(ev.SessionID)
	case *protocol.SessionDetached:
		delete(r.sessions, ev.SessionID)
	case *protocol.Error:
		if r.own[ev.RequestID] {
			r.opts.Log.Warn("Could not re-attach a session after the restart", "code", ev.Code, "message", ev.Message)
			return nil
		}
	case protocol.Sequenced:
		if s := r.sessions[ev.Session()]; s != nil {
			s.seq = ev.SeqNum()
			if s.offset > 0 {
				ev.SetSeq(s.offset + s.seq)
				b, err := protocol.EncodeEvent(ev)
				if err != nil {
					return fmt.Errorf("renumbering an event: %w", err)
				}
				raw = b
			}
		}
	}
	if raw == nil {
		return nil // a frame over the limit was skipped
	}
	return r.write(append(raw, '\n'))
}

func (r *Relay) track(id string) {
	if r.sessions[id] == nil {
		r.sessions[id] = &session{}
	}
}

func (r *Relay) write(b []byte) error {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	if _, err := r.opts.Out.Write(b); err != nil {
		return fmt.Errorf("writing to the client: %w", err)
	}
	return nil
}

// pump copies the client's frames to the current connection, waiting
// while a restarted daemon is dialed. A frame written into a connection
// that was already ending may be lost with it: a request in flight at a
// restart can stay unanswered.
func (r *Relay) pump() {
	fr := protocol.NewFrameReader(r.opts.In, protocol.MaxClientFrameBytes)
	for {
		line, err := fr.Next()
		var big *protocol.ErrFrameTooLarge
		if errors.As(err, &big) {
			// What the daemon would answer, since the frame is gone.
			if b, eerr := protocol.EncodeEvent(&protocol.Error{Code: protocol.ErrInvalidRequest,
				Message: fmt.Sprintf("the frame is %d bytes, over the %d-byte limit; it was discarded (split large content into files the tools can read)", big.Size, big.Limit)}); eerr == nil {
				_ = r.write(append(b, '\n'))
			}
			continue
		}
		if err != nil {
			r.endInput()
			return
		}
		if protocol.PeekType(line) == protocol.TypeInitialize {
			if m, err := protocol.DecodeClientMessage(line); err == nil {
				in := m.(*protocol.Initialize)
				r.mu.Lock()
				r.version, r.name = in.ProtocolVersion, in.Client.Name
				r.mu.Unlock()
			}
		}
		if !r.send(append(line, '\n')) {
			return
		}
	}
}

// send writes one frame to the current connection, waiting for one while
// the relay reconnects; false once the relay has ended.
func (r *Relay) send(b []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if r.ended {
			return false
		}
		if r.uc != nil {
			if _, err := r.uc.Write(b); err == nil {
				return true
			}
			// The connection is ending; Run's loop notices and either
			// reconnects (and broadcasts) or ends.
		}
		r.cond.Wait()
	}
}

// endInput half-closes the connection at the end of the client's input:
// the daemon detaches the client and closes its side, which ends Run.
func (r *Relay) endInput() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inputDone = true
	if r.uc != nil {
		_ = r.uc.CloseWrite()
	}
}
