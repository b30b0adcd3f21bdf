package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/output"
	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/proctag"
	"github.com/scv-cli/scv/shared/statefile"
)

// server is one live ACP server process and its one ACP session: the
// conversation it serves.
type server struct {
	b *backend
	// key names the server in the Runner and in results (CLISession): the
	// delegation handle of the call that started it, which is also its
	// record's name and its processes' tag.
	key  string
	cmd  *exec.Cmd
	in   io.WriteCloser
	conn *acpsdk.ClientSideConnection
	// session is the ACP session id; cwd where it runs.
	session acpsdk.SessionId
	cwd     string
	// client answers the agent's requests and holds the running turn.
	client *client
	// done closes when the process has exited and its pipes are drained.
	done chan struct{}
	// ended closes once the process has exited, its pipes are drained and
	// waitErr is set: before done, whose collection scans /proc and is
	// slow on a loaded machine.
	ended  chan struct{}
	stderr lockedTail

	stopOnce sync.Once
	stopping chan struct{}

	mu      sync.Mutex
	rec     records.Record
	options []acpsdk.SessionConfigOption // the session's config options, latest
	marked  bool                         // a conversation marker names session
	// collected is set once the exited process's record is gone; killed
	// when `scv agents kill` had asked for the stop.
	collected, killed bool
	// waitErr is how the process ended; a caller that stopped waiting for
	// done may read it while the collector writes it, hence under mu.
	waitErr error
	// idle shuts the server down after Options.Idle between turns.
	idle *time.Timer
}

// lockedTail is a stderr tail the copier writes while a turn reads it.
type lockedTail struct {
	mu sync.Mutex
	t  output.Tail
}

func (l *lockedTail) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.t.Write(b)
}

func (l *lockedTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimRight(l.t.String(), "\n")
}

func (l *lockedTail) total() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.t.Total()
}

// startError is why a server could not serve a new conversation, with the
// kind the fallback decision reads.
type startError struct {
	kind delegate.ErrorKind
	msg  string
	// killed is set when `scv agents kill` stopped the server meanwhile.
	killed bool
}

func (e *startError) Error() string { return e.msg }

// env returns the server's environment for call: the agent's private
// environment, the full-permissions variables, a key configured for the
// agent, and the delegation chain.
func (b *backend) env(call delegate.Call) ([]string, error) {
	var extra []string
	if b.fullPermissions() {
		extra = append(extra, b.a.ACP.FullEnv...)
	}
	if kv, ok := b.configuredKey(); ok {
		extra = append(extra, kv)
	}
	return b.r.opts.AgentEnv(b.a, call, extra...)
}

// start starts the ACP server of a new conversation and opens its
// session: initialize, session/new (with authenticate when the agent
// asks for sign-in through a configured variable), the full-permissions
// mode. On failure nothing is left running.
func (b *backend) start(ctx context.Context, call delegate.Call) (*server, error) {
	exe, err := b.a.LookupACP(b.r.opts.Env)
	if err != nil {
		return nil, &startError{kind: delegate.ErrorUnavailable, msg: err.Error()}
	}
	if err := b.a.EnsureDirs(b.r.opts.Home); err != nil {
		return nil, &startError{kind: delegate.ErrorNone, msg: fmt.Sprintf("cannot prepare the private home of %s: %v", b.a.Name, err)}
	}
	env, err := b.env(call)
	if err != nil {
		return nil, &startError{kind: delegate.ErrorNone, msg: fmt.Sprintf("cannot build the environment of %s: %v", b.a.Name, err)}
	}
	s, err := b.spawn(exe, env, call)
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
	err = s.open(hctx, call, env)
	timedOut := errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if err != nil {
		s.shutdown()
		var se *startError
		if errors.As(err, &se) && s.killRequested() {
			se.killed = true
		}
		if timedOut {
			return nil, &startError{kind: delegate.ErrorUnavailable, msg: fmt.Sprintf(
				"the ACP server of %s did not complete its handshake within %s (%v); check that %s starts on its own", b.a.Product, HandshakeTimeout, err, exe)}
		}
		return nil, err
	}
	if err := b.r.add(s); err != nil {
		s.shutdown()
		return nil, &startError{kind: delegate.ErrorNone, msg: err.Error()}
	}
	return s, nil
}

// spawn starts the server process with pipes, records it, and starts the
// goroutine that collects it when it exits.
func (b *backend) spawn(exe string, env []string, call delegate.Call) (*server, error) {
	cmd := exec.Command(exe, b.a.ACPArgs(b.fullPermissions())...)
	cmd.Dir, cmd.Env = call.Dir, env
	s := &server{b: b, key: call.Handle, cmd: cmd, cwd: call.Dir, done: make(chan struct{}), ended: make(chan struct{}), stopping: make(chan struct{})}
	s.stderr.t.Max = StderrTail
	var err error
	if s.in, err = cmd.StdinPipe(); err != nil {
		return nil, &startError{kind: delegate.ErrorNone, msg: err.Error()}
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, &startError{kind: delegate.ErrorNone, msg: err.Error()}
	}
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, &startError{kind: delegate.ErrorNone, msg: err.Error()}
	}
	if err := procgroup.StartService(cmd, call.Handle); err != nil {
		return nil, &startError{kind: delegate.ErrorUnavailable, msg: fmt.Sprintf("the ACP server of %s could not be started (%s): %v", b.a.Product, exe, err)}
	}
	s.client = newClient(s)
	s.conn = acpsdk.NewClientSideConnection(s.client, s.in, out)
	s.conn.SetLogger(b.r.log.With("acp", b.a.Name, "handle", call.Handle))
	s.record(call)
	var copied sync.WaitGroup
	copied.Go(func() { _, _ = io.Copy(&s.stderr, errPipe) })
	go func() {
		// The pipes are read to EOF before Wait, as os/exec requires;
		// stdout belongs to the SDK's reader, which ends at EOF too.
		copied.Wait()
		<-s.conn.Done()
		err := cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(s.ended)
		procgroup.Release(cmd.Process.Pid)
		s.collect()
		close(s.done)
	}()
	return s, nil
}

// record writes the server's delegation record.
func (s *server) record(call delegate.Call) {
	owner, err := records.Self()
	if err != nil {
		s.b.r.log.Warn("delegation record without owner identity", "handle", s.key, "err", err)
	}
	proc, err := records.ProcessOf(s.cmd.Process.Pid)
	if err != nil {
		proc = records.Process{PID: s.cmd.Process.Pid}
	}
	s.mu.Lock()
	s.rec = records.Record{
		Handle: s.key, Agent: s.b.a.Name, Session: call.SessionID, Cwd: call.Dir, Depth: call.Depth + 1,
		AgentProcess: proc, Owner: owner, StartedUnix: time.Now().Unix(),
		Conversation: call.Conversation, Turn: call.Turn, Background: call.Background,
	}
	s.writeRecordLocked()
	s.mu.Unlock()
}

// writeRecordLocked stores s.rec, keeping a kill request `scv agents
// kill` wrote meanwhile. s.mu must be held.
func (s *server) writeRecordLocked() {
	home := s.b.r.opts.Home
	if old, err := records.Read(home, s.key); err == nil && old.KillRequestedUnix != 0 {
		s.rec.KillRequestedUnix = old.KillRequestedUnix
	}
	if err := records.Write(home, s.rec); err != nil {
		s.b.r.log.Warn("cannot write the delegation record", "handle", s.key, "err", err)
	}
}

// turnStarted records that a turn of the conversation runs.
func (s *server) turnStarted(call delegate.Call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	if s.collected {
		return
	}
	s.rec.Turn, s.rec.Conversation, s.rec.Background, s.rec.IdleSinceUnix = call.Turn, call.Conversation, call.Background, 0
	s.writeRecordLocked()
}

// turnEnded records that the server waits between turns.
func (s *server) turnEnded() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.collected {
		return
	}
	s.rec.IdleSinceUnix, s.rec.Background = time.Now().Unix(), false
	s.writeRecordLocked()
	if d := s.b.r.opts.Idle; d > 0 {
		s.idle = time.AfterFunc(d, func() { s.b.r.Forget(s.key) })
	}
}

// exitErr is how the process ended, nil while it runs or when it
// exited cleanly.
func (s *server) exitErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waitErr
}

// killRequested reports whether `scv agents kill` stopped the server:
// known once it has been collected, and read from its record before that
// (collecting can take a while on a loaded machine, and the caller does
// not wait for it for long).
func (s *server) killRequested() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.collected {
		return s.killed
	}
	rec, err := records.Read(s.b.r.opts.Home, s.key)
	return err == nil && rec.KillRequestedUnix != 0
}

// collect runs once the process has exited: it removes the record and
// the conversation marker and forgets the server, so a server that exits
// between turns drops out of `scv agents ps` at once.
func (s *server) collect() {
	s.b.r.drop(s)
	// Whatever the server started and left behind (node's children).
	proctag.Kill(s.key)
	home := s.b.r.opts.Home
	s.mu.Lock()
	defer s.mu.Unlock()
	s.collected = true
	if rec, err := records.Read(home, s.key); err == nil && rec.KillRequestedUnix != 0 {
		s.killed = true
	}
	if err := records.Remove(home, s.key); err != nil {
		s.b.r.log.Warn("cannot remove the delegation record", "handle", s.key, "err", err)
	}
	if s.marked {
		if err := records.UnmarkConversation(home, string(s.session)); err != nil {
			s.b.r.log.Warn("cannot unmark the conversation", "handle", s.key, "err", err)
		}
		s.marked = false
	}
}

// exited reports whether the process has exited.
func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// shutdown ends the server like the nested SCV: stdin closed, StopGrace,
// TERM to its group, StopGrace, KILL, then whatever still carries its tag.
// It returns once the process has been collected (or after a bound when
// something out of reach holds its pipes).
func (s *server) shutdown() {
	s.stopOnce.Do(func() {
		close(s.stopping)
		s.b.r.drop(s)
		_ = s.in.Close()
		pid := s.cmd.Process.Pid
		select {
		case <-s.done:
		case <-time.After(StopGrace):
			_ = syscall.Kill(-pid, syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(StopGrace):
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
		proctag.Kill(s.key)
		select {
		case <-s.done:
		case <-time.After(StopGrace):
			s.b.r.log.Warn("An ACP server's pipes are still held open after it was stopped", "handle", s.key)
		}
	})
}

// open runs the handshake of a new conversation on a started server.
func (s *server) open(ctx context.Context, call delegate.Call, env []string) error {
	init, err := s.conn.Initialize(ctx, acpsdk.InitializeRequest{
		ProtocolVersion:    acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{},
		ClientInfo:         &acpsdk.Implementation{Name: "scv", Version: "1"},
	})
	if err != nil {
		return s.rpcError("initialize", err)
	}
	if init.ProtocolVersion != acpsdk.ProtocolVersionNumber {
		return &startError{kind: delegate.ErrorUnavailable, msg: fmt.Sprintf("the ACP server of %s speaks ACP version %d, and SCV speaks version %d; install a release of %s that supports version %d",
			s.b.a.Product, init.ProtocolVersion, acpsdk.ProtocolVersionNumber, s.b.a.ACP.Package, acpsdk.ProtocolVersionNumber)}
	}
	req := acpsdk.NewSessionRequest{Cwd: call.Dir, McpServers: []acpsdk.McpServer{}}
	sess, err := s.conn.NewSession(ctx, req)
	if isAuthRequired(err) {
		if method, ok := envAuthMethod(init.AuthMethods, env); ok {
			// codex-acp refuses sessions until the client picks its
			// env_var method, even when the variable is set.
			if _, aerr := s.conn.Authenticate(ctx, acpsdk.AuthenticateRequest{MethodId: method}); aerr != nil {
				return s.rpcError("authenticate", aerr)
			}
			sess, err = s.conn.NewSession(ctx, req)
		}
	}
	if err != nil {
		return s.rpcError("session/new", err)
	}
	s.mu.Lock()
	s.session, s.options = sess.SessionId, sess.ConfigOptions
	s.mu.Unlock()
	s.mark()
	if s.b.fullPermissions() {
		s.selectFullMode(ctx, sess)
	}
	return nil
}

// mark leaves a conversation marker on the ACP session id, which is the
// CLI's session (Claude Code's transcript), so `scv agents gc` keeps its
// transcript while the server lives.
func (s *server) mark() {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := string(s.session)
	if records.CheckName("session", id) != nil {
		return
	}
	if err := records.MarkConversation(s.b.r.opts.Home, id, s.rec.Owner); err != nil {
		s.b.r.log.Warn("cannot mark the conversation", "handle", s.key, "err", err)
		return
	}
	s.marked = true
}

// selectFullMode selects the first full-access mode the agent advertises,
// through its mode config option when it has one, else session/set_mode.
// An agent that advertises none keeps its own mode; its permission
// requests are relayed as usual.
func (s *server) selectFullMode(ctx context.Context, sess acpsdk.NewSessionResponse) {
	if opt, ok := findOption(sess.ConfigOptions, acpsdk.SessionConfigOptionCategoryMode, "mode"); ok {
		values := optionValues(opt)
		for _, m := range adapters.FullAccessModes {
			if slices.Contains(values, m) {
				if err := s.setOption(ctx, opt.Id, m); err != nil {
					s.b.r.log.Warn("cannot select the full-access mode", "handle", s.key, "mode", m, "err", err)
				}
				return
			}
		}
	}
	if sess.Modes == nil {
		s.b.r.log.Info("the ACP agent offers no full-access mode; its permission requests are relayed", "agent", s.b.a.Name)
		return
	}
	for _, m := range adapters.FullAccessModes {
		if slices.ContainsFunc(sess.Modes.AvailableModes, func(x acpsdk.SessionMode) bool { return string(x.Id) == m }) {
			if _, err := s.conn.SetSessionMode(ctx, acpsdk.SetSessionModeRequest{SessionId: sess.SessionId, ModeId: acpsdk.SessionModeId(m)}); err != nil {
				s.b.r.log.Warn("cannot select the full-access mode", "handle", s.key, "mode", m, "err", err)
			}
			return
		}
	}
	s.b.r.log.Info("the ACP agent offers no full-access mode; its permission requests are relayed", "agent", s.b.a.Name)
}

// setOption sets a select config option and keeps the full list the
// agent returns.
func (s *server) setOption(ctx context.Context, id acpsdk.SessionConfigId, value string) error {
	s.mu.Lock()
	sid := s.session
	s.mu.Unlock()
	resp, err := s.conn.SetSessionConfigOption(ctx, acpsdk.SetSessionConfigOptionRequest{ValueId: &acpsdk.SetSessionConfigOptionValueId{
		SessionId: sid, ConfigId: id, Value: acpsdk.SessionConfigValueId(value)}})
	if err != nil {
		return err
	}
	if resp.ConfigOptions != nil {
		s.mu.Lock()
		s.options = resp.ConfigOptions
		s.mu.Unlock()
	}
	return nil
}

// isAuthRequired reports a JSON-RPC -32000 error (ACP's auth_required).
func isAuthRequired(err error) bool {
	var re *acpsdk.RequestError
	return errors.As(err, &re) && re.Code == -32000
}

// envAuthMethod returns the first env_var sign-in method whose variables
// are all set (non-empty) in env: the key is configured for the agent.
func envAuthMethod(methods []acpsdk.AuthMethod, env []string) (string, bool) {
	set := map[string]bool{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && v != "" {
			set[k] = true
		}
	}
	for _, m := range methods {
		if m.EnvVar == nil || len(m.EnvVar.Vars) == 0 {
			continue
		}
		all := true
		for _, v := range m.EnvVar.Vars {
			all = all && set[v.Name]
		}
		if all {
			return m.EnvVar.Id, true
		}
	}
	return "", false
}

// rpcError turns a failed request of the handshake into a startError:
// the agent's redacted message, signed out for -32000 or a message that
// reads like a missing sign-in, unavailable when the server is gone.
func (s *server) rpcError(method string, err error) error {
	if s.exited() || errors.Is(err, io.EOF) || isPeerGone(err) {
		<-s.endedOrTimeout()
		msg := fmt.Sprintf("the ACP server of %s exited during %s", s.b.a.Product, method)
		if tail := s.stderr.String(); tail != "" {
			msg += ": " + output.Redact(lastLine(tail))
		}
		kind := output.Classify(s.stderr.String())
		if kind == delegate.ErrorNone {
			kind = delegate.ErrorUnavailable
		}
		return &startError{kind: kind, msg: msg}
	}
	msg := fmt.Sprintf("%s failed (%s): %s", s.b.a.Product, method, redactError(err))
	kind := output.Classify(err.Error())
	if isAuthRequired(err) {
		kind = delegate.ErrorSignedOut
	}
	return &startError{kind: kind, msg: msg}
}

// endedOrTimeout is s.ended, or a channel closed after a short wait (a
// descendant may hold the pipes open), so a report of an exited server
// includes its last stderr lines and how it ended.
func (s *server) endedOrTimeout() <-chan struct{} {
	select {
	case <-s.ended:
		return s.ended
	case <-time.After(500 * time.Millisecond):
		c := make(chan struct{})
		close(c)
		return c
	}
}

// isPeerGone reports the SDK's error for a connection whose peer went
// away.
func isPeerGone(err error) bool {
	var re *acpsdk.RequestError
	if errors.As(err, &re) && re.Code == -32603 {
		d := fmt.Sprint(re.Data)
		return strings.Contains(d, "peer disconnected") || strings.Contains(d, "connection closed")
	}
	return false
}

// redactError is an agent's error message as a result may show it: its
// message and data, redacted, bounded.
func redactError(err error) string {
	var re *acpsdk.RequestError
	text := err.Error()
	if errors.As(err, &re) {
		text = re.Message
		if re.Data != nil {
			if d := strings.TrimSpace(fmt.Sprint(re.Data)); d != "" && d != "map[]" && d != re.Message {
				text += ": " + d
			}
		}
	}
	text = output.Redact(strings.ReplaceAll(text, "\n", " "))
	s, _ := output.Bound(text, maxError)
	return s
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// configuredKey returns KeyVar=<key> when the agent's key file in its
// private state directory holds an API key (ACPServer.KeyFile). The file
// is opened as a state file: never through a link, bounded.
func (b *backend) configuredKey() (string, bool) {
	s := b.a.ACP
	if s.KeyVar == "" || s.KeyFile == "" {
		return "", false
	}
	dir, err := b.a.StatePath(b.r.opts.Home)
	if err != nil || dir == "" {
		return "", false
	}
	f, err := statefile.Open(dir, s.KeyFile, os.O_RDONLY, 0, statefile.NoLinks)
	if err != nil {
		return "", false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return "", false
	}
	var fields map[string]any
	if json.Unmarshal(data, &fields) != nil {
		return "", false
	}
	key, _ := fields[s.KeyField].(string)
	if key == "" || strings.ContainsAny(key, "\x00\n") {
		return "", false
	}
	return s.KeyVar + "=" + key, true
}
