package config

import (
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/scv-cli/scv/shared/paths"
)

// Feishu base URLs: base_url is one of these, or a loopback URL in tests.
const (
	FeishuBaseURL = "https://open.feishu.cn"
	LarkBaseURL   = "https://open.larksuite.com"
)

// FeishuAccount is one [channels.feishu.<account>] table: a self-built app
// with the bot capability. Its String, GoString and LogValue methods never
// reveal AppSecret.
type FeishuAccount struct {
	// AppID is the app's id (cli_…).
	AppID string `toml:"app_id"`
	// AppSecret is the app secret itself. Prefer AppSecretEnv; when both
	// are set AppSecret wins. Never printed.
	AppSecret string `toml:"app_secret" json:"-"`
	// AppSecretEnv names the environment variable holding the secret.
	AppSecretEnv string `toml:"app_secret_env"`
	// BaseURL is FeishuBaseURL or LarkBaseURL.
	BaseURL string `toml:"base_url"`
	// OwnerOpenID is the owner's open_id for this app (ou_…): the one
	// person whose direct chat gets a tool-enabled session and who may
	// answer approvals. Empty: nobody is the owner.
	OwnerOpenID string `toml:"owner_open_id"`
}

// DefaultFeishuAccount is what a new [channels.feishu.<account>] starts
// from.
func DefaultFeishuAccount() FeishuAccount { return FeishuAccount{BaseURL: FeishuBaseURL} }

// ResolveFeishuSecret returns the app secret of a: AppSecret when set,
// otherwise the value of the variable named by AppSecretEnv (surrounding
// spaces removed). The error names the variable, never a value.
func ResolveFeishuSecret(a FeishuAccount, env paths.Env) (string, error) {
	if a.AppSecret != "" {
		return a.AppSecret, nil
	}
	if a.AppSecretEnv == "" {
		return "", fmt.Errorf("the Feishu app %s has no secret: set app_secret_env to the name of a variable holding it: %w", a.AppID, ErrAPIKeyMissing)
	}
	return secretFromEnv(env, a.AppSecretEnv, "app_secret_env", "<the app secret from the developer console>")
}

// String describes a without its secret.
func (a FeishuAccount) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{app_id=%s base_url=%s owner_open_id=%s", a.AppID, a.BaseURL, a.OwnerOpenID)
	if a.AppSecret != "" {
		b.WriteString(" app_secret=" + Redacted)
	}
	if a.AppSecretEnv != "" {
		b.WriteString(" app_secret_env=" + a.AppSecretEnv)
	}
	b.WriteByte('}')
	return b.String()
}

// GoString is String for %#v.
func (a FeishuAccount) GoString() string { return "config.FeishuAccount" + a.String() }

// LogValue implements slog.LogValuer without the secret.
func (a FeishuAccount) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("app_id", a.AppID), slog.String("base_url", a.BaseURL), slog.String("owner_open_id", a.OwnerOpenID)}
	if a.AppSecret != "" {
		attrs = append(attrs, slog.String("app_secret", Redacted))
	}
	if a.AppSecretEnv != "" {
		attrs = append(attrs, slog.String("app_secret_env", a.AppSecretEnv))
	}
	return slog.GroupValue(attrs...)
}

// accountNameRE is what an account name may be: it names lock files and
// archive folders.
var accountNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

var openIDRE = regexp.MustCompile(`^ou_[A-Za-z0-9]+$`)

// validateChannels checks every [channels.feishu.<account>] table.
func (v *validator) validateChannels() {
	for _, name := range slices.Sorted(maps.Keys(v.c.Channels.Feishu)) {
		a := v.c.Channels.Feishu[name]
		k := func(field string) string { return joinKey([]string{"channels", "feishu", name, field}) }
		table := joinKey([]string{"channels", "feishu", name})
		if !accountNameRE.MatchString(name) {
			v.fail(table, "names the account %q; use 1-32 lower-case letters, digits, '-' or '_', starting with a letter or digit", name)
		}
		if !strings.HasPrefix(a.AppID, "cli_") || strings.ContainsAny(a.AppID, " \t\r\n") {
			v.fail(k("app_id"), "is %q; set it to the App ID from the developer console (Credentials & Basic Info), which starts with \"cli_\"", a.AppID)
		}
		switch {
		case a.AppSecret == "" && a.AppSecretEnv == "":
			v.fail(table, "has neither app_secret_env nor app_secret; set app_secret_env to the name of a variable holding the app secret")
		case a.AppSecretEnv != "" && !validEnvName(a.AppSecretEnv):
			v.fail(k("app_secret_env"), "is %q, which is not an environment variable name; use letters, digits and underscores, such as \"FEISHU_APP_SECRET\"", a.AppSecretEnv)
		}
		if strings.ContainsAny(a.AppSecret, " \t\r\n") {
			v.fail(k("app_secret"), "contains spaces or line breaks; paste the secret alone")
		}
		if !validFeishuBase(a.BaseURL) {
			v.fail(k("base_url"), "is %q; use %q for Feishu or %q for Lark", a.BaseURL, FeishuBaseURL, LarkBaseURL)
		}
		if a.OwnerOpenID != "" && !openIDRE.MatchString(a.OwnerOpenID) {
			v.fail(k("owner_open_id"), "is %q, which is not an open_id; it starts with \"ou_\" (the bridge logs the open_id of each sender)", a.OwnerOpenID)
		}
	}
}

// validFeishuBase accepts https URLs without credentials, path or query,
// and plain http on a loopback address (a local test server).
func validFeishuBase(raw string) bool { return validServiceURL(raw, false) }
