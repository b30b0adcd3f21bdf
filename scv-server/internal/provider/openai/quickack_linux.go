package openai

import (
	"context"
	"net"

	"golang.org/x/sys/unix"
)

// quickAckDial dials like dial and returns a connection that acknowledges
// what it reads at once (TCP_QUICKACK after every read).
//
// Why: a server that writes a response in several small writes with
// Nagle's algorithm on (Python's http.server and the model servers built
// on it: headers, then each SSE chunk) holds its second write until the
// first is acknowledged, and Linux delays the acknowledgement of a
// connection in request/response ("pingpong") mode by up to 40 ms. Every
// model request after the first few on a kept-alive connection then
// waited 40 ms for nothing (docs/performance.md, issue 23). Quick
// acknowledgements cost one setsockopt per read and a few more ACK
// packets.
func quickAckDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			return c, nil
		}
		raw, err := tc.SyscallConn()
		if err != nil {
			return c, nil
		}
		return &quickAckConn{TCPConn: tc, raw: raw}, nil
	}
}

// quickAckConn is a TCP connection that re-arms TCP_QUICKACK after each
// read: the kernel leaves quick-ACK mode on its own, so one setsockopt
// at dial time would not last.
type quickAckConn struct {
	*net.TCPConn
	raw interface {
		Control(func(fd uintptr)) error
	}
}

func (c *quickAckConn) Read(b []byte) (int, error) {
	n, err := c.TCPConn.Read(b)
	if n > 0 {
		_ = c.raw.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
		})
	}
	return n, err
}
