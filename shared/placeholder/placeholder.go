// Package placeholder is the command line of an SCV binary whose feature has
// not landed yet. It answers --version and --help, and otherwise says
// plainly that the feature is not built and exits non-zero, so a script or a
// launcher that runs the binary cannot mistake it for a working one.
package placeholder

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/shared/version"
)

// Code is a process exit status.
type Code int

// Exit statuses.
const (
	ExitOK Code = 0
	// ExitNotBuilt means the feature is not built yet.
	ExitNotBuilt Code = 1
	// ExitUsage means the command line was wrong.
	ExitUsage Code = 2
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

// usageError marks a command-line mistake.
type usageError struct{ error }

// Run runs the command with args and returns its exit code; it is the one
// place an error becomes an exit code.
func (c Command) Run(args []string, out, errOut io.Writer) Code {
	root := c.newRoot()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(errOut, "%s: %v\n", c.Name, err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(errOut, "Run '%s --help' for usage.\n", c.Name)
		return ExitUsage
	}
	return ExitNotBuilt
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
				return usageError{fmt.Errorf("unknown command %q for %q", args[0], c.Name)}
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error { return errors.New(c.NotBuilt) },
	}
	root.SetVersionTemplate(c.Name + " {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}
