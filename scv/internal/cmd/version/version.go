// Package version is `scv version`.
package version

import (
	"fmt"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/version"
	"github.com/spf13/cobra"
)

// Line is what `scv version` and `scv --version` print: the release version
// and the protocol version scv speaks, so a bug report names both.
func Line() string {
	return fmt.Sprintf("scv %s (protocol %d)", version.Version, protocol.Latest)
}

// NewCmdVersion returns the version command.
func NewCmdVersion(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the scv version",
		Args:  cli.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(f.IO.Out, Line())
			return err
		},
	}
}
