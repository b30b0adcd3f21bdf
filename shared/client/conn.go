// Package client is the one client connection of SCV: every program that
// speaks the protocol to a server (the TUI, scv exec, test clients) finds
// the server binary (Finder), starts it (Start, a Process), and talks to it
// through a Conn, which knows only a byte stream. The byte stream is kept
// apart from the process so a later transport (a daemon's Unix socket) is
// one more io.ReadWriteCloser under the same Conn.
//
//	Finder.Find(Server) ─▶ Start(Command) ─▶ *Process ── Stream() ──▶ NewConn ─▶ *Conn
//	                                          Stop: stdin closed,        Send, Read,
//	                                          grace, group killed,       Hello, Negotiated
//	                                          exit code → *ExitError
//	net.Conn (a Unix socket) ───────────────────────────────────────▶ NewConn ─▶ *Conn
package client

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/version"
)

// Conn is one protocol connection to a server over a byte stream: it
// writes client frames and reads server frames. It starts no goroutine;
// the caller owns the reading loop. Send may be called from several
// goroutines (each call is one write); Read from one at a time.
type Conn struct {
	rw io.ReadWriteCloser
	fr *protocol.FrameReader

	wmu sync.Mutex
}

// NewConn returns a connection over rw that reads server frames of at
// most maxFrame bytes (0 means protocol.MaxServerFrameBytes).
func NewConn(rw io.ReadWriteCloser, maxFrame int) *Conn {
	if maxFrame <= 0 {
		maxFrame = protocol.MaxServerFrameBytes
	}
	return &Conn{rw: rw, fr: protocol.NewFrameReader(rw, maxFrame)}
}

// FrameTooLargeError refuses a client message over the server's limit
// before it is written.
type FrameTooLargeError struct {
	Kind  string // the message type
	Size  int
	Limit int
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("the %s message is %d bytes, over the server's %d-byte limit; make it shorter", e.Kind, e.Size, e.Limit)
}

// EncodeChecked returns the frame of m with its newline, refusing a
// message over protocol.MaxClientFrameBytes with a *FrameTooLargeError
// before it is written: for a client that queues frames and would rather
// say so at once (the TUI).
func EncodeChecked(m protocol.ClientMessage) ([]byte, error) {
	b, err := protocol.EncodeClientMessage(m)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", m.Kind(), err)
	}
	if len(b) > protocol.MaxClientFrameBytes {
		return nil, &FrameTooLargeError{Kind: m.Kind(), Size: len(b), Limit: protocol.MaxClientFrameBytes}
	}
	return append(b, '\n'), nil
}

// Send writes msgs in one write, so messages that need no answer from each
// other (initialize and session.start) cost one round trip. It does not
// check their size: the server answers a frame over its limit. A failed
// write is a *WriteError; anything else is an encoding error.
func (c *Conn) Send(msgs ...protocol.ClientMessage) error {
	var buf []byte
	for _, m := range msgs {
		b, err := protocol.EncodeClientMessage(m)
		if err != nil {
			return err
		}
		buf = append(append(buf, b...), '\n')
	}
	return c.WriteFrames(buf)
}

// WriteFrames writes b as it is, in one write: frames already encoded
// (EncodeChecked), or bytes a test sends on purpose. Its error is a
// *WriteError.
func (c *Conn) WriteFrames(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.rw.Write(b); err != nil {
		return &WriteError{Err: err}
	}
	return nil
}

// WriteError is a failed write to the server: for a process, the server
// is gone (its exit says why), or it closed its input.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "writing to the server: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Frame is one frame read from the server.
type Frame struct {
	// Raw is the frame's bytes without the newline (nil for a frame over
	// the limit). It is the caller's to keep.
	Raw []byte
	// Event is the decoded event; nil when Err is set.
	Event protocol.Event
	// Err says why the frame is no event: a *protocol.ErrFrameTooLarge (the
	// frame was skipped), a type this client does not know (Unknown), or a
	// malformed event.
	Err error
	// Unknown says the frame's type is not one this client knows: a newer
	// server may send it, and a client may pass it on as it is.
	Unknown bool
}

// Read returns the next frame. Its error is the stream's: io.EOF at the
// end of the server's output, or why reading failed (os.ErrClosed once the
// stream was closed under it); a frame that is no event is not an error of
// Read but a Frame whose Err is set.
func (c *Conn) Read() (Frame, error) {
	line, err := c.fr.Next()
	var big *protocol.ErrFrameTooLarge
	if errors.As(err, &big) {
		return Frame{Err: err}, nil
	}
	if err != nil {
		return Frame{}, err
	}
	f := Frame{Raw: append([]byte(nil), line...)}
	f.Unknown = protocol.NewEvent(protocol.PeekType(line)) == nil
	f.Event, f.Err = protocol.DecodeEvent(f.Raw)
	if f.Err != nil {
		f.Event = nil
	}
	return f, nil
}

// Close closes the byte stream: for a process, its stdin (end of input,
// which asks the server to exit).
func (c *Conn) Close() error { return c.rw.Close() }

// HelloVersion is the protocol version the clients speak. It stays 3 while
// protocol 4 (several clients on one session: session.attach,
// approval.resolved; docs/daemon.md) is for clients that handle it.
const HelloVersion = protocol.Version3

// Hello returns the initialize message a client sends first:
// HelloVersion and the client's name with SCV's version.
func Hello(requestID, clientName string) *protocol.Initialize {
	return HelloAt(HelloVersion, requestID, clientName)
}

// HelloAt is Hello for a client that speaks protocol version v: the TUI
// asks for version 4 (it handles approval.resolved and reads
// session.started's mcp_servers), and so does scv exec (it attaches and
// re-attaches in the daemon, and prints session.started's warnings and
// turn.retrying).
func HelloAt(v int, requestID, clientName string) *protocol.Initialize {
	return &protocol.Initialize{
		RequestID:       requestID,
		ProtocolVersion: v,
		Client:          protocol.ClientInfo{Name: clientName, Version: version.Version},
	}
}

// ErrVersionMismatch is wrapped by Negotiated's error.
var ErrVersionMismatch = errors.New("version mismatch")

// Negotiated checks the server's answer to initialize: the server echoes
// the client's version, and anything else means the two do not speak the
// same protocol. It returns the version the connection speaks.
func Negotiated(sent *protocol.Initialize, got *protocol.Initialized) (int, error) {
	if got.ProtocolVersion != sent.ProtocolVersion {
		return 0, fmt.Errorf("%w: the server answered initialize with protocol version %d, not the %d asked for", ErrVersionMismatch, got.ProtocolVersion, sent.ProtocolVersion)
	}
	return got.ProtocolVersion, nil
}
