// Package daemon is `scv-server daemon`: one runtime per user and
// SCV_HOME, serving the NDJSON protocol on a Unix socket to any number of
// clients, whose sessions outlive their connections (docs/daemon.md).
//
// Goroutines, all owned by Run and joined before it returns:
//   - the accept loop, which ends when the listener is closed;
//   - one per connection (ndjson.Serve), ended by the daemon's shutdown;
//   - the housekeeper: reconcile at start and every ReconcileEvery;
//   - the idle reaper of sessions no client holds (session.Manager).
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/server"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/scv-server/internal/transport/unix"
	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/statefile"
	"github.com/scv-cli/scv/shared/version"
)

// DefaultReconcileEvery is how often the daemon reconciles delegation
// records and orphans (tools.md, "Tracking and cleanup").
const DefaultReconcileEvery = 60 * time.Second

// Options configure a daemon.
type Options struct {
	Server server.Options
	// ReconcileEvery overrides DefaultReconcileEvery (tests).
	ReconcileEvery time.Duration
	// Ready, when not nil, is called once the daemon listens and its
	// daemon.json is written.
	Ready func(daemonfile.Info)
	// IdleEvery overrides how often idle sessions are looked for
	// (DefaultIdleEvery; tests).
	IdleEvery time.Duration
	// SessionIdle overrides daemon.session_idle_seconds (tests).
	SessionIdle time.Duration
}

// DefaultIdleEvery is how often the daemon looks for sessions idle for
// daemon.session_idle_seconds.
const DefaultIdleEvery = 30 * time.Second

// Daemon is a running daemon's state that its connections and `scv daemon
// status` read.
type Daemon struct {
	rt      *server.Runtime
	log     *slog.Logger
	info    daemonfile.Info
	clients atomic.Int64
	// orphans counts the orphaned runs housekeeping stopped.
	orphans atomic.Int64
	// draining is set during a planned restart.
	draining atomic.Bool
}

// privateRunDir returns SCV_HOME with its run directory made and private
// (0700), as the socket's directory must be.
func privateRunDir(env paths.Env) (string, error) {
	home, err := paths.Home(env)
	if err != nil {
		return "", fmt.Errorf("%w: %w", server.ErrConfig, err)
	}
	runDir := paths.RunDir(home)
	if err := paths.EnsureDir(runDir); err != nil {
		return "", err
	}
	if err := os.Chmod(runDir, unix.DirMode); err != nil {
		return "", fmt.Errorf("cannot make %s private (mode 0700): %w", runDir, err)
	}
	return home, nil
}

// startHousekeeping starts the reconcile pass and the idle-session
// reaper under wg; both end with ctx.
func (d *Daemon) startHousekeeping(ctx context.Context, opts Options, wg *sync.WaitGroup) {
	every := opts.ReconcileEvery
	if every <= 0 {
		every = DefaultReconcileEvery
	}
	idleEvery := opts.IdleEvery
	if idleEvery <= 0 {
		idleEvery = DefaultIdleEvery
	}
	idle := d.rt.Config.Daemon.SessionIdle()
	if opts.SessionIdle > 0 {
		idle = opts.SessionIdle
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		d.housekeep(ctx, every)
	}()
	go func() {
		defer wg.Done()
		d.endIdle(ctx, idleEvery, idle)
	}()
}

// Run runs the daemon until ctx ends (a signal): it takes the lock, loads
// the configuration, listens, and serves. At the end it stops accepting,
// ends every connection, closes the sessions (turns get the grace period),
// and removes its socket and daemon.json.
func Run(ctx context.Context, opts Options) error {
	env := opts.Server.Env
	if env == nil {
		env = paths.OSEnv()
		opts.Server.Env = env
	}
	home, err := privateRunDir(env)
	if err != nil {
		return err
	}
	lock, err := acquire(paths.DaemonLockFile(home))
	if err != nil {
		return err
	}
	defer lock.release()

	rt, err := server.New(opts.Server)
	if err != nil {
		return err
	}
	log := rt.Logger().With("component", "daemon")
	rt.EnableSubreaper()

	ln, err := unix.Listen(paths.SocketFile(home))
	if err != nil {
		return err
	}
	d := &Daemon{rt: rt, log: log, info: daemonfile.Info{
		Pid: os.Getpid(), Version: version.Version, StartedAt: time.Now().UTC().Truncate(time.Second),
		Socket: ln.Path(), Instance: uuid.NewString(), ProtocolVersions: [2]int{protocol.Oldest, protocol.Latest},
	}}
	// Sessions a planned restart saved are open before anyone can find
	// the daemon, so a client that re-attaches finds its session.
	d.resumeSaved(home)
	if err := daemonfile.Write(home, d.info); err != nil {
		_ = ln.Close()
		return fmt.Errorf("writing %s: %w", paths.DaemonInfoFile(home), err)
	}
	defer func() { _ = daemonfile.Remove(home) }()
	log.Info("Daemon listening", "socket", ln.Path(), "pid", d.info.Pid)

	restartSigs := make(chan os.Signal, 1)
	signal.Notify(restartSigs, SignalRestart, SignalRestartForce)
	defer signal.Stop(restartSigs)
	hkCtx, stopHousekeeping := context.WithCancel(ctx)
	defer stopHousekeeping()

	var wg sync.WaitGroup
	d.startHousekeeping(hkCtx, opts, &wg)

	connCtx, endConns := context.WithCancel(ctx)
	defer endConns()
	// The accept loop owns the connections' WaitGroup: it adds to it and,
	// once the listener is closed, waits for it, so no Add can race a
	// Wait.
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		var conns sync.WaitGroup
		d.acceptLoop(connCtx, ln, &conns)
	}()
	if opts.Ready != nil {
		opts.Ready(d.info)
	}

	restart := false
	select {
	case <-ctx.Done():
	case sig := <-restartSigs:
		restart = true
		d.drain(ctx, home, sig == SignalRestartForce)
	}
	log.Info("Daemon shutting down", "restart", restart)
	_ = ln.Close()
	endConns()
	<-acceptDone // every connection has ended
	grace, cancel := context.WithTimeout(context.Background(), rt.Grace())
	defer cancel()
	rt.Manager.Close(grace)
	rt.Close() // the MCP servers, after the sessions that use them
	stopHousekeeping()
	wg.Wait()
	if restart {
		return ErrRestart
	}
	return nil
}

// Signals of a planned restart: SIGUSR2 waits for running turns (up to
// daemon.restart_timeout_seconds), SIGUSR1 does not (`--force`).
const (
	SignalRestart      = syscall.SIGUSR2
	SignalRestartForce = syscall.SIGUSR1
)

// ErrRestart is Run's answer to a planned restart: the daemon has saved
// its sessions in restart.json, closed them, released its socket and
// lock, and wants the caller to exec the daemon again.
var ErrRestart = errors.New("planned restart")

// restartFile is restart.json: the sessions the next daemon resumes.
type restartFile struct {
	WrittenAt time.Time      `json:"written_at"`
	Sessions  []session.Open `json:"sessions"`
}

// drain is the first half of a planned restart: no turn starts any more
// (new prompts are queued), the running turns get up to
// daemon.restart_timeout_seconds to finish (none with force), and the open
// sessions are listed in restart.json. What is still running is cancelled
// by the shutdown that follows; its prompt is in the session's log.
func (d *Daemon) drain(ctx context.Context, home string, force bool) {
	d.draining.Store(true)
	d.rt.Manager.Drain()
	wait := d.rt.Config.Daemon.RestartTimeout()
	if force {
		wait = 0
	}
	d.log.Info("Planned restart: waiting for running turns", "limit", wait)
	wctx, cancel := context.WithTimeout(ctx, wait)
	finished := d.rt.Manager.WaitTurns(wctx)
	cancel()
	if !finished {
		d.log.Warn("Planned restart: turns still running are cancelled", "waited", wait)
	}
	rf := restartFile{WrittenAt: time.Now().UTC(), Sessions: d.rt.Manager.OpenSessions()}
	data, err := json.MarshalIndent(rf, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(paths.RestartFile(home), append(data, '\n'), 0o600)
	}
	if err != nil {
		d.log.Error("Planned restart: could not save the open sessions; they can still be resumed one by one", "err", err)
	}
}

// resumeSaved reopens the sessions a planned restart saved, then removes
// restart.json. A session that does not resume is logged and skipped: it
// stays stored.
func (d *Daemon) resumeSaved(home string) {
	file := paths.RestartFile(home)
	data, err := statefile.ReadFile(filepath.Dir(file), filepath.Base(file), 4<<20, statefile.NoLinks)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	defer func() {
		if err := os.Remove(file); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("Could not remove restart.json", "err", err)
		}
	}()
	var rf restartFile
	if err == nil {
		err = json.Unmarshal(data, &rf)
	}
	if err != nil {
		d.log.Error("Could not read the sessions of the planned restart; resume them one by one", "file", file, "err", err)
		return
	}
	for _, o := range rf.Sessions {
		v := max(o.Version, protocol.Version2)
		s, err := d.rt.Manager.Start(session.StartOptions{Cwd: o.Cwd, Resume: o.SessionID, ProtocolVersion: v, Policy: o.Policy})
		if err != nil {
			d.log.Warn("Could not resume a session after the restart; it stays stored", "session", o.SessionID, "err", err)
			continue
		}
		// A resumed session's queued prompts wait paused; after a planned
		// restart they go on as they would have.
		if !o.Paused {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := s.Pause(ctx, "", false); err != nil {
				d.log.Warn("Could not resume the queue of a session", "session", o.SessionID, "err", err)
			}
			cancel()
		}
		d.log.Info("Resumed a session after the restart", "session", o.SessionID, "queued", len(s.Queue()))
	}
}

// acceptLoop serves each connection on its own goroutine until the
// listener is closed.
func (d *Daemon) acceptLoop(ctx context.Context, ln *unix.Listener, conns *sync.WaitGroup) {
	for {
		c, err := ln.Accept()
		var refused *unix.RefusedError
		switch {
		case errors.As(err, &refused):
			d.log.Warn("Refused a connection of another user", "err", err)
			frame, _ := protocol.EncodeEvent(&protocol.Error{Code: protocol.ErrInvalidRequest, Fatal: true, Message: refused.Error()})
			c.Refuse(append(frame, '\n'))
			continue
		case err != nil:
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				d.log.Error("Accepting a connection failed", "err", err)
				// A persistent accept error (out of descriptors) must
				// not spin.
				select {
				case <-time.After(100 * time.Millisecond):
					continue
				case <-ctx.Done():
				}
			}
			conns.Wait()
			return
		}
		conns.Add(1)
		d.clients.Add(1)
		go func() {
			defer conns.Done()
			defer d.clients.Add(-1)
			err := d.serveConn(ctx, c)
			if err != nil && !errors.Is(err, context.Canceled) {
				d.log.Info("Connection ended", "peer_pid", c.PeerPid, "err", err)
			}
		}()
	}
}

// status is the daemon's part of daemon.status.
func (d *Daemon) status() protocol.DaemonStatusReported {
	return protocol.DaemonStatusReported{
		Pid: d.info.Pid, Version: d.info.Version, StartedAt: d.info.StartedAt.Format(time.RFC3339),
		Socket: d.info.Socket, Clients: int(d.clients.Load()), OrphansStopped: d.orphans.Load(),
		Draining: d.draining.Load(),
	}
}

// endIdle ends the sessions idle for idle, every tick, until ctx ends.
func (d *Daemon) endIdle(ctx context.Context, every, idle time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.rt.Manager.EndIdle(idle)
		}
	}
}

// housekeep reconciles at start and every tick until ctx ends.
func (d *Daemon) housekeep(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n := d.rt.Housekeep(ctx); n > 0 {
			d.orphans.Add(int64(n))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
