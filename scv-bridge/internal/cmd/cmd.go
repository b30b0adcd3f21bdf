// Package cmd is the scv-bridge command line: `scv-bridge run` serves
// every configured chat account (docs/channels.md).
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/scv-cli/scv/scv-bridge/internal/bridge"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
	sharedversion "github.com/scv-cli/scv/shared/version"
)

var program = cli.Program{Name: "scv-bridge"}

// Main runs scv-bridge with the process's arguments and returns its exit code.
func Main() cli.Code {
	return Run(os.Args[1:], cli.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
}

// Run runs scv-bridge with args; the one place an error becomes a code.
func Run(args []string, io cli.IOStreams) cli.Code {
	root := newRoot(io)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(context.Background())
	return program.Exit(io.ErrOut, cmd, err)
}

func newRoot(s cli.IOStreams) *cobra.Command {
	root := &cobra.Command{
		Use:   "scv-bridge",
		Short: "SCV's chat bridge: talk to SCV from Feishu, Lark or WeChat",
		Long: `scv-bridge relays chat conversations to SCV sessions (docs/channels.md).

Exit codes: 0 stopped by a signal, 1 failure, 2 usage error.`,
		Version:       sharedversion.Version,
		Args:          cli.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetVersionTemplate("scv-bridge {{.Version}}\n")
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.ErrOut)
	root.SetFlagErrorFunc(cli.FlagErrorFunc)
	root.CompletionOptions.DisableDefaultCmd = true
	var only, cwd string
	run := &cobra.Command{
		Use:   "run",
		Short: "Serve every configured chat account until stopped",
		Args:  cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			return serve(ctx, s.ErrOut, only, cwd)
		},
	}
	run.Flags().StringVar(&only, "account", "", "serve only this account (NAME or CHANNEL/NAME, such as wechat/home)")
	run.Flags().StringVar(&cwd, "cd", "", "the sessions' working directory (default: the current directory)")
	root.AddCommand(run, newLogin(s))
	return root
}

// account is one chat account to serve.
type account struct {
	channel, name string
}

func (a account) String() string { return a.channel + "/" + a.name }

// accounts lists what scv-bridge serves: every [channels.feishu.<account>],
// every [channels.wechat.<account>] and every WeChat account bound with
// the default credentials file but not configured (the table is optional).
func accounts(home string, cfg *config.Config) []account {
	var out []account
	for _, n := range slices.Sorted(maps.Keys(cfg.Channels.Feishu)) {
		out = append(out, account{"feishu", n})
	}
	names := slices.Collect(maps.Keys(cfg.Channels.WeChat))
	if entries, err := os.ReadDir(filepath.Dir(config.WeChatCredentialsPath(home, "x"))); err == nil {
		for _, e := range entries {
			if n, ok := strings.CutSuffix(e.Name(), ".json"); ok && e.Type().IsRegular() && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, account{"wechat", n})
	}
	return out
}

// pick keeps the accounts named by only ("NAME" or "CHANNEL/NAME").
func pick(all []account, only string) ([]account, error) {
	if only == "" {
		return all, nil
	}
	var out []account
	for _, a := range all {
		if only == a.name || only == a.String() {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return nil, cli.UsageErrorf("no account %q is configured; the accounts are: %v", only, all)
	}
	return out, nil
}

// serve loads the configuration and runs every account until ctx ends.
func serve(ctx context.Context, stderr io.Writer, only, cwd string) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The one workspace resolver of every command's --cd: a directory
	// that is not there is said at once, not at the first message.
	dir, err := paths.ResolveWorkspace(cwd, false)
	if err != nil {
		if cwd != "" {
			return &cli.UsageError{Err: fmt.Errorf("--cd: %w", err)}
		}
		return err
	}
	cwd = dir
	home, err := paths.Home(paths.OSEnv())
	if err != nil {
		return err
	}
	cfg, diags, err := config.Load(config.LoadOptions{Home: home})
	if err != nil {
		return cli.WithCode(cli.Failure, err)
	}
	for _, d := range diags {
		fmt.Fprintf(stderr, "scv-bridge: warning: %s\n", d.Message)
	}
	all := accounts(home, cfg)
	if len(all) == 0 {
		return errors.New("no chat account is configured: add a [channels.feishu.<account>] table to " +
			paths.ConfigFile(home) + " or bind WeChat with scv channels login wechat (see docs/channels.md)")
	}
	names, err := pick(all, only)
	if err != nil {
		return err
	}
	server, err := client.Finder{Self: "scv-bridge"}.Find(client.Server)
	if err != nil {
		return err
	}
	opts := bridge.Options{Home: home, Archive: cfg.Channels.ArchiveDir(home), KeepDays: cfg.Channels.KeepDays,
		MaxWaiting: cfg.Channels.MaxWaiting, MediaMaxBytes: int64(cfg.Channels.MediaMaxMB) << 20,
		Cwd: cwd, ServerPath: server, Log: log}
	return runAccounts(ctx, opts, cfg, names)
}

// runAccounts serves the accounts side by side; one failing does not stop
// the others. A stop by signal is a clean exit.
func runAccounts(ctx context.Context, opts bridge.Options, cfg *config.Config, names []account) error {
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, a := range names {
		var serveOne func() error
		switch a.channel {
		case "feishu":
			fa := cfg.Channels.Feishu[a.name]
			secret, err := config.ResolveFeishuSecret(fa, paths.OSEnv())
			if err != nil {
				errs[i] = fmt.Errorf("feishu account %s: %w", a.name, err)
				continue
			}
			serveOne = func() error {
				return bridge.RunFeishu(ctx, opts, bridge.FeishuAccount{Name: a.name, Config: fa, Secret: secret})
			}
		default:
			wa, ok := cfg.Channels.WeChat[a.name]
			if !ok {
				wa = config.DefaultWeChatAccount()
			}
			serveOne = func() error { return bridge.RunWeChat(ctx, opts, bridge.WeChatAccount{Name: a.name, Config: wa}) }
		}
		wg.Go(func() {
			if err := serveOne(); err != nil && !errors.Is(err, context.Canceled) {
				opts.Log.Error("an account stopped", "channel", a.channel, "account", a.name, "err", err)
				errs[i] = err
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
