package channels

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/paths"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestWeChatStatusShowsBindingBudgetAndHeldNeverTheToken(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFile(t, filepath.Join(home, "config.toml"), "[channels.wechat.home]\nsend_budget = 6\n\n[channels.wechat.work]\n")
	bound := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	writeFile(t, filepath.Join(home, "state", "channels", "wechat", "home.json"),
		`{"bot_token":"very-secret-token","base_url":"https://ilinkai.weixin.qq.com","ilink_user_id":"o9owner@im.wechat","bound_at":"`+bound+`"}`)
	until := time.Now().Add(90 * time.Minute).UTC().Format(time.RFC3339)
	writeFile(t, filepath.Join(home, "state", "bridge", "wechat-home.json"),
		`{"cursor":"c","context_tokens":{"o9owner@im.wechat":"ctx-secret"},"send_budget":6,"budget":{"throttled_until":"`+until+
			`","peers":{"o9owner@im.wechat":{"used":4}}},"held":{"o9owner@im.wechat":2}}`)
	// An account bound but not configured is shown too.
	writeFile(t, filepath.Join(home, "state", "channels", "wechat", "spare.json"),
		`{"bot_token":"t2","base_url":"https://ilinkai.weixin.qq.com","ilink_user_id":"o9spare@im.wechat","bound_at":"`+bound+`"}`)
	out, err := runCmd(t, map[string]string{"SCV_HOME": home}, "status")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"wechat/home\n  bound:    yes, owner o9owner@im.wechat",
		"budget:   6 messages per message from the peer",
		"throttled: WeChat refused sends",
		"sent:     4 of 6 to o9owner@im.wechat",
		"held:     2 report(s) for o9owner@im.wechat",
		"bridge:   never run",
		"wechat/spare\n  bound:    yes, owner o9spare@im.wechat",
		"wechat/work\n  bound:    no: bind it with scv channels login wechat --account work",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "very-secret-token") || strings.Contains(out, "ctx-secret") {
		t.Fatalf("status printed a token:\n%s", out)
	}
	// WeChat ended the session after the binding: not bound any more.
	writeFile(t, filepath.Join(home, "state", "bridge", "wechat-home.json"),
		`{"send_budget":6,"session_expired":"`+time.Now().UTC().Format(time.RFC3339)+`"}`)
	if out, _ = runCmd(t, map[string]string{"SCV_HOME": home}, "list"); !strings.Contains(out, "wechat/home\n  bound:    no: WeChat ended the session") {
		t.Fatalf("list after the expiry:\n%s", out)
	}
	// A credentials file others can read is refused by the bridge; status says so.
	if err := os.Chmod(filepath.Join(home, "state", "channels", "wechat", "spare.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ = runCmd(t, map[string]string{"SCV_HOME": home}, "list"); !strings.Contains(out, "wechat/spare\n  bound:    refused:") {
		t.Fatalf("list with an unsafe credentials file:\n%s", out)
	}
}

func TestLoginWeChatRunsTheBridge(t *testing.T) {
	t.Parallel()
	var gotPath string
	var gotArgv []string
	var out, errOut bytes.Buffer
	f := &cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		FindBinary: func(name string) (string, error) { return "/opt/scv/" + name, nil },
		Exec:       func(path string, argv []string) error { gotPath, gotArgv = path, argv; return nil }}
	run := func(env map[string]string, args ...string) error {
		cmd := NewCmdChannels(f, paths.MapEnv(env))
		cmd.SetArgs(args)
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		return cmd.Execute()
	}
	if err := run(map[string]string{"SCV_HOME": t.TempDir()}, "login", "wechat", "--account", "home"); err != nil {
		t.Fatal(err)
	}
	if gotPath != "/opt/scv/scv-bridge" || strings.Join(gotArgv, " ") != "scv-bridge login wechat --account home" {
		t.Fatalf("exec %s %q", gotPath, gotArgv)
	}
	gotPath = ""
	err := run(map[string]string{"SCV_HOME": t.TempDir(), "SCV_DELEGATION_DEPTH": "1"}, "login", "wechat")
	if !errors.Is(err, errDelegated) || gotPath != "" {
		t.Fatalf("a delegated login = %v (exec %q); want a refusal before anything runs", err, gotPath)
	}
	if err := run(map[string]string{"SCV_HOME": t.TempDir()}, "login", "feishu"); err == nil || !strings.Contains(err.Error(), "scv channels add") {
		t.Fatalf("login feishu = %v", err)
	}
}
