package cmd

import (
	"fmt"
	"strings"

	"github.com/scv-cli/scv/scv-agents/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/spf13/cobra"
)

// ImportOptions are the inputs of `import`.
type ImportOptions struct {
	IO    *cmdutil.IOStreams
	F     *cmdutil.Factory
	Agent string
	// From is the directory of the user's own setup (codex, grok).
	From string
	// FromSCVProvider is pi's --from-scv-provider.
	FromSCVProvider bool
}

// NewCmdImport returns `import`. runF replaces the behaviour in tests.
func NewCmdImport(f *cmdutil.Factory, runF func(*ImportOptions) error) *cobra.Command {
	opts := &ImportOptions{IO: f.IO, F: f}
	cmd := &cobra.Command{
		Use:   "import codex|grok|pi --from-scv-provider|scv",
		Short: "Copy a setup into an agent's private home",
		Long: `Copy a setup into an agent's private home. Every import is a snapshot: re-run
it after changing the source. "scv agents status" says when the source changed.

codex  copies config.toml whole from $CODEX_HOME or ~/.codex (or --from DIR),
       and auth.json only when it holds an API key, never a ChatGPT sign-in.
grok   merges config.toml from $GROK_HOME or ~/.grok (or --from DIR) by
       top-level table, and prints the profiles and default model.
pi --from-scv-provider
       points pi at SCV's active provider (provider scv, made the default).
scv    gives the nested SCV a copy of SCV's active provider.
Keys are copied, never printed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cli.UsageErrorf("name what to import: codex, grok, pi --from-scv-provider, or scv")
			}
			opts.Agent = args[0]
			switch opts.Agent {
			case "codex", "grok":
				if opts.FromSCVProvider {
					return cli.UsageErrorf("--from-scv-provider is for pi only")
				}
			case "pi":
				if !opts.FromSCVProvider {
					return cli.UsageErrorf("import pi needs --from-scv-provider (or sign pi in with scv agents login pi)")
				}
				if opts.From != "" {
					return cli.UsageErrorf("import pi takes no --from")
				}
			case "scv":
				if opts.From != "" || opts.FromSCVProvider {
					return cli.UsageErrorf("import scv takes no flags: it always copies SCV's active provider")
				}
			default:
				return cli.UsageErrorf("cannot import %q; choose codex, grok, pi --from-scv-provider, or scv", opts.Agent)
			}
			if runF != nil {
				return runF(opts)
			}
			return importRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "codex, grok: the directory to copy from")
	cmd.Flags().BoolVar(&opts.FromSCVProvider, "from-scv-provider", false, "pi: use SCV's active provider")
	return cmd
}

func importRun(opts *ImportOptions) error {
	home, err := opts.F.Home()
	if err != nil {
		return err
	}
	out := opts.IO.Out
	switch opts.Agent {
	case "pi":
		s, err := signin.ImportPiFromSCV(home, opts.F.Env)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, s)
		return nil
	case "scv":
		s, err := signin.ImportSCV(home, opts.F.Env)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, s)
		return nil
	}
	from := opts.From
	if from == "" {
		if from, err = signin.DefaultSourceDir(opts.Agent, opts.F.Env); err != nil {
			return err
		}
	}
	if opts.Agent == "grok" {
		res, err := signin.ImportGrok(home, from)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "grok: copied %s/config.toml (auth.json sign-ins are never copied)\n", from)
		if res.Default != "" {
			fmt.Fprintf(out, "default model: %s\n", res.Default)
		} else {
			fmt.Fprintln(out, "default model: none ([models] default is not set)")
		}
		for _, p := range res.Profiles {
			key := "no key"
			switch {
			case p.HasAPIKey:
				key = "api_key stored"
			case p.EnvKeyScrubbed:
				key = "env_key " + p.EnvKey + ", which SCV removes from delegated agents: put api_key in this profile"
			case p.EnvKey != "":
				key = "env_key " + p.EnvKey
			}
			fmt.Fprintf(out, "profile %s: model %s (%s)\n", p.Key, p.Model, key)
		}
		if len(res.Kept) > 0 {
			fmt.Fprintf(out, "kept from SCV's copy: [%s]\n", strings.Join(res.Kept, "], ["))
		}
		return nil
	}
	res, err := signin.ImportCodex(home, from)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "codex: copied %s/config.toml: model %s, provider %s, approval_policy %s, sandbox_mode %s\n",
		from, orDefault(res.Model), orDefault(res.Provider), orDefault(res.ApprovalPolicy), orDefault(res.SandboxMode))
	switch {
	case res.AuthCopied:
		fmt.Fprintln(out, "codex: copied auth.json (an API key)")
	case res.AuthSkipped != "":
		fmt.Fprintf(out, "codex: auth.json not copied: %s\n", res.AuthSkipped)
	}
	for _, e := range res.EnvKeys {
		fmt.Fprintf(out, "warning: provider %s reads its key from an environment variable, which delegated Codex runs may not see: SCV removes key variables such as OPENAI_API_KEY from delegated agents, and the user service does not load your shell profile; use experimental_bearer_token or an auth.json API key instead\n", e)
	}
	return nil
}

func orDefault(s string) string {
	if s == "" {
		return "(default)"
	}
	return s
}
