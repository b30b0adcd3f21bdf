package config

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/paths"
)

const feishuUser = `[channels.feishu.work]
app_id = "cli_a1b2c3"
app_secret_env = "WORK_FEISHU_SECRET"
owner_open_id = "ou_7d8a6e6df7621556ce0d21922b676706"

[channels.feishu.lark]
app_id = "cli_zz"
app_secret = "plain-secret-value"
base_url = "https://open.larksuite.com"
`

func TestFeishuAccounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, feishuUser, "")
	c, _ := mustLoad(t, f, nil)
	work, lark := c.Channels.Feishu["work"], c.Channels.Feishu["lark"]
	if work.BaseURL != FeishuBaseURL || work.AppID != "cli_a1b2c3" || work.OwnerOpenID == "" || lark.BaseURL != LarkBaseURL {
		t.Fatalf("accounts: %+v %+v", work, lark)
	}
	if s := c.Sources["channels.feishu.work.base_url"]; s.Kind != SourceDefault {
		t.Fatalf("base_url source = %+v", s)
	}
	if s := c.Sources["channels.feishu.lark.app_secret"]; s.Kind != SourceUser || s.Line != 8 {
		t.Fatalf("app_secret source = %+v", s)
	}
	if _, err := ResolveFeishuSecret(work, paths.MapEnv(nil)); !errors.Is(err, ErrAPIKeyMissing) || !strings.Contains(err.Error(), "WORK_FEISHU_SECRET") {
		t.Fatalf("unset variable: %v", err)
	}
	if s, err := ResolveFeishuSecret(work, paths.MapEnv(map[string]string{"WORK_FEISHU_SECRET": " env-secret \n"})); s != "env-secret" || err != nil {
		t.Fatalf("from env: %q, %v", s, err)
	}
	if s, err := ResolveFeishuSecret(lark, nil); s != "plain-secret-value" || err != nil {
		t.Fatalf("inline: %q, %v", s, err)
	}
}

func TestFeishuSecretNeverShown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, feishuUser, "")
	c, _ := mustLoad(t, f, nil)
	a := c.Channels.Feishu["lark"]
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "account", a)
	for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%+v", a), fmt.Sprintf("%#v", a), logs.String()} {
		if strings.Contains(s, "plain-secret-value") || !strings.Contains(s, Redacted) {
			t.Errorf("secret shown or not marked: %s", s)
		}
	}
	for _, e := range c.Entries(paths.MapEnv(map[string]string{"WORK_FEISHU_SECRET": "x"})) {
		if strings.Contains(fmt.Sprint(e.Value), "plain-secret-value") {
			t.Errorf("%s shows the secret", e.Key)
		}
		switch e.Key {
		case "channels.feishu.lark.app_secret":
			if e.Value != Set || !e.Redacted {
				t.Errorf("%s = %+v", e.Key, e)
			}
		case "channels.feishu.work.app_secret_env":
			if e.EnvSet == nil || !*e.EnvSet {
				t.Errorf("%s = %+v", e.Key, e)
			}
		}
	}
}

func TestFeishuSecretFileModeWarning(t *testing.T) {
	t.Parallel()
	f := newFixture(t, feishuUser, "")
	if err := os.Chmod(f.userFile, 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := mustLoad(t, f, nil)
	if len(diags) != 1 || diags[0].Key != "channels.feishu.lark.app_secret" || !strings.Contains(diags[0].Message, "app_secret_env") {
		t.Fatalf("diagnostics: %+v", diags)
	}
}

func TestFeishuAccountErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ user, want string }{
		{"[channels.feishu.Work]\napp_id = \"cli_a\"\napp_secret_env = \"S\"\n", "names the account \"Work\""},
		{"[channels.feishu.w]\napp_id = \"a1\"\napp_secret_env = \"S\"\n", "starts with \"cli_\""},
		{"[channels.feishu.w]\napp_id = \"cli_a\"\n", "neither app_secret_env nor app_secret"},
		{"[channels.feishu.w]\napp_id = \"cli_a\"\napp_secret_env = \"my-var\"\n", "not an environment variable name"},
		{"[channels.feishu.w]\napp_id = \"cli_a\"\napp_secret = \"a b\"\n", "contains spaces"},
		{"[channels.feishu.w]\napp_id = \"cli_a\"\napp_secret_env = \"S\"\nbase_url = \"http://open.feishu.cn\"\n", "for Lark"},
		{"[channels.feishu.w]\napp_id = \"cli_a\"\napp_secret_env = \"S\"\nbase_url = \"https://open.feishu.cn/open-apis\"\n", "for Lark"},
		{"[channels.feishu.w]\napp_id = \"cli_a\"\napp_secret_env = \"S\"\nowner_open_id = \"on_123\"\n", "not an open_id"},
		{"[channels.feishu.w]\napp_id = \"cli_a\"\napp_secret_env = \"S\"\napp_token = \"x\"\n", "app_token"},
	} {
		f := newFixture(t, c.user, "")
		_, _, err := f.load(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.user, err, c.want)
		}
	}
	// A loopback http URL (a local test server) is accepted.
	f := newFixture(t, "[channels.feishu.w]\napp_id = \"cli_a\"\napp_secret_env = \"S\"\nbase_url = \"http://127.0.0.1:8080\"\n", "")
	mustLoad(t, f, nil)
}

func TestProjectCannotSetChannels(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "[channels.feishu.w]\napp_id = \"cli_a\"\napp_secret = \"s\"\n")
	c, diags := mustLoad(t, f, nil)
	if len(c.Channels.Feishu) != 0 || len(diags) == 0 || !strings.Contains(diags[0].Message, "is ignored") {
		t.Fatalf("channels from a project file: %+v, diagnostics %+v", c.Channels, diags)
	}
}
