// Package stdio is the standard-input/standard-output transport of the
// server. The process keeps itself alive when the client closes its end of
// stdout (cmd.Main asks for SIGPIPE on a channel before anything is
// written): a write then fails with EPIPE instead of killing the process
// with SIGPIPE, so the server can clean up.
package stdio

import "io"

// Transport is stdin and stdout.
type Transport struct {
	in  io.Reader
	out io.Writer
}

// New returns the transport over in and out.
func New(in io.Reader, out io.Writer) *Transport {
	return &Transport{in: in, out: out}
}

// Read reads from stdin.
func (t *Transport) Read(p []byte) (int, error) { return t.in.Read(p) }

// Write writes to stdout.
func (t *Transport) Write(p []byte) (int, error) { return t.out.Write(p) }

// Close does not close the standard streams: a read or write blocked on
// them is ended by the process exit.
func (t *Transport) Close() error { return nil }
