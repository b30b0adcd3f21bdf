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
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/server"
	"github.com/scv-cli/scv/scv-server/internal/transport/unix"
	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
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
	home, err := paths.Home(env)
	if err != nil {
		return fmt.Errorf("%w: %w", server.ErrConfig, err)
	}
	runDir := paths.RunDir(home)
	if err := paths.EnsureDir(runDir); err != nil {
		return err
	}
	if err := os.Chmod(runDir, unix.DirMode); err != nil {
		return fmt.Errorf("cannot make %s private (mode 0700): %w", runDir, err)
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
		Socket: ln.Path(), ProtocolVersions: [2]int{protocol.Oldest, protocol.Latest},
	}}
	if err := daemonfile.Write(home, d.info); err != nil {
		_ = ln.Close()
		return fmt.Errorf("writing %s: %w", paths.DaemonInfoFile(home), err)
	}
	defer func() { _ = daemonfile.Remove(home) }()
	log.Info("Daemon listening", "socket", ln.Path(), "pid", d.info.Pid)

	var wg sync.WaitGroup
	every := opts.ReconcileEvery
	if every <= 0 {
		every = DefaultReconcileEvery
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.housekeep(ctx, every)
	}()
	idleEvery := opts.IdleEvery
	if idleEvery <= 0 {
		idleEvery = DefaultIdleEvery
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		idle := rt.Config.Daemon.SessionIdle()
		if opts.SessionIdle > 0 {
			idle = opts.SessionIdle
		}
		d.endIdle(ctx, idleEvery, idle)
	}()

	connCtx, endConns := context.WithCancel(ctx)
	defer endConns()
	var conns sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d.acceptLoop(connCtx, ln, &conns)
	}()
	if opts.Ready != nil {
		opts.Ready(d.info)
	}

	<-ctx.Done()
	log.Info("Daemon shutting down")
	_ = ln.Close()
	endConns()
	conns.Wait()
	grace, cancel := context.WithTimeout(context.Background(), rt.Grace())
	defer cancel()
	rt.Manager.Close(grace)
	wg.Wait()
	return nil
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
			err := d.rt.ServeShared(ctx, c, d.status)
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
