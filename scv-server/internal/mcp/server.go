package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/childenv"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/proctag"
	"github.com/scv-cli/scv/shared/version"
)

// stopGrace is how long a stdio server gets to exit once its stdin is
// closed, before its tree is killed.
const stopGrace = 2 * time.Second

// server is one configured MCP server and its connection.
type server struct {
	m    *Manager
	name string
	cfg  config.MCPServer
	log  *slog.Logger

	settled  chan struct{} // closed when the first start has succeeded or failed
	settleMu sync.Once
	// cancel stops the server alone (Reconcile); set by launch, under
	// the Manager's mu. done is closed once its goroutine has returned
	// (at once for a disabled server).
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	state   string             // guarded by mu
	err     string             // guarded by mu
	sess    *sdk.ClientSession // guarded by mu; nil unless ready
	tools   []tools.SourceTool // guarded by mu
	skipped []string           // guarded by mu
	starts  int                // guarded by mu; successful starts

	progressMu sync.Mutex
	progress   map[string]func(string) // by progress token
}

func newServer(m *Manager, name string, cfg config.MCPServer) *server {
	return &server{m: m, name: name, cfg: cfg, log: m.log.With("mcp_server", name),
		settled: make(chan struct{}), done: make(chan struct{}), state: StateStarting, progress: map[string]func(string){}}
}

// stop makes a launched server's goroutine stop it; the Manager's mu is
// held.
func (s *server) stop() {
	if s.cancel != nil {
		s.cancel()
	}
}

func (s *server) settle() { s.settleMu.Do(func() { close(s.settled) }) }

func (s *server) setState(state string, err error) {
	s.mu.Lock()
	s.state, s.err = state, ""
	if err != nil {
		s.err = err.Error()
	}
	s.mu.Unlock()
	if state != StateStarting && state != StateRestarting {
		s.settle()
	}
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Name: s.name, State: s.state, Error: s.err, Skipped: slices.Clone(s.skipped), Restarts: max(s.starts-1, 0)}
	for _, t := range s.tools {
		st.Tools = append(st.Tools, t.Spec.Name)
	}
	return st
}

func (s *server) offered() []tools.SourceTool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

func (s *server) session() *sdk.ClientSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess
}

// run connects, serves until the connection ends, and starts the server
// again with backoff while ctx lasts. It returns when ctx ends or the
// server failed too many times in a row.
func (s *server) run(ctx context.Context) {
	defer s.settle()
	delay := s.m.opts.Backoff
	failures := 0
	for {
		c, err := s.connect(ctx)
		if ctx.Err() != nil {
			if c != nil {
				c.close()
			}
			s.setState(StateStopped, nil)
			return
		}
		if err == nil {
			failures, delay = 0, s.m.opts.Backoff
			s.mu.Lock()
			s.starts++
			s.mu.Unlock()
			s.setState(StateReady, nil)
			s.log.Info("MCP server ready", "tools", len(s.offered()))
			// The connection's refresher is owned by this loop: it ends
			// with the connection (or ctx), and is joined before the
			// connection closes, so Close waits for it.
			rctx, stopRefresh := context.WithCancel(ctx)
			refreshed := make(chan struct{})
			go func() {
				defer close(refreshed)
				s.refresher(rctx, c)
			}()
			err = c.wait(ctx)
			stopRefresh()
			<-refreshed
			s.clearTools()
			c.close()
			if ctx.Err() != nil {
				s.setState(StateStopped, nil)
				return
			}
			err = fmt.Errorf("the server stopped: %w", err)
		}
		failures++
		if failures > s.m.opts.MaxRestarts {
			s.log.Warn("MCP server failed; not starting it again", "err", err)
			s.setState(StateFailed, fmt.Errorf("%w (gave up after %d attempts in a row)", err, failures))
			return
		}
		s.log.Warn("MCP server failed; starting it again", "err", err, "in", delay)
		// The first failure settles the server as failed, so a session's
		// first request does not wait for the restarts.
		s.setState(StateFailed, err)
		s.mu.Lock()
		s.state = StateRestarting
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			s.setState(StateStopped, nil)
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, s.m.opts.MaxBackoff)
	}
}

// conn is one live connection and, for stdio, its process.
type conn struct {
	sess *sdk.ClientSession
	proc *process // nil for HTTP
	// changed signals notifications/tools/list_changed (capacity 1).
	changed chan struct{}
}

func (c *conn) wait(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- c.sess.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			err = errors.New("the connection closed")
		}
		if c.proc != nil {
			if perr := c.proc.exitErr(); perr != nil {
				err = perr
			}
		}
		return err
	case <-ctx.Done():
		_ = c.sess.Close()
		<-done
		return ctx.Err()
	}
}

func (c *conn) close() {
	_ = c.sess.Close()
	if c.proc != nil {
		c.proc.stop()
	}
}

// connect starts (or reaches) the server and initialises the session
// within the startup timeout, then lists its tools.
func (s *server) connect(ctx context.Context) (*conn, error) {
	sctx, cancel := context.WithTimeout(ctx, s.cfg.StartupTimeout())
	defer cancel()
	changed := make(chan struct{}, 1)
	client := sdk.NewClient(&sdk.Implementation{Name: "scv", Version: version.Version}, &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			// Refreshed off the notification's goroutine (listing waits
			// for a response the same connection delivers), by the
			// connection's refresher (run). One pending signal is
			// enough: a refresh lists everything.
			select {
			case changed <- struct{}{}:
			default:
			}
		},
		ProgressNotificationHandler: s.onProgress,
	})
	var (
		transport sdk.Transport
		proc      *process
		err       error
	)
	if s.cfg.Stdio() {
		proc, err = s.startProcess()
		if err != nil {
			return nil, err
		}
		transport = &sdk.IOTransport{Reader: proc.stdout, Writer: proc.stdin}
	} else {
		hc, herr := s.httpClient()
		if herr != nil {
			return nil, herr
		}
		transport = &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}
	}
	sess, err := client.Connect(sctx, transport, nil)
	if err != nil {
		if proc != nil {
			proc.stop()
			if perr := proc.exitErr(); perr != nil {
				err = fmt.Errorf("%w (%v)", perr, err)
			}
		}
		if sctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("it did not answer initialize within startup_timeout_seconds = %d", s.cfg.StartupTimeoutSeconds)
		}
		return nil, err
	}
	c := &conn{sess: sess, proc: proc, changed: changed}
	s.mu.Lock()
	s.sess = sess
	s.mu.Unlock()
	if err := s.list(sctx, sess); err != nil {
		s.mu.Lock()
		s.sess = nil
		s.mu.Unlock()
		c.close()
		if sctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("it did not list its tools within startup_timeout_seconds = %d", s.cfg.StartupTimeoutSeconds)
		}
		return nil, err
	}
	return c, nil
}

// refresher lists the tools again after each
// notifications/tools/list_changed of c, until ctx ends.
func (s *server) refresher(ctx context.Context, c *conn) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.changed:
			s.refresh(ctx, c.sess)
		}
	}
}

// refresh lists sess's tools, bounded by the startup timeout. A list cut
// short by the connection's end is not worth a warning.
func (s *server) refresh(ctx context.Context, sess *sdk.ClientSession) {
	lctx, cancel := context.WithTimeout(ctx, s.cfg.StartupTimeout())
	defer cancel()
	if err := s.list(lctx, sess); err != nil && ctx.Err() == nil {
		s.log.Warn("Could not list the MCP server's tools after it said they changed", "err", err)
	}
}

// list fetches the server's tools and offers those that pass.
func (s *server) list(ctx context.Context, sess *sdk.ClientSession) error {
	var listed []*sdk.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("listing its tools: %w", err)
		}
		listed = append(listed, t)
	}
	offered, skipped := adaptTools(s, listed)
	for _, w := range skipped {
		s.log.Warn("MCP tool not offered", "why", w)
	}
	s.mu.Lock()
	if s.sess == sess {
		s.tools, s.skipped = offered, skipped
	}
	s.mu.Unlock()
	s.m.gen.Add(1)
	return nil
}

func (s *server) clearTools() {
	s.mu.Lock()
	s.tools, s.sess = nil, nil
	s.mu.Unlock()
	s.m.gen.Add(1)
}

func (s *server) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	p := req.Params
	tok, ok := p.ProgressToken.(string)
	if !ok {
		return
	}
	s.progressMu.Lock()
	f := s.progress[tok]
	s.progressMu.Unlock()
	if f == nil {
		return
	}
	line := p.Message
	switch {
	case line == "" && p.Total > 0:
		line = fmt.Sprintf("%g/%g", p.Progress, p.Total)
	case line == "":
		line = fmt.Sprintf("%g", p.Progress)
	}
	f(line)
}

func (s *server) watchProgress(tok string, f func(string)) (stop func()) {
	if f == nil {
		return func() {}
	}
	s.progressMu.Lock()
	s.progress[tok] = f
	s.progressMu.Unlock()
	return func() {
		s.progressMu.Lock()
		delete(s.progress, tok)
		s.progressMu.Unlock()
	}
}

// httpClient returns a client that adds the configured headers, with
// values that name variables resolved now (an unset one is an error that
// names the variable).
func (s *server) httpClient() (*http.Client, error) {
	h := http.Header{}
	for _, k := range slices.Sorted(maps.Keys(s.cfg.Headers)) {
		v, err := config.ResolveValue(s.cfg.Headers[k], s.m.opts.Env)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		h.Set(k, v)
	}
	return &http.Client{Transport: headerTransport{h: h, base: http.DefaultTransport}}, nil
}

type headerTransport struct {
	h    http.Header
	base http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// process is a stdio server's process tree.
type process struct {
	cmd    *exec.Cmd
	tag    string
	stdin  io.WriteCloser
	stdout io.ReadCloser
	log    *slog.Logger

	done    chan struct{} // closed once cmd.Wait returned
	waitErr error         // set before done is closed
	stderr  sync.WaitGroup
	once    sync.Once
}

// environ is a stdio server's environment: the allow-list of delegated
// CLIs (shared/childenv) plus HOME, then the server's env, whose values
// may name the server process's variables.
func (s *server) environ() ([]string, error) {
	env := childenv.Filter(s.m.opts.Environ, "HOME")
	for _, k := range slices.Sorted(maps.Keys(s.cfg.Env)) {
		v, err := config.ResolveValue(s.cfg.Env[k], s.m.opts.Env)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}

func (s *server) startProcess() (*process, error) {
	env, err := s.environ()
	if err != nil {
		return nil, err
	}
	path, err := exec.LookPath(s.cfg.Command)
	if err != nil {
		return nil, fmt.Errorf("cannot start %q: %w", s.cfg.Command, err)
	}
	cmd := exec.Command(path, s.cfg.Args...)
	cmd.Env = env
	cmd.Dir = s.m.opts.Dir
	if s.cfg.Cwd != "" {
		cmd.Dir = s.cfg.Cwd
		if !filepath.IsAbs(cmd.Dir) && s.m.opts.Dir != "" {
			cmd.Dir = filepath.Join(s.m.opts.Dir, cmd.Dir)
		}
	}
	p := &process{cmd: cmd, tag: "mcp-" + uuid.NewString(), done: make(chan struct{}), log: s.log}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if p.stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := procgroup.StartService(cmd, p.tag); err != nil {
		return nil, fmt.Errorf("cannot start %q: %w", s.cfg.Command, err)
	}
	// stderr is the server's log: each line goes to SCV's log at debug
	// level (bounded per line), and is drained so the server never blocks.
	p.stderr.Go(func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(make([]byte, 0, 4096), 64<<10)
		for sc.Scan() {
			p.log.Debug("MCP server stderr", "line", sc.Text())
		}
		_, _ = io.Copy(io.Discard, errPipe)
	})
	go func() {
		// The pipes are read to EOF before Wait, as os/exec requires.
		p.stderr.Wait()
		p.waitErr = cmd.Wait()
		procgroup.Release(cmd.Process.Pid)
		close(p.done)
	}()
	return p, nil
}

// exitErr describes how the process ended, or nil while it runs.
func (p *process) exitErr() error {
	select {
	case <-p.done:
	case <-time.After(100 * time.Millisecond):
		return nil
	}
	if p.waitErr == nil {
		return errors.New("the program exited with status 0")
	}
	return fmt.Errorf("the program ended: %w", p.waitErr)
}

// stop closes stdin (the protocol's shutdown for stdio), waits a grace,
// then TERMs and KILLs the group and every process carrying the tag.
func (p *process) stop() {
	p.once.Do(func() {
		_ = p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(stopGrace):
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			}
		}
		// Whatever the server started and left behind (npx's node child).
		proctag.Kill(p.tag)
		select {
		case <-p.done:
		case <-time.After(stopGrace):
			// A process out of reach (it dropped the tag and left the
			// group) holds stderr: the waiter goroutine ends when it does.
			p.log.Warn("An MCP server's stderr is still held open after it was stopped")
		}
	})
}
