package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/cli"
)

func run(args ...string) (cli.Code, string, string) {
	var out, errOut bytes.Buffer
	code := Run(args, cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	return code, out.String(), errOut.String()
}

func TestVersionAndUsage(t *testing.T) {
	t.Parallel()
	if code, out, _ := run("--version"); code != cli.OK || !strings.HasPrefix(out, "scv-bridge ") {
		t.Fatalf("--version: code %d, stdout %q", code, out)
	}
	if code, _, errOut := run("serve"); code != cli.Usage || !strings.Contains(errOut, "Run 'scv-bridge --help' for usage.") {
		t.Fatalf("a mistyped command: code %d, stderr %q", code, errOut)
	}
}

// Not parallel: it sets SCV_HOME.
func TestRunWithoutAccountsSaysWhatToConfigure(t *testing.T) {
	home := t.TempDir()
	t.Setenv("SCV_HOME", home)
	code, _, errOut := run("run")
	want := "scv-bridge: no chat account is configured: add a [channels.feishu.<account>] table to " +
		filepath.Join(home, "config.toml")
	if code != cli.Failure || !strings.HasPrefix(errOut, want) {
		t.Fatalf("code %d, stderr %q; want %q", code, errOut, want)
	}
	cfg := "[channels.feishu.work]\napp_id = \"cli_x\"\napp_secret_env = \"SCV_TEST_UNSET_SECRET\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run("run", "--account", "home"); code != cli.Usage || !strings.Contains(errOut, `no account "home"`) {
		t.Fatalf("unknown account: code %d, stderr %q", code, errOut)
	}
}

// TestRunBadWorkspace: --cd goes through the one workspace resolver; a
// directory that is not there is a usage error naming it, before any
// account starts.
func TestRunBadWorkspace(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "gone")
	code, _, errOut := run("run", "--cd", missing)
	if code != cli.Usage || !strings.Contains(errOut, "--cd: workspace: ") || !strings.Contains(errOut, missing) {
		t.Fatalf("code %d, stderr %q", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run("run", "--cd", file); code != cli.Usage || !strings.Contains(errOut, "workspace "+file+" is not a directory") {
		t.Fatalf("a file: code %d, stderr %q", code, errOut)
	}
}
