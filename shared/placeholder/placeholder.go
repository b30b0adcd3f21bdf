// Package placeholder is the command line of an SCV binary whose feature has
// not landed yet. It answers --version and --help, and otherwise says
// plainly that the feature is not built and exits non-zero, so a script or a
// launcher that runs the binary cannot mistake it for a working one.
package placeholder

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/version"
)

// Command describes the binary.
type Command struct {
	// Name is the binary's name, such as "scv-tui".
	Name string
	// Short is a one-line description for --help.
	Short string
	// Long is the --help text.
	Long string
	// NotBuilt is what the binary says when asked to do its job.
	NotBuilt string
}

// Run runs the command with args and returns its exit code (the CLI
// kit's: 1, cli.Failure, when asked to do the job that is not built; 2 for
// a usage error); it is the one place an error becomes an exit code.
func (c Command) Run(args []string, out, errOut io.Writer) cli.Code {
	root := c.newRoot()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	cmd, err := root.ExecuteContextC(context.Background())
	return cli.Program{Name: c.Name}.Exit(errOut, cmd, err)
}

func (c Command) newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           c.Name,
		Short:         c.Short,
		Long:          c.Long,
		Version:       version.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cli.UsageErrorf("unknown command %q for %q", args[0], c.Name)
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error { return errors.New(c.NotBuilt) },
	}
	root.SetVersionTemplate(c.Name + " {{.Version}}\n")
	root.SetFlagErrorFunc(cli.FlagErrorFunc)
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}
