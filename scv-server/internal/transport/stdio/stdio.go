// Package stdio is the standard-input/standard-output transport of the
// server. It keeps the process alive when the client closes its end of
// stdout: a write then fails with EPIPE instead of killing the process
// with SIGPIPE, so the server can clean up.
package stdio

import (
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Transport is stdin and stdout.
type Transport struct {
	in   io.Reader
	out  io.Writer
	stop func()
}

// New returns the transport over in and out. It asks for SIGPIPE to be
// delivered to a channel rather than ignored, which leaves children with
// the default SIGPIPE behaviour (signal.Ignore would leak into them).
func New(in io.Reader, out io.Writer) *Transport {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	return &Transport{in: in, out: out, stop: func() { signal.Stop(ch) }}
}

// Read reads from stdin.
func (t *Transport) Read(p []byte) (int, error) { return t.in.Read(p) }

// Write writes to stdout.
func (t *Transport) Write(p []byte) (int, error) { return t.out.Write(p) }

// Close stops SIGPIPE handling. It does not close the standard streams: a
// read or write blocked on them is ended by the process exit.
func (t *Transport) Close() error {
	t.stop()
	return nil
}
