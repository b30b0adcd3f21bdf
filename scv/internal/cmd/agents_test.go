package cmd

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
)

func TestAgentsExecsScvAgents(t *testing.T) {
	t.Parallel()
	var gotPath string
	var gotArgv []string
	f := &cmdutil.Factory{
		IO: &cmdutil.IOStreams{In: &bytes.Buffer{}, Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}},
		FindBinary: func(name string) (string, error) {
			if name != "scv-agents" {
				t.Fatalf("looked for %q", name)
			}
			return "/opt/scv/scv-agents", nil
		},
		Exec: func(path string, argv []string) error {
			gotPath, gotArgv = path, argv
			return nil
		},
	}
	if code := Run(f, []string{"agents", "kill", "--orphans", "--help"}); code != cli.OK {
		t.Fatalf("exit %d", code)
	}
	if gotPath != "/opt/scv/scv-agents" || !slices.Equal(gotArgv, []string{"scv-agents", "kill", "--orphans", "--help"}) {
		t.Fatalf("exec %q %q", gotPath, gotArgv)
	}
	f.FindBinary = func(string) (string, error) { return "", errors.New("scv-agents not found") }
	if code := Run(f, []string{"agents", "ps"}); code != cli.Failure {
		t.Fatalf("missing binary: exit %d", code)
	}
}
