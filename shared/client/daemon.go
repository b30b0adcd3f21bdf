package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/version"
)

// ErrNoDaemon is wrapped when no daemon runs for an SCV_HOME: no
// daemon.json naming a live process, or nothing listening on the socket.
var ErrNoDaemon = daemonfile.ErrNotRunning

// DaemonRunning returns the description of the daemon running for home
// (see daemonfile.Running); its error wraps ErrNoDaemon when none runs.
func DaemonRunning(home string) (daemonfile.Info, error) { return daemonfile.Running(home) }

// DialSocket connects to home's daemon socket and returns the raw
// connection, uninitialized: for a client that speaks the protocol over
// it itself (scv exec, scv-server connect). Its error wraps ErrNoDaemon
// when nothing listens there.
func DialSocket(ctx context.Context, home string) (*net.UnixConn, error) {
	var d net.Dialer
	sock := paths.SocketFile(home)
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("%w: nothing listens on %s", ErrNoDaemon, sock)
		}
		return nil, fmt.Errorf("connecting to the daemon on %s: %w", sock, err)
	}
	return c.(*net.UnixConn), nil
}

// HalfCloser is a socket stream whose Close closes only the write side:
// the daemon reads the end of input and closes its side, so what it sent
// before can still be read to the end. A stdio server's end of input ends
// it; a daemon connection's end detaches it (docs/daemon.md).
type HalfCloser struct{ *net.UnixConn }

// Close closes the write side of the connection.
func (h HalfCloser) Close() error {
	if err := h.CloseWrite(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// DaemonConn is one initialized protocol-4 connection to the daemon, for
// requests (daemon.status, session.list) and for attaching to sessions:
// after Attach, Read returns the replayed and then the live events.
type DaemonConn struct {
	*Conn
	uc *net.UnixConn
	id int
	// Instance is the instance of the daemon that answered (daemon.json's
	// instance, read once the handshake succeeded; empty when it could
	// not be read). Event numbers belong to an instance: a restarted
	// daemon numbers its sessions' events anew.
	Instance string
}

// DialDaemon connects to home's daemon and initializes the connection
// with protocol 4 as client name. The context's deadline bounds the dial
// and the handshake only.
func DialDaemon(ctx context.Context, home, name string) (*DaemonConn, error) {
	uc, err := DialSocket(ctx, home)
	if err != nil {
		return nil, err
	}
	c := &DaemonConn{Conn: NewConn(uc, 0), uc: uc}
	if dl, ok := ctx.Deadline(); ok {
		_ = uc.SetDeadline(dl)
	}
	ev, err := c.Request(&protocol.Initialize{ProtocolVersion: protocol.Version4, Client: protocol.ClientInfo{Name: name, Version: version.Version}})
	if err == nil {
		if _, ok := ev.(*protocol.Initialized); !ok {
			err = fmt.Errorf("the daemon answered initialize with %s", ev.Kind())
		}
	}
	if err != nil {
		_ = uc.Close()
		return nil, err
	}
	_ = uc.SetDeadline(time.Time{})
	// The daemon writes daemon.json before it accepts connections, so
	// the file read after a handshake names the instance that answered.
	if info, err := daemonfile.Read(home); err == nil {
		c.Instance = info.Instance
	}
	return c, nil
}

// Close closes the connection (which detaches its sessions).
func (c *DaemonConn) Close() error { return c.uc.Close() }

// Socket returns the connection's socket, for a client that half-closes
// it or bounds its reads itself.
func (c *DaemonConn) Socket() *net.UnixConn { return c.uc }

// SetDeadline bounds the reads and writes of the connection (see
// net.Conn); the zero time removes the bound.
func (c *DaemonConn) SetDeadline(t time.Time) error { return c.uc.SetDeadline(t) }

// Request sends m with a fresh request id and returns the first event
// that answers it. Events that do not answer it (another session's) are
// skipped. An error event for it, or a fatal one, is returned as an error.
func (c *DaemonConn) Request(m protocol.ClientMessage) (protocol.Event, error) {
	c.id++
	id := strconv.Itoa(c.id)
	if !setRequestID(m, id) {
		return nil, fmt.Errorf("%s is not a request this client makes to the daemon", m.Kind())
	}
	if err := c.Send(m); err != nil {
		return nil, fmt.Errorf("sending %s to the daemon: %w", m.Kind(), err)
	}
	for {
		f, err := c.Read()
		if err != nil {
			return nil, fmt.Errorf("reading the daemon's answer to %s: %w", m.Kind(), err)
		}
		if f.Event == nil {
			continue
		}
		if e, ok := f.Event.(*protocol.Error); ok && (e.RequestID == id || e.Fatal) {
			return nil, &RefusedError{Request: m.Kind(), Code: e.Code, Message: e.Message}
		}
		if requestOf(f.Event) == id {
			return f.Event, nil
		}
	}
}

// RefusedError is a request the daemon answered with an error event.
type RefusedError struct {
	Request string // the message type
	Code    protocol.ErrorCode
	Message string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("the daemon refused %s: %s (%s)", e.Request, e.Message, e.Code)
}

// Attach subscribes the connection to the open session id. With afterSeq
// set, the daemon replays the session's events numbered after it (from
// its bounded ring; SessionAttached.ReplayTruncated says some are gone)
// before the live ones; Read returns them in order.
func (c *DaemonConn) Attach(sessionID string, afterSeq *uint64) (*protocol.SessionAttached, error) {
	ev, err := c.Request(&protocol.SessionAttach{SessionID: sessionID, AfterSeq: afterSeq})
	if err != nil {
		return nil, err
	}
	a, ok := ev.(*protocol.SessionAttached)
	if !ok {
		return nil, fmt.Errorf("the daemon answered session.attach with %s", ev.Kind())
	}
	return a, nil
}

// Position is where a client is in a session's event stream: the
// daemon instance that numbered the events and the last seq it saw.
type Position struct {
	Instance string
	Seq      uint64
}

// after is the after_seq to attach with on a daemon of instance: the last
// seq seen on the same instance, and 0 (the whole ring) on a new one,
// whose events are all new to the client since the numbering restarted.
func (p Position) after(instance string) uint64 {
	if p.Instance != "" && instance != "" && instance != p.Instance {
		return 0
	}
	return p.Seq
}

// ReattachTimeout is how long a client waits for a daemon to come back
// after a planned restart ended its connection: a restart waits for
// running turns first (daemon.restart_timeout_seconds) but closes
// connections only once they ended, so what remains is the re-exec and
// the resume of the saved sessions, a few seconds at most.
const ReattachTimeout = 30 * time.Second

// Reattach connects to home's daemon again and attaches to sessionID
// after pos, retrying every interval until it succeeds or ctx ends: what
// a client does when its connection ends during a planned restart. The
// daemon comes back with the same sessions but numbers their events anew,
// so on a new instance it attaches with after_seq 0, which replays what
// the session did since the restart (SessionAttached.ReplayTruncated says
// some of it is gone from the ring). A daemon that answers without the
// session (session_not_found: it did not come back with it) ends the wait
// at once with a *RefusedError.
func Reattach(ctx context.Context, home, name, sessionID string, pos Position, interval time.Duration) (*DaemonConn, *protocol.SessionAttached, error) {
	for {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := DialDaemon(dctx, home, name)
		cancel()
		if err == nil {
			seq := pos.after(c.Instance)
			a, aerr := c.Attach(sessionID, &seq)
			if aerr == nil {
				return c, a, nil
			}
			_ = c.Close()
			var re *RefusedError
			if errors.As(aerr, &re) && re.Code == protocol.ErrSessionNotFound {
				// A restarted daemon resumes its sessions before it
				// listens: one it does not have is not coming.
				return nil, nil, fmt.Errorf("re-attaching to session %s: %w", sessionID, aerr)
			}
			err = aerr
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("re-attaching to session %s: %w (last error: %v)", sessionID, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// RestartUnderway reports whether a daemon connection that just ended was
// ended by a planned restart a client should wait out: the daemon saved
// its sessions in restart.json (removed once the next daemon resumed
// them), or a daemon runs again already. A stop (SIGTERM) or a crash
// leaves neither, and the client need not wait.
func RestartUnderway(home string) bool {
	if _, err := os.Lstat(paths.RestartFile(home)); err == nil {
		return true
	}
	_, err := daemonfile.Running(home)
	return err == nil
}

func setRequestID(m protocol.ClientMessage, id string) bool {
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
	default:
		return false
	}
	return true
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

// QueryDaemonStatus asks home's daemon for its status, within timeout.
func QueryDaemonStatus(home string, timeout time.Duration) (*protocol.DaemonStatusReported, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := DialDaemon(ctx, home, "scv-daemon-status")
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
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

// ConfiguredDaemonUse returns daemon.use from the configuration of home
// (user file and environment). A configuration that does not load gives
// DaemonNever: the client then starts a server of its own, which reports
// the problem the way it always has (exit 78, naming the file and line).
func ConfiguredDaemonUse(home string, env paths.Env) config.DaemonUse {
	cfg, _, err := config.Load(config.LoadOptions{Home: home, Env: env})
	if err != nil {
		return config.DaemonNever
	}
	return cfg.Daemon.Use
}

// ChooseDaemon decides, for daemon.use (or the flag that overrides it),
// whether a client runs its session in home's daemon: it returns the
// running daemon's description and true to attach, false to start a
// server of its own, and an error only for DaemonAlways with no daemon.
func ChooseDaemon(use config.DaemonUse, home string) (daemonfile.Info, bool, error) {
	if use == config.DaemonNever {
		return daemonfile.Info{}, false, nil
	}
	info, err := daemonfile.Running(home)
	if err == nil {
		return info, true, nil
	}
	if use == config.DaemonAlways {
		return daemonfile.Info{}, false, fmt.Errorf("daemon.use is %q, but %w; start it with `scv daemon start`, or set daemon.use to %q", use, err, config.DaemonAuto)
	}
	return daemonfile.Info{}, false, nil
}
