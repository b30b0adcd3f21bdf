package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/scv-cli/scv/scv-agents/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/spf13/cobra"
)

// statusTimeout bounds one agent CLI's own status command.
const statusTimeout = 30 * time.Second

// StatusOptions are the inputs of `status`.
type StatusOptions struct {
	IO *cmdutil.IOStreams
	F  *cmdutil.Factory
}

// NewCmdStatus returns `status`. runF replaces the behaviour in tests.
func NewCmdStatus(f *cmdutil.Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{IO: f.IO, F: f}
	return &cobra.Command{
		Use:   "status",
		Short: "Show every agent's sign-in state",
		Long: `Show, for every agent, where its executable is and whether its private home
holds a sign-in. For Claude Code and Codex this runs the CLI's own status
command with the private environment and prints only a summary; for the
others it reads the credential file and says whether one is stored, never its
value. Imported setups are compared with their source.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return statusRun(cmd.Context(), opts)
		},
	}
}

func statusRun(ctx context.Context, opts *StatusOptions) error {
	home, err := opts.F.Home()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tEXECUTABLE\tSIGN-IN\tIMPORT")
	for _, name := range agentNames() {
		exe, signIn := "-", ""
		if a, ok := adapters.Get(name); ok {
			if p, err := a.Lookup(opts.F.Env); err == nil {
				exe = p
			} else {
				exe = "not installed"
			}
			if st := signin.Check(home, name, opts.F.Env); st.Checked {
				signIn = st.Summary
			} else if exe == "not installed" {
				signIn = "unknown (not installed)"
			} else {
				signIn = cliStatus(ctx, opts.F, home, a)
			}
		} else {
			signIn = signin.Check(home, name, opts.F.Env).Summary
		}
		imp := "-"
		if is := signin.CheckImport(home, name, opts.F.Env); is.Imported {
			imp = is.Summary
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, exe, signIn, imp)
	}
	return tw.Flush()
}

// cliStatus runs a's own status command with the private environment and
// returns a summary of it; the output itself, which names the account or
// part of the key, is never printed.
func cliStatus(ctx context.Context, f *cmdutil.Factory, home string, a adapters.Adapter) string {
	if a.Status == nil {
		return "unknown (no status command)"
	}
	path, env, dir, err := privateCommand(f, home, a)
	if err != nil {
		return "unknown (" + firstSentence(err.Error()) + ")"
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	out, code, err := f.RunCaptured(ctx, path, a.Status.Args, env, dir)
	if ctx.Err() != nil {
		return fmt.Sprintf("unknown (%s %s did not answer within %s)", a.Executable, strings.Join(a.Status.Args, " "), statusTimeout)
	}
	if err != nil {
		return "unknown (cannot run " + a.Executable + ")"
	}
	return SummarizeStatus(a.Name, out, code)
}

// SummarizeStatus turns a CLI's status output and exit code into a
// summary that names no account and no key.
func SummarizeStatus(agent string, out []byte, code int) string {
	login := "scv agents login " + agent
	switch agent {
	case adapters.Claude:
		var s struct {
			LoggedIn         *bool  `json:"loggedIn"`
			AuthMethod       string `json:"authMethod"`
			APIProvider      string `json:"apiProvider"`
			SubscriptionType string `json:"subscriptionType"`
		}
		if json.Unmarshal(out, &s) == nil && s.LoggedIn != nil {
			if !*s.LoggedIn {
				return "signed out: run " + login
			}
			method := strings.ToLower(s.AuthMethod)
			switch {
			case strings.Contains(method, "api") || strings.Contains(method, "key"):
				return "signed in (API key)"
			case s.SubscriptionType != "" && safeWord(s.SubscriptionType):
				return "signed in (Claude account, " + s.SubscriptionType + ")"
			}
			return "signed in (Claude account)"
		}
	case adapters.Codex:
		low := strings.ToLower(string(out))
		switch {
		case code != 0 || strings.Contains(low, "not logged in"):
			return "signed out: run " + login + ", or scv agents import codex"
		case strings.Contains(low, "api key"):
			return "signed in (API key)"
		case strings.Contains(low, "chatgpt"):
			return "signed in (ChatGPT account)"
		}
	}
	if code == 0 {
		return "signed in"
	}
	return "signed out: run " + login
}

// safeWord reports whether s is a short plan name, not something that
// could carry an email or key.
func safeWord(s string) bool {
	if len(s) > 20 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func firstSentence(s string) string {
	if i := strings.Index(s, ": "); i > 0 {
		return s[:i]
	}
	return s
}
