package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-bridge/internal/bridge"
	"github.com/scv-cli/scv/scv-bridge/internal/wechat"
	"github.com/scv-cli/scv/scv-bridge/internal/wechat/ilinktest"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/config"
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
		filepath.Join(home, "config.toml") + " or bind WeChat"
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

// Not parallel: it sets SCV_HOME.
func TestLoginWeChatStoresTheBindingPrivately(t *testing.T) {
	fs := ilinktest.New()
	defer fs.Close()
	fs.SetQRScript("wait", "scaned", "expired", "wait", "confirmed")
	home := t.TempDir()
	t.Setenv("SCV_HOME", home)
	cfg := "[channels.wechat.home]\nbase_url = \"" + fs.URL + "\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run("login", "wechat", "--account", "home")
	if code != cli.OK {
		t.Fatalf("login: code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"▀", "Scanned. Confirm", "The QR code expired; here is a fresh one.", "The account \"home\" is bound; its owner is " + ilinktest.OwnerID} {
		if !strings.Contains(out, want) {
			t.Errorf("the login's output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errOut, ilinktest.BotToken) {
		t.Fatal("the login printed the bot token")
	}
	path := filepath.Join(home, "state", "channels", "wechat", "home.json")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the credentials file: %v, %v; want mode 0600", fi, err)
	}
	creds, err := wechat.ReadCredentials(path)
	if err != nil || creds.Token != ilinktest.BotToken || creds.OwnerID != ilinktest.OwnerID || creds.BaseURL != fs.URL {
		t.Fatalf("stored %v, %v", creds, err)
	}
	t.Setenv("SCV_DELEGATION_DEPTH", "1")
	if code, _, errOut := run("login", "wechat"); code != cli.Failure || !strings.Contains(errOut, "a delegated run may not bind chat accounts") {
		t.Fatalf("a delegated login: code %d, stderr %q", code, errOut)
	}
}

func TestAccountsIncludeBoundWeChatAccounts(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, "state", "channels", "wechat")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "spare.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{}
	cfg.Channels.Feishu = map[string]config.FeishuAccount{"home": {}}
	cfg.Channels.WeChat = map[string]config.WeChatAccount{"home": {}}
	all := accounts(home, cfg)
	if fmt.Sprint(all) != "[feishu/home wechat/home wechat/spare]" {
		t.Fatalf("accounts %v", all)
	}
	if got, err := pick(all, "home"); err != nil || len(got) != 2 {
		t.Fatalf("pick(home) = %v, %v; want both channels' home", got, err)
	}
	if got, err := pick(all, "wechat/home"); err != nil || fmt.Sprint(got) != "[wechat/home]" {
		t.Fatalf("pick(wechat/home) = %v, %v", got, err)
	}
	if _, err := pick(all, "nothere"); err == nil || !strings.Contains(err.Error(), `no account "nothere"`) {
		t.Fatalf("pick(nothere) = %v", err)
	}
}

// TestRunAccountsServesWeChat: an unbound WeChat account is tried and
// fails with what to do, while a Feishu account without its secret fails
// apart; neither stops the other.
func TestRunAccountsServesWeChat(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := &config.Config{}
	cfg.Channels.Feishu = map[string]config.FeishuAccount{"work": {AppID: "cli_x", AppSecretEnv: "SCV_TEST_UNSET_SECRET"}}
	cfg.Channels.WeChat = map[string]config.WeChatAccount{"home": config.DefaultWeChatAccount()}
	opts := bridge.Options{Home: home, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	err := runAccounts(context.Background(), opts, cfg, accounts(home, cfg))
	if err == nil || !strings.Contains(err.Error(), "wechat account home: the WeChat account is not bound") ||
		!strings.Contains(err.Error(), "scv channels login wechat --account home") || !strings.Contains(err.Error(), "feishu account work") {
		t.Fatalf("runAccounts = %v", err)
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
