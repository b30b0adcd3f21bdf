package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/paths"
)

func TestAddAndRemoveFeishuAccount(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	file := filepath.Join(home, "config.toml")
	orig := "# mine\n[channels]\nkeep_days = 10\n"
	if err := os.WriteFile(file, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	env := paths.MapEnv(map[string]string{})
	a := FeishuAccount{AppID: "cli_a1", AppSecretEnv: "FEISHU_SECRET", BaseURL: LarkBaseURL, OwnerOpenID: "ou_me"}
	if err := AddFeishuAccount(home, "work", a, env); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := Load(LoadOptions{Home: home, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Channels.Feishu["work"]; got.AppID != "cli_a1" || got.AppSecretEnv != "FEISHU_SECRET" || got.BaseURL != LarkBaseURL || got.OwnerOpenID != "ou_me" {
		t.Fatalf("loaded %+v", got)
	}
	if err := AddFeishuAccount(home, "work", a, env); err == nil || !strings.Contains(err.Error(), "already configured") {
		t.Fatalf("adding it twice = %v", err)
	}
	if err := AddFeishuAccount(home, "home", FeishuAccount{AppID: "cli_b", AppSecret: "s"}, env); err == nil {
		t.Fatal("a secret was written")
	}
	if err := AddFeishuAccount(home, "bad", FeishuAccount{AppID: "cli_b", AppSecretEnv: "not a name"}, env); err == nil {
		t.Fatal("an invalid table was written")
	}
	if err := RemoveFeishuAccount(home, "work", env); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(file); string(b) != orig {
		t.Fatalf("after remove the file is %q, want it as it was", b)
	}
	if err := RemoveFeishuAccount(home, "work", env); err == nil || !strings.Contains(err.Error(), `no Feishu account named "work"`) {
		t.Fatalf("removing a missing account = %v", err)
	}
}
