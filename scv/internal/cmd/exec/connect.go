package exec

import (
	"context"
	"net"
	"os"
	"time"

	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
)

// server is what a run speaks the protocol over: the stdio of its own
// scv-server child, or the daemon's socket (--daemon).
type server struct {
	stream interface {
		Read([]byte) (int, error)
		Write([]byte) (int, error)
		Close() error
	}
	// stop ends the connection (and the child), waiting at most grace.
	stop func(grace time.Duration) error
	kill func()
	// release frees what stop left for the reader to finish with; it
	// runs once the reader has ended.
	release func()
	// daemon is set for the daemon's socket: its end is not a server
	// process's exit, and the session outlives it. home is then the
	// daemon's SCV_HOME and instance the instance that answered (its
	// events' numbering).
	daemon   bool
	home     string
	instance string
}

// connect returns the run's server: the daemon's socket when daemon.use
// (or --daemon) says so and a daemon runs, else a new `scv-server --stdio`
// child.
func connect(opts *Options) (*server, error) {
	if opts.NoDaemon {
		return startOwn(opts)
	}
	home, err := paths.Home(paths.OSEnv())
	if err != nil {
		return nil, err
	}
	use := config.DaemonAuto
	if !opts.Daemon {
		use = client.ConfiguredDaemonUse(home, paths.OSEnv())
	}
	// A run in the daemon continues the workspace's newest session there
	// (attaching to it when it is open) and passes --approval-policy in
	// its session.start (protocol 4); see run.continueSession.
	if info, ok, err := client.ChooseDaemon(use, home); err != nil {
		return nil, err
	} else if ok {
		return dialDaemon(home, info.Instance)
	}
	return startOwn(opts)
}

// startOwn starts the run's own `scv-server --stdio`.
func startOwn(opts *Options) (*server, error) {
	path, err := opts.ServerPath()
	if err != nil {
		return nil, err
	}
	args := []string{"--stdio"}
	if opts.ApprovalPolicy != "" {
		args = append(args, "--approval-policy", opts.ApprovalPolicy)
	}
	// The server's log is for -v (or SCV_LOG_LEVEL); what the user must
	// know of the configuration comes in session.started's warnings.
	switch {
	case opts.Verbose:
		args = append(args, "--log-level", "info")
	case os.Getenv("SCV_LOG_LEVEL") == "":
		args = append(args, "--log-level", "error")
	}
	p, err := client.Start(client.Command{Path: path, Args: args, Stderr: opts.IO.ErrOut})
	if err != nil {
		return nil, err
	}
	return &server{
		stream:  p.Stream(),
		stop:    func(grace time.Duration) error { return p.Stop(context.Background(), grace) },
		kill:    p.KillGroup,
		release: func() {},
	}, nil
}

// dialDaemon connects to the daemon's socket (shared/client).
func dialDaemon(home, instance string) (*server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	uc, err := client.DialSocket(ctx, home)
	if err != nil {
		return nil, err
	}
	return daemonServer(uc, home, instance), nil
}

// daemonServer is a run's server over a daemon connection. Closing the
// stream half-closes the connection: the daemon reads the end of input
// and closes its side, detaching the run from its session, which the
// daemon keeps (its turn, if one still runs after turn.cancel, goes on).
func daemonServer(uc *net.UnixConn, home, instance string) *server {
	return &server{
		stream: client.HalfCloser{UnixConn: uc},
		stop: func(grace time.Duration) error {
			_ = uc.CloseWrite()
			// The reader ends when the daemon closes its side; the
			// deadline bounds the wait for that.
			_ = uc.SetReadDeadline(time.Now().Add(grace))
			return nil
		},
		kill:     func() { _ = uc.Close() },
		release:  func() { _ = uc.Close() },
		daemon:   true,
		home:     home,
		instance: instance,
	}
}
