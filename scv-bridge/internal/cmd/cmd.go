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
	"slices"
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
		Short: "SCV's chat bridge: talk to SCV from Feishu or Lark",
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
	run.Flags().StringVar(&only, "account", "", "serve only this account (a [channels.feishu.<account>] name)")
	run.Flags().StringVar(&cwd, "cd", "", "the sessions' working directory (default: the current directory)")
	root.AddCommand(run)
	return root
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
	names := slices.Sorted(maps.Keys(cfg.Channels.Feishu))
	if only != "" {
		if _, ok := cfg.Channels.Feishu[only]; !ok {
			return cli.UsageErrorf("no account %q is configured; the accounts are: %v", only, names)
		}
		names = []string{only}
	}
	if len(names) == 0 {
		return errors.New("no chat account is configured: add a [channels.feishu.<account>] table to " +
			paths.ConfigFile(home) + " (see docs/channels.md)")
	}
	server, err := client.Finder{Self: "scv-bridge"}.Find(client.Server)
	if err != nil {
		return err
	}
	opts := bridge.Options{Home: home, Archive: cfg.Channels.ArchiveDir(home), KeepDays: cfg.Channels.KeepDays,
		Cwd: cwd, ServerPath: server, Log: log}
	return runAccounts(ctx, opts, cfg, names)
}

// runAccounts serves the accounts side by side; one failing does not stop
// the others. A stop by signal is a clean exit.
func runAccounts(ctx context.Context, opts bridge.Options, cfg *config.Config, names []string) error {
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		a := cfg.Channels.Feishu[name]
		secret, err := config.ResolveFeishuSecret(a, paths.OSEnv())
		if err != nil {
			errs[i] = fmt.Errorf("feishu account %s: %w", name, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := bridge.RunFeishu(ctx, opts, bridge.FeishuAccount{Name: name, Config: a, Secret: secret})
			if err != nil && !errors.Is(err, context.Canceled) {
				opts.Log.Error("an account stopped", "channel", "feishu", "account", name, "err", err)
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
