package channels

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
)

// newCmdLogin is `scv channels login wechat [--account NAME]`: it becomes
// `scv-bridge login wechat`, which draws the QR code and stores the
// binding (the bridge owns the WeChat adapter; scv never imports it).
func newCmdLogin(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "login wechat [--account NAME]",
		Short: "Bind a WeChat account by scanning a QR code with WeChat",
		Args:  cli.ExactArgs(1, "name the channel: scv channels login wechat [--account NAME]"),
		RunE: func(_ *cobra.Command, args []string) error {
			if args[0] != "wechat" {
				return cli.UsageErrorf("only WeChat is bound by login (%q given); add a Feishu account with scv channels add", args[0])
			}
			if _, err := homeOf(env); err != nil {
				return err
			}
			path, err := f.FindBinary(client.Bridge)
			if err != nil {
				return err
			}
			// Exec: the terminal (the QR code) and Ctrl+C reach scv-bridge directly.
			return f.Exec(path, []string{client.Bridge, "login", "wechat", "--account", name})
		},
	}
	cmd.Flags().StringVar(&name, "account", "default", "the account's name ([channels.wechat.<account>] is optional)")
	return cmd
}

// wechatAccounts are the configured WeChat accounts and those bound with
// the default credentials file but not configured (scv-bridge serves both).
func wechatAccounts(home string, cfg *config.Config) []string {
	names := slices.Collect(maps.Keys(cfg.Channels.WeChat))
	if entries, err := os.ReadDir(filepath.Dir(config.WeChatCredentialsPath(home, "x"))); err == nil {
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && e.Type().IsRegular() && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

// wechatCreds is what status shows of a credentials file: never the token.
type wechatCreds struct {
	BaseURL string    `json:"base_url"`
	OwnerID string    `json:"ilink_user_id"`
	BoundAt time.Time `json:"bound_at"`
}

// wechatState is the part of scv-bridge's state file of a WeChat account
// (state/bridge/wechat-<account>.json, docs/channels.md) that status shows.
type wechatState struct {
	SendBudget int `json:"send_budget"`
	Budget     struct {
		ThrottledUntil time.Time `json:"throttled_until"`
		Peers          map[string]struct {
			Used int `json:"used"`
		} `json:"peers"`
	} `json:"budget"`
	Held           map[string]int `json:"held"`
	SessionExpired time.Time      `json:"session_expired"`
}

// readJSON reads a small state file without following links.
func readJSON(path string, v any) error {
	data, err := statefile.ReadFile(filepath.Dir(path), filepath.Base(path), 16<<20, statefile.NoLinks)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func printWeChat(w io.Writer, home, name string, a config.WeChatAccount, status bool) {
	credPath := a.CredentialsFile(home, name)
	var st wechatState
	stErr := readJSON(filepath.Join(paths.StateDir(home), "bridge", "wechat-"+name+".json"), &st)
	fmt.Fprintf(w, "wechat/%s\n  bound:    %s\n", name, wechatBound(credPath, name, st))
	budget := a.SendBudget
	if st.SendBudget > 0 {
		budget = st.SendBudget
	}
	fmt.Fprintf(w, "  budget:   %d messages per message from the peer\n", budget)
	if !status {
		return
	}
	db := storePath(home, "wechat", name)
	fmt.Fprintf(w, "  bridge:   %s\n", bridgeState(db))
	if stErr != nil && !errors.Is(stErr, fs.ErrNotExist) {
		fmt.Fprintf(w, "  state:    unreadable (%v)\n", stErr)
	}
	if until := st.Budget.ThrottledUntil; time.Now().Before(until) {
		fmt.Fprintf(w, "  throttled: WeChat refused sends; nothing is sent until %s\n", until.Local().Format(time.RFC3339))
	}
	for _, peer := range slices.Sorted(maps.Keys(st.Budget.Peers)) {
		fmt.Fprintf(w, "  sent:     %d of %d to %s since their last message\n", st.Budget.Peers[peer].Used, budget, peer)
	}
	for _, peer := range slices.Sorted(maps.Keys(st.Held)) {
		fmt.Fprintf(w, "  held:     %d report(s) for %s, sent when they write again\n", st.Held[peer], peer)
	}
	fmt.Fprintf(w, "  store:    %s\n", db)
}

// wechatBound says whether the account is bound, from its credentials
// file (which it never prints) and the bridge's record of an ended session.
func wechatBound(path, name string, st wechatState) string {
	login := "scv channels login wechat --account " + name
	var c struct {
		wechatCreds
		Token string `json:"bot_token"`
	}
	err := readJSON(path, &c)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no: bind it with " + login
	case err != nil:
		return fmt.Sprintf("unknown: %s cannot be read (%v)", path, err)
	case c.Token == "":
		return fmt.Sprintf("no: %s holds no token; bind it again with %s", path, login)
	case !st.SessionExpired.IsZero() && !c.BoundAt.After(st.SessionExpired):
		return fmt.Sprintf("no: WeChat ended the session at %s; bind it again with %s", st.SessionExpired.Local().Format(time.RFC3339), login)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Sprintf("refused: %s is readable by others (mode %o); run chmod 600 on it", path, fi.Mode().Perm())
	}
	return fmt.Sprintf("yes, owner %s (who scanned the code), since %s, API %s", c.OwnerID, c.BoundAt.Local().Format(time.RFC3339), c.BaseURL)
}
