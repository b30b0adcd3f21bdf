package channels

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/paths"
)

func runCmd(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}}
	cmd := NewCmdChannels(f, paths.MapEnv(env))
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	return out.String(), err
}

func TestListAndStatusNeverShowTheSecret(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := "[channels.feishu.work]\napp_id = \"cli_a1\"\napp_secret = \"very-secret-value\"\nowner_open_id = \"ou_me\"\n" +
		"[channels.feishu.lark]\napp_id = \"cli_b2\"\napp_secret_env = \"LARK_SECRET\"\nbase_url = \"https://open.larksuite.com\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"SCV_HOME": home, "LARK_SECRET": "also-secret"}
	out, err := runCmd(t, env, "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"feishu/lark", "feishu/work", "cli_a1", "ou_me", "$LARK_SECRET (set)", "app_secret (in the configuration file)", "(none: nobody gets tools)"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "very-secret-value") || strings.Contains(out, "also-secret") {
		t.Fatalf("list printed a secret:\n%s", out)
	}
	// A bridge serving "work" holds the flock on its store.
	db := storePath(home, "feishu", "work")
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(db, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	out, err = runCmd(t, env, "status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "bridge:   running") || !strings.Contains(out, "bridge:   never run") {
		t.Fatalf("status:\n%s", out)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if out, _ = runCmd(t, env, "status"); !strings.Contains(out, "bridge:   not running") {
		t.Fatalf("status after the bridge stopped:\n%s", out)
	}
}

func TestRefusedInDelegatedRuns(t *testing.T) {
	t.Parallel()
	_, err := runCmd(t, map[string]string{"SCV_HOME": t.TempDir(), "SCV_DELEGATION_DEPTH": "1"}, "list")
	if err == nil || !strings.Contains(err.Error(), "a delegated run may not") {
		t.Fatalf("err = %v", err)
	}
}

func TestNoAccounts(t *testing.T) {
	t.Parallel()
	out, err := runCmd(t, map[string]string{"SCV_HOME": t.TempDir()}, "list")
	if err != nil || !strings.Contains(out, "No chat account is configured") {
		t.Fatalf("%q, %v", out, err)
	}
}

func TestAddThenRemove(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	env := map[string]string{"SCV_HOME": home}
	if _, err := runCmd(t, env, "add", "work", "--app-id", "cli_a1"); err == nil {
		t.Fatal("add without --secret-env was accepted")
	}
	out, err := runCmd(t, env, "add", "work", "--app-id", "cli_a1", "--secret-env", "FEISHU_SECRET", "--owner", "ou_me", "--lark")
	if err != nil || !strings.Contains(out, "Added the Feishu account") {
		t.Fatalf("add: %q, %v", out, err)
	}
	b, _ := os.ReadFile(filepath.Join(home, "config.toml"))
	if !strings.Contains(string(b), "[channels.feishu.work]") || !strings.Contains(string(b), `base_url = "https://open.larksuite.com"`) {
		t.Fatalf("config.toml:\n%s", b)
	}
	if out, err := runCmd(t, env, "list"); err != nil || !strings.Contains(out, "$FEISHU_SECRET (not set in this shell)") {
		t.Fatalf("list: %q, %v", out, err)
	}
	if _, err := runCmd(t, env, "remove", "work"); err != nil {
		t.Fatal(err)
	}
	if out, _ := runCmd(t, env, "list"); !strings.Contains(out, "No chat account is configured") {
		t.Fatalf("after remove: %q", out)
	}
	if _, err := runCmd(t, map[string]string{"SCV_HOME": home, "SCV_DELEGATION_DEPTH": "2"}, "add", "x", "--app-id", "a", "--secret-env", "B"); err == nil {
		t.Fatal("add was allowed in a delegated run")
	}
}
