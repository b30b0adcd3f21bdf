package config

import (
	"fmt"
	"strings"

	"github.com/scv-cli/scv/shared/paths"
)

// AddFeishuAccount appends the table [channels.feishu.<name>] holding a
// to the user file of home, atomically, as AddMCPServer does. The secret
// is written only as app_secret_env (the name of a variable): a secret
// given on a command line would stay in the shell's history.
func AddFeishuAccount(home, name string, a FeishuAccount, env paths.Env) error {
	if a.AppSecret != "" {
		return fmt.Errorf("the app secret is not written by a command; name the variable that holds it (app_secret_env)")
	}
	exists := func(cfg *Config, file string) error {
		if _, ok := cfg.Channels.Feishu[name]; ok {
			return fmt.Errorf("a Feishu account named %q is already configured in %s; remove it first with `scv channels remove %s`", name, file, name)
		}
		return nil
	}
	return appendTable(home, "channels.feishu."+tomlKey(name), exists, env, func(b *strings.Builder) {
		for _, kv := range [][2]string{{"app_id", a.AppID}, {"app_secret_env", a.AppSecretEnv}, {"owner_open_id", a.OwnerOpenID}} {
			if kv[1] != "" {
				fmt.Fprintf(b, "%s = %s\n", kv[0], tomlString(kv[1]))
			}
		}
		if a.BaseURL != "" && a.BaseURL != FeishuBaseURL {
			fmt.Fprintf(b, "base_url = %s\n", tomlString(a.BaseURL))
		}
	})
}

// RemoveFeishuAccount removes [channels.feishu.<name>] from the user file
// of home, atomically, as RemoveMCPServer does.
func RemoveFeishuAccount(home, name string, env paths.Env) error {
	return removeTable(home, []string{"channels", "feishu", name}, "Feishu account", env)
}
