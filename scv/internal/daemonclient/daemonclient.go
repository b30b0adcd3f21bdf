// Package daemonclient is the client side of the daemon's socket: find
// the running daemon, connect, initialize with protocol 4 and make a
// request. It is deliberately small and apart from the rest of scv: it is
// the piece to fold into shared/client (the one client connection of
// issue 13) once that lands, where attach (session.attach with after_seq
// and reconnecting) joins it.
package daemonclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/version"
)

// ErrNotRunning is wrapped when no daemon runs for the instance.
var ErrNotRunning = daemonfile.ErrNotRunning

// Running returns the description of the daemon running for home (see
// daemonfile.Running).
func Running(home string) (daemonfile.Info, error) { return daemonfile.Running(home) }

// Alive reports whether pid runs and is not a zombie.
func Alive(pid int) bool { return daemonfile.Alive(pid) }

// Conn is one initialized protocol-4 connection to the daemon.
type Conn struct {
	c  net.Conn
	r  *bufio.Reader
	id int
}

// Dial connects to home's daemon and initializes the connection as
// client name.
func Dial(ctx context.Context, home, name string) (*Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", paths.SocketFile(home))
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w: nothing listens on %s", ErrNotRunning, paths.SocketFile(home))
		}
		return nil, fmt.Errorf("connecting to the daemon: %w", err)
	}
	conn := &Conn{c: c, r: bufio.NewReaderSize(c, 64<<10)}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	ev, err := conn.Request(&protocol.Initialize{ProtocolVersion: protocol.Version4, Client: protocol.ClientInfo{Name: name, Version: version.Version}})
	if err != nil {
		c.Close()
		return nil, err
	}
	if _, ok := ev.(*protocol.Initialized); !ok {
		c.Close()
		return nil, fmt.Errorf("the daemon answered initialize with %s", ev.Kind())
	}
	return conn, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Request sends m with a fresh request id and returns the first event
// that answers it (an error event is returned as an error).
func (c *Conn) Request(m protocol.ClientMessage) (protocol.Event, error) {
	c.id++
	id := fmt.Sprint(c.id)
	setRequestID(m, id)
	b, err := protocol.EncodeClientMessage(m)
	if err != nil {
		return nil, err
	}
	if _, err := c.c.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("writing to the daemon: %w", err)
	}
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("reading from the daemon: %w", err)
		}
		ev, err := protocol.DecodeEvent(bytes.TrimSuffix(line, []byte("\n")))
		if err != nil {
			return nil, fmt.Errorf("the daemon sent a frame that is not an event: %w", err)
		}
		if e, ok := ev.(*protocol.Error); ok && (e.RequestID == id || e.Fatal) {
			return nil, fmt.Errorf("the daemon refused %s: %s (%s)", m.Kind(), e.Message, e.Code)
		}
		if requestOf(ev) == id {
			return ev, nil
		}
	}
}

func setRequestID(m protocol.ClientMessage, id string) {
	switch v := m.(type) {
	case *protocol.Initialize:
		v.RequestID = id
	case *protocol.DaemonStatus:
		v.RequestID = id
	case *protocol.SessionList:
		v.RequestID = id
	case *protocol.SessionAttach:
		v.RequestID = id
	case *protocol.SessionDetach:
		v.RequestID = id
	}
}

func requestOf(ev protocol.Event) string {
	switch v := ev.(type) {
	case *protocol.Initialized:
		return v.RequestID
	case *protocol.DaemonStatusReported:
		return v.RequestID
	case *protocol.SessionListed:
		return v.RequestID
	case *protocol.SessionAttached:
		return v.RequestID
	case *protocol.SessionDetached:
		return v.RequestID
	}
	return ""
}

// Status asks home's daemon for its status, within timeout.
func Status(home string, timeout time.Duration) (*protocol.DaemonStatusReported, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := Dial(ctx, home, "scv-daemon-status")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	ev, err := c.Request(&protocol.DaemonStatus{})
	if err != nil {
		return nil, err
	}
	st, ok := ev.(*protocol.DaemonStatusReported)
	if !ok {
		return nil, fmt.Errorf("the daemon answered daemon.status with %s", ev.Kind())
	}
	return st, nil
}
