// Package cmd is the scv-tui command line. The binary is a placeholder until
// its feature lands: it answers --version and --help, and otherwise says
// plainly that it is not built yet and exits non-zero, so a script or a
// launcher that runs it cannot mistake it for a working one.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/scv-cli/scv/shared/version"
	"github.com/spf13/cobra"
)

// Code is a process exit status.
type Code int

// Exit statuses of scv-tui.
const (
	ExitOK Code = 0
	// ExitNotBuilt means the feature is not built yet.
	ExitNotBuilt Code = 1
	// ExitUsage means the command line was wrong.
	ExitUsage Code = 2
)

// ErrNotBuilt is returned when scv-tui is asked to do its job.
var ErrNotBuilt = errors.New("the terminal UI is not built yet; use `scv exec`")

// usageError marks a command-line mistake.
type usageError struct{ error }

// Main runs scv-tui with the process's arguments and returns its exit code.
func Main() Code {
	return Run(os.Args[1:], os.Stdout, os.Stderr)
}

// Run runs scv-tui with args and returns its exit code; it is the one place
// an error becomes an exit code.
func Run(args []string, out, errOut io.Writer) Code {
	root := NewCmdRoot()
	root.SetArgs(args)
	root.SetOut(out)
	root.SetErr(errOut)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(errOut, "scv-tui: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(errOut, "Run 'scv-tui --help' for usage.")
		return ExitUsage
	}
	return ExitNotBuilt
}

// NewCmdRoot returns the root command.
func NewCmdRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "scv-tui",
		Short:         "SCV's terminal UI (not built yet)",
		Long:          "scv-tui will be SCV's terminal UI, a client of scv-server. It is not built yet;\nuntil it is, `scv exec PROMPT` runs a turn headless.",
		Version:       version.Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q for %q", args[0], "scv-tui")}
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error { return ErrNotBuilt },
	}
	root.SetVersionTemplate("scv-tui {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}
