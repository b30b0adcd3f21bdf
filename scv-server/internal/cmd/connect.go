package cmd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/shared/cli"

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
func rawRelay(c *net.UnixConn, in io.Reader, out io.Writer) error {
	defer c.Close()
	go func() {
		_, _ = io.Copy(c, in)
		_ = c.CloseWrite() // the end of input: the daemon detaches us
	}()
	if _, err := io.Copy(out, c); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("relaying the daemon's output: %w", err)
	}
	return nil
}

// throughDaemon relays a JSON-RPC dialect (ACP, the App Server) between
// stdio and the running daemon: the connection's first line, preamble,
// asks for the dialect. It reports false, and nothing is relayed, when no
// daemon runs: the caller serves the client itself.
func throughDaemon(stdio IO, log *slog.Logger, preamble, dialect string) (bool, error) {
	home, err := paths.Home(stdio.Env)
	if err != nil {
		return true, &cli.UsageError{Err: err}
	}
	if _, err := daemonfile.Running(home); err != nil {
		log.Info("No daemon runs; serving "+dialect+" in this process", "reason", err)
		return false, nil
	}
	c, err := unix.Dial(paths.SocketFile(home), 5*time.Second)
	if err != nil {
		log.Warn("The daemon runs but its socket refused the connection; serving "+dialect+" in this process", "err", err)
		return false, nil
	}
	if _, err := c.Write([]byte(preamble + "\n")); err != nil {
		_ = c.Close()
		return true, fmt.Errorf("asking the daemon for %s: %w", dialect, err)
	}
	return true, rawRelay(c.(*net.UnixConn), stdio.In, stdio.Out)
}
