package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-agents/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/spf13/cobra"
)

// Bounds of gc.
const (
	defaultGCAge = 30 * 24 * time.Hour
	// minGCAge is the least --older-than; transcripts written within it
	// are always kept.
	minGCAge = time.Hour
)

// transcriptDirs are, per agent, where its CLI keeps transcripts inside
// its private home.
var transcriptDirs = []struct{ agent, dir string }{
	{"claude", filepath.Join(".claude", "projects")},
	{"codex", "sessions"},
	{"pi", filepath.Join(".pi", "agent", "sessions")},
}

// GCOptions are the inputs of `gc`.
type GCOptions struct {
	IO        *cmdutil.IOStreams
	F         *cmdutil.Factory
	DryRun    bool
	OlderThan time.Duration
	Agent     string
	Now       func() time.Time
}

// NewCmdGC returns `gc`. runF replaces the behaviour in tests.
func NewCmdGC(f *cmdutil.Factory, runF func(*GCOptions) error) *cobra.Command {
	opts := &GCOptions{IO: f.IO, F: f, Now: time.Now}
	var older string
	cmd := &cobra.Command{
		Use:   "gc [--dry-run] [--older-than D] [AGENT]",
		Short: "Remove old transcripts from the agents' private homes",
		Long: `Remove the transcripts the agent CLIs kept in their private homes (Claude
Code under .claude/projects, Codex under sessions, pi under .pi/agent/sessions)
that are older than D (default 30d; never less than 1h). Transcripts written
in the last hour, and those of a live conversation (named by a marker whose SCV
process still runs), are always kept; symlinks are never followed.
D is a number with a unit: 90m, 12h, 7d.`,
		Example: "  scv agents gc --dry-run\n  scv agents gc --older-than 7d codex",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return cli.UsageErrorf("gc takes at most one agent, got %d", len(args))
			}
			if len(args) == 1 {
				opts.Agent = args[0]
				if !slices.ContainsFunc(transcriptDirs, func(t struct{ agent, dir string }) bool { return t.agent == opts.Agent }) {
					return cli.UsageErrorf("gc collects the transcripts of claude, codex and pi, not %q", opts.Agent)
				}
			}
			opts.OlderThan = defaultGCAge
			if older != "" {
				d, err := parseAge(older)
				if err != nil {
					return cli.UsageErrorf("--older-than %q: %v", older, err)
				}
				if d < minGCAge {
					return cli.UsageErrorf("--older-than %s is less than an hour; transcripts younger than 1h are always kept, so pass 1h or more", older)
				}
				opts.OlderThan = d
			}
			if runF != nil {
				return runF(opts)
			}
			return gcRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "print what would be removed, per agent, and remove nothing")
	cmd.Flags().StringVar(&older, "older-than", "", "remove transcripts older than this (default 30d, at least 1h)")
	return cmd
}

// parseAge parses a Go duration or a number of days ("7d").
func parseAge(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.ParseFloat(n, 64)
		if err != nil || !(days >= 0 && days <= 100*365) { // also refuses NaN
			return 0, errors.New("not a number of days such as 7d")
		}
		return time.Duration(days * float64(24*time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errors.New("not a duration such as 90m, 12h or 7d")
	}
	return d, nil
}

// gcResult counts one agent's transcripts.
type gcResult struct {
	removed, kept int
	bytes         int64
	paths         []string
	errs          []error
}

func gcRun(opts *GCOptions) error {
	home, err := opts.F.Home()
	if err != nil {
		return err
	}
	live, markErr := records.LiveConversations(home)
	if markErr != nil {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %v\n", markErr)
	}
	now := opts.Now()
	cutoff := now.Add(-opts.OlderThan)
	if recent := now.Add(-minGCAge); cutoff.After(recent) {
		cutoff = recent
	}
	var errs []error
	for _, td := range transcriptDirs {
		if opts.Agent != "" && td.agent != opts.Agent {
			continue
		}
		agentHome, err := paths.AgentDir(home, td.agent)
		if err != nil {
			return err
		}
		res := collect(filepath.Join(agentHome, td.dir), cutoff, live, opts.DryRun)
		verb := "removed"
		if opts.DryRun {
			verb = "would remove"
		}
		fmt.Fprintf(opts.IO.Out, "%s: %s %d transcripts (%s), kept %d\n", td.agent, verb, res.removed, humanBytes(res.bytes), res.kept)
		if opts.DryRun {
			for _, p := range res.paths {
				fmt.Fprintf(opts.IO.Out, "  %s\n", p)
			}
		}
		errs = append(errs, res.errs...)
	}
	return errors.Join(errs...)
}

// collect removes (or, in a dry run, lists) the regular files under root
// last modified before cutoff whose path names no live CLI session, then
// the directories that became empty. It never follows a symlink: a
// symlinked root is skipped, and links inside are neither followed nor
// removed.
func collect(root string, cutoff time.Time, live map[string]bool, dryRun bool) gcResult {
	var res gcResult
	fi, err := os.Lstat(root)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			res.errs = append(res.errs, fmt.Errorf("cannot read %s: %w", root, err))
		}
		return res
	}
	if !fi.IsDir() {
		res.errs = append(res.errs, fmt.Errorf("%s is not a directory (a symlink?); gc leaves it alone", root))
		return res
	}
	// Directory times are taken before their files go, since removing
	// a file touches its directory.
	type dirTime struct {
		path string
		mod  time.Time
	}
	var dirs []dirTime
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			res.errs = append(res.errs, fmt.Errorf("cannot read %s: %w", p, err))
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if p != root {
				if namesLive(rel, live) {
					res.kept++
					return filepath.SkipDir
				}
				if info, err := d.Info(); err == nil {
					dirs = append(dirs, dirTime{p, info.ModTime()})
				}
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil // symlinks and devices stay
		}
		info, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		if !info.ModTime().Before(cutoff) || namesLive(rel, live) {
			res.kept++
			return nil
		}
		if !dryRun {
			if err := os.Remove(p); err != nil {
				res.errs = append(res.errs, fmt.Errorf("cannot remove %s: %w", p, err))
				return nil
			}
		}
		res.removed++
		res.bytes += info.Size()
		res.paths = append(res.paths, rel)
		return nil
	})
	if !dryRun {
		// Deepest first, so a parent empties after its children.
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i].path) > len(dirs[j].path) })
		for _, d := range dirs {
			if d.mod.Before(cutoff) {
				_ = os.Remove(d.path) // fails, as meant, when not empty
			}
		}
	}
	return res
}

// namesLive reports whether a transcript path contains a live CLI
// session id (Claude's <uuid>.jsonl and <uuid>/, Codex's
// rollout-<time>-<uuid>.jsonl, pi's own <time>_<uuid>.jsonl or the <uuid>.jsonl SCV names).
func namesLive(rel string, live map[string]bool) bool {
	for id := range live {
		if id != "" && strings.Contains(rel, id) {
			return true
		}
	}
	return false
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
