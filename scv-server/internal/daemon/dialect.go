package daemon

import (
	"bufio"
	"bytes"
	"context"
	"io"

	"github.com/scv-cli/scv/scv-server/internal/transport/unix"
)

// ACPPreamble is the first line a client writes to speak the Agent Client
// Protocol on a daemon connection (`scv-server connect --dialect acp`, which
// `scv acp --daemon` runs). Any other first line is the NDJSON protocol's
// first frame and is served as such, so NDJSON clients send nothing extra.
const ACPPreamble = `{"dialect":"acp"}`

// AppServerPreamble is the first line a client writes to speak the App
// Server protocol on a daemon connection (`scv app-server --daemon`).
const AppServerPreamble = `{"dialect":"app-server"}`

// Dialects a first line selects.
const (
	dialectNDJSON    = ""
	dialectACP       = "acp"
	dialectAppServer = "app-server"
)

// maxPreamble bounds the first line the daemon reads to choose a dialect;
// a longer first line is NDJSON's business (its own frame limit applies).
const maxPreamble = 64 << 10

// sniffed is a connection whose first line has been read: reads return
// that line (unless it was the ACP preamble) and then the rest.
type sniffed struct {
	io.Reader
	c *unix.Conn
}

func (s *sniffed) Write(p []byte) (int, error) { return s.c.Write(p) }
func (s *sniffed) Close() error                { return s.c.Close() }

// sniff reads the first line of r and returns the dialect it asks for.
// rest reads what the dialect must see: after the preamble for ACP and
// the App Server, and for NDJSON the first line again, then the rest.
func sniff(r io.Reader) (dialect string, rest io.Reader) {
	br := bufio.NewReaderSize(r, maxPreamble)
	line, err := br.ReadSlice('\n')
	if err == nil {
		switch string(bytes.TrimRight(line, "\r\n")) {
		case ACPPreamble:
			return dialectACP, br
		case AppServerPreamble:
			return dialectAppServer, br
		}
	}
	// A long line (bufio.ErrBufferFull), an end of input or a read error:
	// what was read is handed on, and the dialect meets the rest.
	first := append([]byte(nil), line...)
	return dialectNDJSON, io.MultiReader(bytes.NewReader(first), br)
}

// serveConn serves one accepted connection in the dialect its first line
// chooses.
// The connection is closed when the daemon's context ends while the first
// line is awaited, and always when the dialect returns: that is what
// unblocks a reader or writer the dialect left on a peer that went quiet.
func (d *Daemon) serveConn(ctx context.Context, c *unix.Conn) error {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	dialect, rest := sniff(c)
	stop() // from here the dialect watches ctx and ends in its own way
	t := &sniffed{Reader: rest, c: c}
	switch dialect {
	case dialectACP:
		return d.rt.ServeACPShared(ctx, t)
	case dialectAppServer:
		return d.rt.ServeAppServerShared(ctx, t)
	}
	return d.rt.ServeShared(ctx, t, d.status)
}
