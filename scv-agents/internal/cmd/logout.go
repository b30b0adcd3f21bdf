package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/scv-cli/scv/scv-agents/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/spf13/cobra"
)

// LogoutOptions are the inputs of `logout`.
type LogoutOptions struct {
	IO    *cmdutil.IOStreams
	F     *cmdutil.Factory
	Agent string
}

// NewCmdLogout returns `logout`. runF replaces the behaviour in tests.
func NewCmdLogout(f *cmdutil.Factory, runF func(*LogoutOptions) error) *cobra.Command {
	opts := &LogoutOptions{IO: f.IO, F: f}
	return &cobra.Command{
		Use:   "logout NAME",
		Short: "Sign an agent out of its private home",
		Long: `Sign the agent NAME out of its private home. claude, codex and grok run their
own logout command with the private environment; dsh's key file is removed;
pi loses auth.json, the scv provider and a default that points at it; the nested
SCV's configuration file is removed. Your own login is not touched.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cli.UsageErrorf("name one agent to sign out, such as scv agents logout claude")
			}
			opts.Agent = args[0]
			if runF != nil {
				return runF(opts)
			}
			return logoutRun(cmd.Context(), opts)
		},
	}
}

func logoutRun(ctx context.Context, opts *LogoutOptions) error {
	home, err := opts.F.Home()
	if err != nil {
		return err
	}
	out := opts.IO.Out
	switch opts.Agent {
	case adapters.DSH:
		ok, err := signin.RemoveDSHKey(home)
		if err != nil {
			return err
		}
		say(out, "dsh", ok, "removed the stored key", "no key was stored")
	case adapters.Pi:
		done, err := signin.LogoutPi(home)
		if err != nil {
			return err
		}
		say(out, "pi", len(done) > 0, strings.Join(done, "; "), "nothing was stored")
	case "scv":
		ok, err := signin.LogoutSCV(home)
		if err != nil {
			return err
		}
		say(out, "scv", ok, "removed "+signin.SCVConfigPath(home), "no configuration was stored")
	default:
		a, ok := adapters.Get(opts.Agent)
		if !ok {
			return unknownAgent(opts.Agent, agentNames())
		}
		if a.Logout == nil {
			return fmt.Errorf("%s has no logout command", a.Name)
		}
		if err := runOwn(ctx, opts.F, home, a, a.Logout.Args, a.Executable+" "+strings.Join(a.Logout.Args, " ")); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: signed out of its private home\n", a.Name)
		if st := signin.Check(home, a.Name, opts.F.Env); st.Checked && st.SignedIn {
			fmt.Fprintf(out, "%s: still %s; remove the key from its imported config, or import again\n", a.Name, st.Summary)
		}
	}
	return signin.RemoveImportRecord(home, opts.Agent)
}

func say(w interface{ Write([]byte) (int, error) }, agent string, did bool, yes, no string) {
	if did {
		fmt.Fprintf(w, "%s: %s\n", agent, yes)
	} else {
		fmt.Fprintf(w, "%s: %s\n", agent, no)
	}
}
