package cmd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/shared/cli"

	"github.com/scv-cli/scv/scv-server/internal/daemon"
	"github.com/scv-cli/scv/scv-server/internal/relay"
	"github.com/scv-cli/scv/scv-server/internal/transport/unix"
	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/paths"
)

// newCmdConnect is `scv-server connect`: a relay between standard input
// and output and the daemon's socket, so a client built to run
// `scv-server --stdio` as a child (the TUI) talks to the daemon unchanged
// (internal/relay). The end of input half-closes the connection: the
// daemon detaches the client (its sessions go on) and closes its side,
// which ends the relay. A planned restart does not end it: it reconnects
// and re-attaches the client's sessions.
func newCmdConnect(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "connect",
		Short: "Relay the protocol between stdin/stdout and the running daemon's socket",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := paths.Home(stdio.Env)
			if err != nil {
				return &cli.UsageError{Err: err}
			}
			c, err := unix.Dial(paths.SocketFile(home), 5*time.Second)
			if err != nil {
				return err
			}
			log, err := newLogger(stdio.ErrOut, "", stdio.Env)
			if err != nil {
				return &cli.UsageError{Err: err}
			}
			return relay.New(relay.Options{Home: home, In: stdio.In, Out: stdio.Out, Log: log}, c.(*net.UnixConn)).Run(cmd.Context())
		},
	}
}

// rawRelay copies in to c and c to out until the daemon closes the
// connection. A read blocked on the real stdin after that is left to the
// process exit.
//
// Unlike `scv-server connect` (internal/relay), it does not follow a
// planned restart: the state of a JSON-RPC dialect's connection (its
// initialize, the sessions or threads it opened, the requests in flight
// both ways) lives in the daemon's connection and ends with it, and a
// restarted daemon cannot answer a request the old one took. So when the
// daemon closes the connection before the client's input ended, the
// relay fails with a message that says why (a planned restart, or a stop
// or a crash) and how to go on: the client sees its agent exit 1, and
// the sessions stay in the daemon.
func rawRelay(home string, c *net.UnixConn, in io.Reader, out io.Writer, d jsonrpcDialect) error {
	defer c.Close()
	before := ""
	if info, err := daemonfile.Read(home); err == nil {
		before = info.Instance
	}
	var inputDone atomic.Bool
	go func() {
		if _, err := io.Copy(c, in); err == nil {
			inputDone.Store(true) // before the half-close the daemon answers
		}
		_ = c.CloseWrite() // the end of input: the daemon detaches us
	}()
	if _, err := io.Copy(out, c); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("relaying the daemon's output: %w", err)
	}
	if inputDone.Load() {
		return nil
	}
	if restarted(home, before) {
		return fmt.Errorf("the daemon closed the connection for a planned restart (scv restart or scv update), and %s does not follow a restart; its %s stay open in the daemon: start `%s` again and %s", d.name, d.what, d.command, d.resume)
	}
	return fmt.Errorf("the daemon closed the connection: it stopped or crashed; its %s are stored: start the daemon (`scv daemon start`) and `%s` again, then %s", d.what, d.command, d.resume)
}

// restarted reports whether the daemon's connection ended for a planned
// restart: restart.json is there (written before the connections end,
// removed once the next daemon resumed the sessions), or a daemon of
// another instance than the one dialed already runs. A daemon that stops
// leaves neither, even while its daemon.json is still there.
func restarted(home, instance string) bool {
	if _, err := os.Lstat(paths.RestartFile(home)); err == nil {
		return true
	}
	info, err := daemonfile.Running(home)
	return err == nil && instance != "" && info.Instance != instance
}

// jsonrpcDialect names a JSON-RPC dialect the daemon serves, for the
// relay's messages.
type jsonrpcDialect struct {
	preamble string // the connection's first line, which selects it
	name     string // "ACP"
	command  string // the command that relays it
	what     string // what it opens in the daemon
	resume   string // how a client takes them up again
}

var (
	acpDialect = jsonrpcDialect{preamble: daemon.ACPPreamble, name: "ACP", command: "scv acp --daemon",
		what: "sessions", resume: "resume them with session/resume (or session/load)"}
	appServerDialect = jsonrpcDialect{preamble: daemon.AppServerPreamble, name: "the App Server", command: "scv app-server --daemon",
		what: "threads", resume: "resume them with thread/resume"}
)

// throughDaemon relays a JSON-RPC dialect (ACP, the App Server) between
// stdio and the running daemon: the connection's first line, preamble,
// asks for the dialect. It reports false, and nothing is relayed, when no
// daemon runs: the caller serves the client itself.
func throughDaemon(stdio IO, log *slog.Logger, d jsonrpcDialect) (bool, error) {
	home, err := paths.Home(stdio.Env)
	if err != nil {
		return true, &cli.UsageError{Err: err}
	}
	if _, err := daemonfile.Running(home); err != nil {
		log.Info("No daemon runs; serving "+d.name+" in this process", "reason", err)
		return false, nil
	}
	c, err := unix.Dial(paths.SocketFile(home), 5*time.Second)
	if err != nil {
		log.Warn("The daemon runs but its socket refused the connection; serving "+d.name+" in this process", "err", err)
		return false, nil
	}
	if _, err := c.Write([]byte(d.preamble + "\n")); err != nil {
		_ = c.Close()
		return true, fmt.Errorf("asking the daemon for %s: %w", d.name, err)
	}
	return true, rawRelay(home, c.(*net.UnixConn), stdio.In, stdio.Out, d)
}
