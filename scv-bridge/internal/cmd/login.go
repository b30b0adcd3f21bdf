package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv-bridge/internal/wechat"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
)

// errDelegated refuses a binding from a delegated run: chat accounts are
// the owner's, and access never changes from inside a chat.
var errDelegated = errors.New("a delegated run may not bind chat accounts: do it from your own shell")

// newLogin is `scv-bridge login wechat [--account NAME]`, which
// `scv channels login wechat` runs.
func newLogin(s cli.IOStreams) *cobra.Command {
	var name string
	login := &cobra.Command{
		Use:   "login wechat [--account NAME]",
		Short: "Bind a WeChat account by scanning a QR code",
		Args:  cli.ExactArgs(1, "name the channel: scv-bridge login wechat [--account NAME]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != "wechat" {
				return cli.UsageErrorf("only WeChat is bound by login (%q given); Feishu accounts are added with scv channels add", args[0])
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return loginWeChat(ctx, s, name, paths.OSEnv())
		},
	}
	login.Flags().StringVar(&name, "account", "default", "the account's name (its [channels.wechat.<account>] table is optional)")
	return login
}

// loginWeChat binds account name: the QR code on the terminal, the
// credentials (token, API host, owner) stored 0600 atomically. The token
// is never printed.
func loginWeChat(ctx context.Context, s cli.IOStreams, name string, env paths.Env) error {
	if v := env.Getenv("SCV_DELEGATION_DEPTH"); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n > 0 {
			return fmt.Errorf("%w (SCV_DELEGATION_DEPTH=%s)", errDelegated, v)
		}
	}
	if !accountNameOK(name) {
		return cli.UsageErrorf("%q is not an account name: use 1-32 lower-case letters, digits, '-' or '_', starting with a letter or digit", name)
	}
	home, err := paths.Home(env)
	if err != nil {
		return err
	}
	cfg, _, err := config.Load(config.LoadOptions{Home: home, Env: env})
	if err != nil {
		return cli.WithCode(cli.Failure, err)
	}
	a, ok := cfg.Channels.WeChat[name]
	if !ok {
		a = config.DefaultWeChatAccount()
	}
	path := a.CredentialsFile(home, name)
	fmt.Fprintf(s.Out, "Binding the WeChat account %q.\n", name)
	creds, err := wechat.Login(ctx, wechat.LoginOptions{BaseURL: a.BaseURL, Out: s.Out})
	if err != nil {
		return err
	}
	if err := wechat.WriteCredentials(path, creds); err != nil {
		return err
	}
	fmt.Fprintf(s.Out, "The account %q is bound; its owner is %s (the WeChat user who scanned the code).\n"+
		"The credentials are in %s (mode 0600). Start or restart scv-bridge run to serve it.\n", name, creds.OwnerID, path)
	return nil
}

// accountNameOK is the configuration's rule for account names, which also
// name files.
func accountNameOK(s string) bool {
	if len(s) == 0 || len(s) > 32 {
		return false
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (i > 0 && (r == '-' || r == '_'))
		if !ok {
			return false
		}
	}
	return true
}
