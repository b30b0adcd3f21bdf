// Package channels is `scv channels`: the chat accounts scv-bridge serves
// (docs/channels.md). It reads the configuration and the bridge's state
// files only; it never imports the bridge.
package channels

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
)

const depthVar = "SCV_DELEGATION_DEPTH"

// errDelegated refuses the channel commands to a delegated run: chat
// accounts are the owner's, and access never changes from inside a chat.
var errDelegated = errors.New("a delegated run may not look at or change chat channels: do it from your own shell")

// NewCmdChannels returns `scv channels` with list, status, add and
// remove. env nil is the process's environment.
func NewCmdChannels(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	if env == nil {
		env = paths.OSEnv()
	}
	cmd := &cobra.Command{
		Use:   "channels",
		Short: "Manage the chat accounts scv-bridge serves (Feishu, Lark, WeChat)",
		Args:  cli.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the configured chat accounts (secrets are never shown)",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return run(f.IO.Out, env, false)
		},
	}, &cobra.Command{
		Use:   "status",
		Short: "Show each chat account and whether a bridge serves it",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return run(f.IO.Out, env, true)
		},
	}, newCmdAdd(f, env), newCmdLogin(f, env), &cobra.Command{
		Use:   "remove ACCOUNT",
		Short: "Remove a Feishu account from config.toml",
		Args:  cli.ExactArgs(1, "name the account to remove: scv channels remove ACCOUNT"),
		RunE: func(_ *cobra.Command, args []string) error {
			home, err := homeOf(env)
			if err != nil {
				return err
			}
			if err := config.RemoveFeishuAccount(home, args[0], env); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "Removed the Feishu account %q. Restart scv-bridge for it to take effect.\n", args[0])
			return nil
		},
	})
	return cmd
}

func newCmdAdd(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	var a config.FeishuAccount
	var lark bool
	cmd := &cobra.Command{
		Use:   "add ACCOUNT --app-id ID --secret-env VAR [--owner OPEN_ID] [--lark]",
		Short: "Add a Feishu (or Lark) account to config.toml",
		Args:  cli.ExactArgs(1, "name the account: scv channels add ACCOUNT --app-id ID --secret-env VAR"),
		RunE: func(_ *cobra.Command, args []string) error {
			if a.AppID == "" || a.AppSecretEnv == "" {
				return cli.UsageErrorf("--app-id and --secret-env (the variable holding the app secret) are required")
			}
			if lark {
				a.BaseURL = config.LarkBaseURL
			}
			home, err := homeOf(env)
			if err != nil {
				return err
			}
			if err := config.AddFeishuAccount(home, args[0], a, env); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "Added the Feishu account %q to %s. Export %s and run scv-bridge run.\n",
				args[0], paths.ConfigFile(home), a.AppSecretEnv)
			return nil
		},
	}
	cmd.Flags().StringVar(&a.AppID, "app-id", "", "the app's App ID (cli_…)")
	cmd.Flags().StringVar(&a.AppSecretEnv, "secret-env", "", "the environment variable holding the App Secret")
	cmd.Flags().StringVar(&a.OwnerOpenID, "owner", "", "the owner's open_id (ou_…): the one person who gets tools")
	cmd.Flags().BoolVar(&lark, "lark", false, "the app is on Lark (open.larksuite.com), not Feishu")
	return cmd
}

// homeOf is SCV_HOME, refused in delegated runs.
func homeOf(env paths.Env) (string, error) {
	if v := env.Getenv(depthVar); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n > 0 {
			return "", fmt.Errorf("%w (%s=%s)", errDelegated, depthVar, v)
		}
	}
	return paths.Home(env)
}

func run(w io.Writer, env paths.Env, status bool) error {
	home, err := homeOf(env)
	if err != nil {
		return err
	}
	cfg, _, err := config.Load(config.LoadOptions{Home: home, Env: env})
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(cfg.Channels.Feishu))
	wx := wechatAccounts(home, cfg)
	if len(names) == 0 && len(wx) == 0 {
		fmt.Fprintf(w, "No chat account is configured. Add a [channels.feishu.<account>] table to %s, or bind WeChat with scv channels login wechat (docs/channels.md).\n", paths.ConfigFile(home))
		return nil
	}
	for _, name := range names {
		a := cfg.Channels.Feishu[name]
		owner := a.OwnerOpenID
		if owner == "" {
			owner = "(none: nobody gets tools)"
		}
		fmt.Fprintf(w, "feishu/%s\n  app_id:   %s\n  base_url: %s\n  owner:    %s\n  secret:   %s\n",
			name, a.AppID, a.BaseURL, owner, secretSource(a, env))
		if status {
			db := storePath(home, "feishu", name)
			fmt.Fprintf(w, "  bridge:   %s\n  store:    %s\n", bridgeState(db), db)
		}
	}
	for _, name := range wx {
		a, ok := cfg.Channels.WeChat[name]
		if !ok {
			a = config.DefaultWeChatAccount()
		}
		printWeChat(w, home, name, a, status)
	}
	return nil
}

// secretSource says where the secret comes from, never what it is.
func secretSource(a config.FeishuAccount, env paths.Env) string {
	switch {
	case a.AppSecret != "":
		return "app_secret (in the configuration file)"
	case a.AppSecretEnv == "":
		return "missing: set app_secret_env"
	case env.Getenv(a.AppSecretEnv) == "":
		return "$" + a.AppSecretEnv + " (not set in this shell)"
	}
	return "$" + a.AppSecretEnv + " (set)"
}

// storePath is scv-bridge's database of one (channel, account): the
// state-file contract of docs/channels.md ("The bridge's store").
func storePath(home, channel, account string) string {
	return filepath.Join(paths.StateDir(home), "bridge", channel+"-"+account+".db")
}

// bridgeState tells whether a bridge serves the account: it holds an
// exclusive flock on its database for as long as it runs.
func bridgeState(db string) string {
	f, err := os.Open(db)
	if errors.Is(err, os.ErrNotExist) {
		return "never run"
	}
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return "running"
		}
		return "unknown (" + err.Error() + ")"
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return "not running"
}
