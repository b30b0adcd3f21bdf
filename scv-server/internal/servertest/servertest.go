// Package servertest runs a real server runtime over in-memory pipes for
// tests, with a protocol client that sends frames and reads events. The
// runtime is configured through a real config.toml in a temporary SCV_HOME,
// usually pointing at a fakeopenai server.
package servertest

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/netguard"
	"github.com/scv-cli/scv/scv-server/internal/server"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
)

// Wait bounds every wait of a test for an event. It only guards against a
// hang; tests never rely on it for ordering.
const Wait = 20 * time.Second

// Options configure a test server.
type Options struct {
	// Config is the text of config.toml; empty runs the demo provider.
	Config string
	// Env adds environment variables.
	Env map[string]string
	// Home is the SCV_HOME to use, such as an earlier server's (Server.Home)
	// to resume its sessions; empty: a new temporary directory.
	Home string
	// ApprovalPolicy overrides the config's.
	ApprovalPolicy string
	Tools          session.ToolsFunc
	// MaxHistoryBytes and MaxHistoryItems shrink the history bounds.
	MaxHistoryBytes int64
	MaxHistoryItems int
	Grace           time.Duration
	StallLimit      time.Duration
	// Logger receives the server's log; nil discards it.
	Logger *slog.Logger
	// WebPolicy, WebRootCAs, BraveURL, Adapters and AgentEnv are passed to
	// the server (server.Options).
	WebPolicy  *netguard.Policy
	WebRootCAs *x509.CertPool
	BraveURL   string
	Adapters   []adapters.Adapter
	AgentEnv   []string
}

// FakeProviderConfig returns a config.toml for a provider at baseURL with a
// context window large enough never to compact.
func FakeProviderConfig(baseURL, extra string) string {
	return FakeProviderConfigWithContext(baseURL, 1000000, extra)
}

// FakeProviderConfigWithContext is FakeProviderConfig with a context window
// of contextTokens.
func FakeProviderConfigWithContext(baseURL string, contextTokens int64, extra string) string {
	return fakeopenai.Config(baseURL, fmt.Sprintf("context_max_tokens = %d\n%s\n", contextTokens, extra))
}

// Server is a running test server and its client end.
type Server struct {
	t    testing.TB
	Home string
	// Runtime is the server's runtime, for tests of internal APIs that
	// later features call (such as server-started turns).
	Runtime *server.Runtime
	Client  *Client
	done    chan error
	in      *io.PipeWriter // the client's writes
	out     *io.PipeReader // the client's reads
}

type pipeTransport struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (p pipeTransport) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipeTransport) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeTransport) Close() error {
	p.r.CloseWithError(io.ErrClosedPipe)
	return p.w.CloseWithError(io.ErrClosedPipe)
}

// Start starts a server; it is stopped at the end of the test.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	home := opts.Home
	if home == "" {
		home = t.TempDir()
	}
	if opts.Config != "" {
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(opts.Config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"SCV_HOME": home}
	for k, v := range opts.Env {
		env[k] = v
	}
	rt, err := server.New(server.Options{
		Env:             paths.MapEnv(env),
		ApprovalPolicy:  opts.ApprovalPolicy,
		Tools:           opts.Tools,
		MaxHistoryBytes: opts.MaxHistoryBytes,
		MaxHistoryItems: opts.MaxHistoryItems,
		Grace:           opts.Grace,
		StallLimit:      opts.StallLimit,
		Logger:          opts.Logger,
		WebPolicy:       opts.WebPolicy,
		WebRootCAs:      opts.WebRootCAs,
		BraveURL:        opts.BraveURL,
		Adapters:        opts.Adapters,
		AgentEnv:        opts.AgentEnv,
	})
	if err != nil {
		t.Fatalf("starting the server: %v", err)
	}
	cr, sw := io.Pipe() // server → client
	sr, cw := io.Pipe() // client → server
	s := &Server{t: t, Home: home, Runtime: rt, done: make(chan error, 1), in: cw, out: cr}
	go func() { s.done <- rt.Serve(context.Background(), pipeTransport{r: sr, w: sw}) }()
	s.Client = NewClient(t, cr, cw)
	t.Cleanup(func() { s.Stop() })
	return s
}

// CloseInput closes the client's side of the input (EOF for the server).
func (s *Server) CloseInput() { _ = s.in.Close() }

// CloseOutput closes the client's read end, so the server's writes fail.
func (s *Server) CloseOutput() { _ = s.out.CloseWithError(errors.New("client went away")) }

// Done waits for Serve to return and returns its error.
func (s *Server) Done() error {
	s.t.Helper()
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(Wait):
		s.t.Fatalf("the server did not stop within %v", Wait)
		return nil
	}
}

// Stop closes the input and waits for the server.
func (s *Server) Stop() {
	s.Client.Resume()
	s.CloseInput()
	go func() { _, _ = io.Copy(io.Discard, s.out) }()
	_ = s.Done()
	s.Client.wait()
}

// Client speaks the protocol to a server through shared/client's Conn,
// the connection every SCV client uses.
type Client struct {
	t      testing.TB
	conn   *client.Conn
	events chan Frame
	wg     sync.WaitGroup

	mu     sync.Mutex
	resume chan struct{} // guarded by mu; non-nil while paused
	lines  [][]byte
	lastSq map[string]uint64
	nextID int
}

// Frame is one decoded server frame and its bytes.
type Frame struct {
	Raw   []byte
	Event protocol.Event
	Err   error
}

// NewClient reads frames from r and writes to w. The test owns r and w:
// the client never closes them.
func NewClient(t testing.TB, r io.Reader, w io.Writer) *Client {
	conn := client.NewConn(readWriter{r, w}, protocol.MaxServerFrameBytes)
	c := &Client{t: t, conn: conn, events: make(chan Frame, 1<<16), lastSq: map[string]uint64{}}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(c.events)
		for {
			f, err := conn.Read()
			if err != nil {
				return
			}
			c.mu.Lock()
			c.lines = append(c.lines, f.Raw)
			c.mu.Unlock()
			c.events <- Frame{Raw: f.Raw, Event: f.Event, Err: f.Err}
			c.mu.Lock()
			resume := c.resume
			c.mu.Unlock()
			if resume != nil {
				<-resume
			}
		}
	}()
	return c
}

func (c *Client) wait() { c.wg.Wait() }

// readWriter is a byte stream whose ends the test closes itself.
type readWriter struct {
	io.Reader
	io.Writer
}

func (readWriter) Close() error { return nil }

// Pause stops reading the server's output after the frame being read, so
// the server sees a client that does not keep up.
func (c *Client) Pause() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resume == nil {
		c.resume = make(chan struct{})
	}
}

// Resume reads again.
func (c *Client) Resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.resume != nil {
		close(c.resume)
		c.resume = nil
	}
}

// TrySend writes a client message and returns the write error.
func (c *Client) TrySend(m protocol.ClientMessage) error {
	err := c.conn.Send(m)
	var we *client.WriteError
	if errors.As(err, &we) {
		return we.Err
	}
	return err
}

// Lines returns every frame read so far.
func (c *Client) Lines() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.lines...)
}

// ID returns a fresh request id.
func (c *Client) ID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	return fmt.Sprint(c.nextID)
}

// Send writes a client message.
func (c *Client) Send(m protocol.ClientMessage) {
	c.t.Helper()
	b, err := protocol.EncodeClientMessage(m)
	if err != nil {
		c.t.Fatal(err)
	}
	c.SendRaw(string(b))
}

// SendRaw writes one line as is (a newline is added).
func (c *Client) SendRaw(line string) {
	c.t.Helper()
	if err := c.conn.WriteFrames([]byte(line + "\n")); err != nil {
		c.t.Fatalf("sending %.80q: %v", line, err)
	}
}

// Next returns the next event. It fails the test on a frame that is not a
// protocol event and checks the session sequence has no gaps.
func (c *Client) Next() protocol.Event {
	c.t.Helper()
	select {
	case f, ok := <-c.events:
		if !ok {
			c.t.Fatalf("the server closed its output")
		}
		if f.Err != nil {
			c.t.Fatalf("frame %s is not a protocol event: %v", f.Raw, f.Err)
		}
		if sq, ok := f.Event.(protocol.Sequenced); ok {
			c.mu.Lock()
			last := c.lastSq[sq.Session()]
			c.lastSq[sq.Session()] = sq.SeqNum()
			c.mu.Unlock()
			if sq.SeqNum() != last+1 {
				c.t.Fatalf("%s has seq %d after %d: the sequence must grow by one", f.Event.Kind(), sq.SeqNum(), last)
			}
		}
		return f.Event
	case <-time.After(Wait):
		c.t.Fatalf("no event within %v", Wait)
		return nil
	}
}

// Closed reports whether the server's output ended, waiting for it.
func (c *Client) Closed() bool {
	c.t.Helper()
	for {
		select {
		case _, ok := <-c.events:
			if !ok {
				return true
			}
		case <-time.After(Wait):
			return false
		}
	}
}

// Expect returns the next event, which must be a T.
func Expect[T protocol.Event](c *Client) T {
	c.t.Helper()
	ev := c.Next()
	v, ok := ev.(T)
	if !ok {
		var zero T
		b, _ := protocol.EncodeEvent(ev)
		c.t.Fatalf("want %T, got %s", zero, b)
	}
	return v
}

// Until reads events up to and including the first T and returns them.
func Until[T protocol.Event](c *Client) ([]protocol.Event, T) {
	c.t.Helper()
	var seen []protocol.Event
	for {
		ev := c.Next()
		seen = append(seen, ev)
		if v, ok := ev.(T); ok {
			return seen, v
		}
		var want T
		if protocol.IsTerminal(ev) && protocol.IsTerminal(want) {
			b, _ := protocol.EncodeEvent(ev)
			c.t.Fatalf("waiting for %T, the turn ended with %s", want, b)
		}
	}
}

// ExpectError returns the next event, which must be an error with code.
func (c *Client) ExpectError(code protocol.ErrorCode) *protocol.Error {
	c.t.Helper()
	e := Expect[*protocol.Error](c)
	if e.Code != code {
		c.t.Fatalf("want error %s, got %s: %s", code, e.Code, e.Message)
	}
	return e
}

// Init sends initialize with version and checks the answer.
func (c *Client) Init(version int) {
	c.t.Helper()
	id := c.ID()
	c.Send(&protocol.Initialize{RequestID: id, ProtocolVersion: version, Client: protocol.ClientInfo{Name: "servertest", Version: "1"}})
	ini := Expect[*protocol.Initialized](c)
	if ini.RequestID != id || ini.ProtocolVersion != version {
		c.t.Fatalf("initialized = %+v", ini)
	}
}

// StartSession starts a session in cwd and returns session.started. For
// version 2 and later it also reads the queue snapshot.
func (c *Client) StartSession(cwd string, version int) *protocol.SessionStarted {
	c.t.Helper()
	c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: cwd})
	st := Expect[*protocol.SessionStarted](c)
	if version >= protocol.Version2 {
		Expect[*protocol.QueueSnapshot](c)
	}
	return st
}

// Turn starts a turn and returns its turn.started.
func (c *Client) Turn(sessionID, prompt string) *protocol.TurnStarted {
	c.t.Helper()
	c.Send(&protocol.TurnStart{RequestID: c.ID(), SessionID: sessionID, Prompt: prompt})
	return Expect[*protocol.TurnStarted](c)
}

// Kinds returns the types of events.
func Kinds(evs []protocol.Event) string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Kind()
	}
	return strings.Join(out, " ")
}

// JSON encodes v for messages.
func JSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
