package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestWeChatAccounts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "[channels.wechat.home]\n\n[channels.wechat.work]\nsend_budget = 5\nthrottle_minutes = 120\ncredentials = \"/secure/wechat-work.json\"\n", "")
	c, _ := mustLoad(t, f, nil)
	home, work := c.Channels.WeChat["home"], c.Channels.WeChat["work"]
	if home != DefaultWeChatAccount() {
		t.Errorf("an empty table must take the defaults: %v", home)
	}
	if work.SendBudget != 5 || work.ThrottleMinutes != 120 || work.BaseURL != WeChatBaseURL || work.CDNURL != WeChatCDNURL {
		t.Errorf("work: %v", work)
	}
	if s := c.Sources["channels.wechat.work.send_budget"]; s.Kind != SourceUser {
		t.Errorf("send_budget source %+v", s)
	}
	if got := home.CredentialsFile("/h", "home"); got != filepath.Join("/h", "state", "channels", "wechat", "home.json") {
		t.Errorf("default credentials file %s", got)
	}
	if got := work.CredentialsFile("/h", "work"); got != "/secure/wechat-work.json" {
		t.Errorf("credentials file %s", got)
	}
}

func TestWeChatAccountErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ user, want string }{
		{"[channels.wechat.Home]\n", "names the account \"Home\""},
		{"[channels.wechat.h]\nbase_url = \"http://ilinkai.weixin.qq.com\"\n", "base_url"},
		{"[channels.wechat.h]\nbase_url = \"https://ilinkai.weixin.qq.com/ilink\"\n", "base_url"},
		{"[channels.wechat.h]\ncdn_url = \"ftp://cdn\"\n", "cdn_url"},
		{"[channels.wechat.h]\ncredentials = \"wechat.json\"\n", "not an absolute path"},
		{"[channels.wechat.h]\nsend_budget = 10\n", "from 3 to 9"},
		{"[channels.wechat.h]\nthrottle_minutes = 5\n", "from 60 to 1440"},
		{"[channels.wechat.h]\nbot_token = \"x\"\n", "bot_token"},
	} {
		f := newFixture(t, c.user, "")
		_, _, err := f.load(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.user, err, c.want)
		}
	}
	mustLoad(t, newFixture(t, "[channels.wechat.h]\nbase_url = \"http://127.0.0.1:8080\"\ncdn_url = \"http://127.0.0.1:8080/c2c\"\n", ""), nil)
}
