package cmd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/shared/cli"

	"github.com/scv-cli/scv/scv-server/internal/transport/unix"
	"github.com/scv-cli/scv/shared/paths"
)

// newCmdConnect is `scv-server connect`: a relay between standard input
// and output and the daemon's socket, so a client built to run
// `scv-server --stdio` as a child (the TUI) talks to the daemon unchanged.
// The end of input half-closes the connection: the daemon detaches the
// client (its sessions go on) and closes its side, which ends the relay.
func newCmdConnect(stdio IO) *cobra.Command {
	return &cobra.Command{
		Use:   "connect",
		Short: "Relay the protocol between stdin/stdout and the running daemon's socket",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			home, err := paths.Home(stdio.Env)
			if err != nil {
				return &cli.UsageError{Err: err}
			}
			c, err := unix.Dial(paths.SocketFile(home), 5*time.Second)
			if err != nil {
				return err
			}
			return relay(c.(*net.UnixConn), stdio.In, stdio.Out)
		},
	}
}

// relay copies in to c and c to out until the daemon closes the
// connection. A read blocked on the real stdin after that is left to the
// process exit.
func relay(c *net.UnixConn, in io.Reader, out io.Writer) error {
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
