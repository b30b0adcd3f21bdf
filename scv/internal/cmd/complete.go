package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/spf13/cobra"
)

// The shell completions of the terminal UI's flags that take a value of
// SCV's own: --model (the models the configuration names) and --resume
// (the workspace's stored sessions, newest first, each described by its
// first prompt). A completion that cannot be computed offers nothing
// rather than failing the shell: completion must never print an error
// into the user's command line.

// completeModels completes --model with the active provider's configured
// model and the models of its [providers.P.models."M"] tables, for the
// workspace of -C (its .scv/config.toml may add models).
func completeModels(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	cfg, err := loadForCompletion(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	name, p, demo := cfg.ActiveProvider()
	models := []string{p.Model}
	if !demo {
		models = append(models, slices.Sorted(maps.Keys(p.Models))...)
	}
	var out []cobra.Completion
	seen := map[string]bool{}
	for i, m := range models {
		if m == "" || seen[m] || !strings.HasPrefix(m, toComplete) {
			continue
		}
		seen[m] = true
		what := "of provider " + name
		if i == 0 {
			what = "the configured model of provider " + name
		}
		out = append(out, cobra.CompletionWithDesc(m, what))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeSessions completes --resume with the stored sessions of the
// workspace of -C (the current directory without it), asked of a server
// started for the purpose (session.list), at most 50 of them.
func completeSessions(f *cmdutil.Factory) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		dir, err := completionDir(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		sessions, err := storedSessions(ctx, f, dir, 50)
		if err != nil {
			cobra.CompDebugln("scv: listing the stored sessions: "+err.Error(), true)
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []cobra.Completion
		for _, s := range sessions {
			if strings.HasPrefix(s.SessionID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(s.SessionID, fmt.Sprintf("%s, %s: %s", s.UpdatedAt, cmdutil.Turns(s.Turns), s.Title)))
			}
		}
		// The newest first, as listed: the shell must not sort the ids.
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
	}
}

// completionTimeout bounds a completion that starts a server: a shell
// waiting on it is a user waiting on Tab.
const completionTimeout = 5 * time.Second

// completionDir is the workspace the command line names: -C's directory,
// or the current one.
func completionDir(cmd *cobra.Command) (string, error) {
	dir, _ := cmd.Flags().GetString("cd")
	if dir == "" {
		dir = "."
	}
	return filepath.Abs(dir)
}

// loadForCompletion loads the configuration the command line would run
// with: the user's, and the workspace's of -C.
func loadForCompletion(cmd *cobra.Command) (*config.Config, error) {
	env := paths.OSEnv()
	home, err := paths.Home(env)
	if err != nil {
		return nil, err
	}
	dir, err := completionDir(cmd)
	if err != nil {
		return nil, err
	}
	cfg, _, err := config.Load(config.LoadOptions{Home: home, Workspace: dir, Env: env})
	return cfg, err
}

// storedSessions asks a server of its own for the stored sessions of the
// workspace dir (session.list), newest first.
func storedSessions(ctx context.Context, f *cmdutil.Factory, dir string, limit int) ([]protocol.SessionSummary, error) {
	path, err := f.FindBinary(client.Server)
	if err != nil {
		return nil, err
	}
	p, err := client.Start(client.Command{Path: path, Args: []string{"--stdio", "--log-level", "error"}, Stderr: io.Discard})
	if err != nil {
		return nil, err
	}
	defer func() { _ = p.Stop(context.Background(), time.Second) }()
	// The deadline stops the server, which ends the read below.
	stop := context.AfterFunc(ctx, func() { _ = p.Stop(context.Background(), 0) })
	defer stop()
	conn := client.NewConn(p.Stream(), 0)
	if err := conn.Send(client.Hello("1", "scv-complete"), &protocol.SessionList{RequestID: "2", Cwd: dir, Limit: limit}); err != nil {
		return nil, err
	}
	for {
		fr, err := conn.Read()
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case errors.Is(err, io.EOF):
			return nil, errors.New("the server ended without listing the sessions")
		case err != nil:
			return nil, err
		}
		switch ev := fr.Event.(type) {
		case *protocol.SessionListed:
			if ev.RequestID == "2" {
				return ev.Sessions, nil
			}
		case *protocol.Error:
			return nil, fmt.Errorf("%s: %s", ev.Code, ev.Message)
		}
	}
}
