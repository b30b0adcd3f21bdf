package servertest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/server"
	"github.com/scv-cli/scv/shared/paths"
)

// NewRuntime writes cfg as home's config.toml (unless cfg is "-": the
// home has a file already, or none on purpose) and builds a runtime on it
// with the approval policy policy ("" for the configuration's), as a
// dialect's tests serve it in process.
func NewRuntime(t testing.TB, home, cfg, policy string) *server.Runtime {
	t.Helper()
	if cfg != "-" {
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := server.New(server.Options{Env: paths.MapEnv(map[string]string{"SCV_HOME": home}), ApprovalPolicy: policy, Grace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// Piped is one connection of a dialect served in process over two pipes:
// the client writes In and reads Out.
type Piped struct {
	t      testing.TB
	what   string
	wait   time.Duration
	In     *io.PipeWriter
	Out    *io.PipeReader
	done   chan error
	closed bool
}

// Pipe runs serve on a connection whose other end it returns; what names
// the server in failures ("the agent"), and wait bounds its end after the
// end of its input.
func Pipe(t testing.TB, what string, wait time.Duration, serve func(context.Context, io.ReadWriter) error) *Piped {
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	p := &Piped{t: t, what: what, wait: wait, In: cw, Out: cr, done: make(chan error, 1)}
	go func() {
		err := serve(context.Background(), struct {
			io.Reader
			io.Writer
		}{sr, sw})
		_ = sw.Close()
		p.done <- err
	}()
	return p
}

// Stop ends the client's input and waits for the server to end, failing
// the test when it does not or when it returns an error. Later calls do
// nothing.
func (p *Piped) Stop() {
	if p.closed {
		return
	}
	p.closed = true
	_ = p.In.Close()
	select {
	case err := <-p.done:
		if err != nil {
			p.t.Errorf("%s: %v", p.what, err)
		}
	case <-time.After(p.wait):
		p.t.Fatalf("%s did not end after the end of its input", p.what)
	}
}
