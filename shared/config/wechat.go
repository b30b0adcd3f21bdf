package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/scv-cli/scv/shared/paths"
)

// WeChat (iLink) defaults: where the QR login starts and the media CDN.
const (
	WeChatBaseURL = "https://ilinkai.weixin.qq.com"
	WeChatCDNURL  = "https://novac2c.cdn.weixin.qq.com/c2c"
	// WeChatSendBudget is how many messages the bridge sends to a
	// conversation between two messages from its peer.
	WeChatSendBudget = 8
	// WeChatThrottleMinutes is the least pause after WeChat refuses sends.
	WeChatThrottleMinutes = 60
)

// WeChatAccount is one [channels.wechat.<account>] table: a WeChat account
// bound to SCV by QR code (scv channels login wechat). The bot token is not
// configuration: it lives in the credentials file (mode 0600), never here.
type WeChatAccount struct {
	// BaseURL is where the QR login starts; the login may name another
	// host, which the credentials file keeps.
	BaseURL string `toml:"base_url"`
	// CDNURL is the media CDN.
	CDNURL string `toml:"cdn_url"`
	// Credentials is the credentials file, absolute; empty means
	// WeChatCredentialsPath.
	Credentials string `toml:"credentials"`
	// SendBudget is the sends per conversation between two messages from
	// its peer (3-9; WeChat refuses more than about 10).
	SendBudget int `toml:"send_budget"`
	// ThrottleMinutes is the first pause after a refusal (ret=-2); it
	// doubles at each repeated refusal, up to a day.
	ThrottleMinutes int `toml:"throttle_minutes"`
}

// DefaultWeChatAccount is what a new [channels.wechat.<account>] starts
// from.
func DefaultWeChatAccount() WeChatAccount {
	return WeChatAccount{BaseURL: WeChatBaseURL, CDNURL: WeChatCDNURL, SendBudget: WeChatSendBudget, ThrottleMinutes: WeChatThrottleMinutes}
}

// WeChatCredentialsPath is the default credentials file of account:
// $SCV_HOME/state/channels/wechat/<account>.json.
func WeChatCredentialsPath(home, account string) string {
	return filepath.Join(paths.StateDir(home), "channels", "wechat", account+".json")
}

// CredentialsFile returns a's credentials file.
func (a WeChatAccount) CredentialsFile(home, account string) string {
	if a.Credentials != "" {
		return filepath.Clean(a.Credentials)
	}
	return WeChatCredentialsPath(home, account)
}

// validateWeChat checks every [channels.wechat.<account>] table.
func (v *validator) validateWeChat() {
	for _, name := range slices.Sorted(maps.Keys(v.c.Channels.WeChat)) {
		a := v.c.Channels.WeChat[name]
		k := func(field string) string { return joinKey([]string{"channels", "wechat", name, field}) }
		if !accountNameRE.MatchString(name) {
			v.fail(joinKey([]string{"channels", "wechat", name}), "names the account %q; use 1-32 lower-case letters, digits, '-' or '_', starting with a letter or digit", name)
		}
		if !validServiceURL(a.BaseURL, false) {
			v.fail(k("base_url"), "is %q; use %q (or leave the key out)", a.BaseURL, WeChatBaseURL)
		}
		if !validServiceURL(a.CDNURL, true) {
			v.fail(k("cdn_url"), "is %q; use %q (or leave the key out)", a.CDNURL, WeChatCDNURL)
		}
		if a.Credentials != "" && !filepath.IsAbs(a.Credentials) {
			v.fail(k("credentials"), "is %q, which is not an absolute path; leave the key out for %s", a.Credentials, WeChatCredentialsPath("$SCV_HOME", name))
		}
		v.intRange(k("send_budget"), int64(a.SendBudget), 3, 9, "a number of messages")
		v.intRange(k("throttle_minutes"), int64(a.ThrottleMinutes), WeChatThrottleMinutes, 24*60, "a number of minutes")
	}
}

// validServiceURL accepts https URLs without credentials or query (a path
// only when withPath), and plain http on a loopback address (a local test
// server).
func validServiceURL(raw string, withPath bool) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || (!withPath && strings.Trim(u.Path, "/") != "") {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	if u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// String describes a (it holds no secret; the token is in its file).
func (a WeChatAccount) String() string {
	return fmt.Sprintf("{base_url=%s cdn_url=%s credentials=%s send_budget=%d throttle_minutes=%d}", a.BaseURL, a.CDNURL, a.Credentials, a.SendBudget, a.ThrottleMinutes)
}
