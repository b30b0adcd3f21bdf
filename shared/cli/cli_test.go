package cli

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/spf13/cobra"
)

func TestExit(t *testing.T) {
	t.Parallel()
	root := &cobra.Command{Use: "scv"}
	sub := &cobra.Command{Use: "exec"}
	root.AddCommand(sub)
	tests := []struct {
		name string
		prog Program
		cmd  *cobra.Command
		err  error
		code Code
		out  string
	}{
		{name: "ok", prog: Program{Name: "scv"}, code: OK},
		{name: "failure", prog: Program{Name: "scv"}, err: errors.New("boom"), code: Failure, out: "scv: boom\n"},
		{name: "usage", prog: Program{Name: "scv"}, cmd: sub, err: fmt.Errorf("wrapped: %w", UsageErrorf("bad %s", "flag")), code: Usage,
			out: "scv: wrapped: bad flag\nRun 'scv exec --help' for usage.\n"},
		{name: "usage without a command", prog: Program{Name: "scv agents"}, err: UsageErrorf("bad"), code: Usage, out: "scv agents: bad\n"},
		{name: "usage without a hint", prog: Program{Name: "scv-server", NoUsageHint: true}, cmd: root, err: UsageErrorf("bad"), code: Usage, out: "scv-server: bad\n"},
		{name: "interrupted", prog: Program{Name: "scv"}, err: &InterruptedError{Msg: "the turn was cancelled"}, code: Interrupted, out: "scv: the turn was cancelled\n"},
		{name: "reported", prog: Program{Name: "scv"}, err: Reported(&InterruptedError{Msg: "x"}), code: Interrupted},
		{name: "own code", prog: Program{Name: "scv-server"}, err: WithCode(Config, errors.New("bad config")), code: Config, out: "scv-server: bad config\n"},
		{name: "own code and sentences", prog: Program{Name: "scv-tui"}, err: Exitf(Failure, "it broke.\nSee %s.", "the log"), code: Failure, out: "scv-tui: it broke.\nSee the log.\n"},
		{name: "own code quiet", prog: Program{Name: "scv-tui"}, err: WithCode(Interrupted, nil), code: Interrupted},
		{name: "own code wins over usage", prog: Program{Name: "scv-tui"}, cmd: root, err: WithCode(VersionMismatch, UsageErrorf("x")), code: VersionMismatch, out: "scv-tui: x\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b bytes.Buffer
			if code := tt.prog.Exit(&b, tt.cmd, tt.err); code != tt.code {
				t.Errorf("code %d, want %d", code, tt.code)
			}
			if b.String() != tt.out {
				t.Errorf("printed %q, want %q", b.String(), tt.out)
			}
		})
	}
}

func TestReportedNil(t *testing.T) {
	t.Parallel()
	if Reported(nil) != nil {
		t.Fatal("Reported(nil) is not nil")
	}
}

func TestArgs(t *testing.T) {
	t.Parallel()
	root := &cobra.Command{Use: "scv"}
	leaf := &cobra.Command{Use: "version"}
	root.AddCommand(leaf)
	if err := NoArgs(root, []string{"exce"}); !IsUsage(err) || err.Error() != `unknown command "exce" for "scv"` {
		t.Errorf("NoArgs(root) = %v", err)
	}
	if err := NoArgs(leaf, []string{"x"}); !IsUsage(err) || err.Error() != `"scv version" takes no arguments, got "x"` {
		t.Errorf("NoArgs(leaf) = %v", err)
	}
	if err := NoArgs(leaf, nil); err != nil {
		t.Errorf("NoArgs(no args) = %v", err)
	}
	if err := ExactArgs(1, "name one")(leaf, nil); !IsUsage(err) || err.Error() != "name one" {
		t.Errorf("ExactArgs = %v", err)
	}
	if err := FlagErrorFunc(leaf, errors.New("unknown flag")); !IsUsage(err) {
		t.Errorf("FlagErrorFunc = %v", err)
	}
}
