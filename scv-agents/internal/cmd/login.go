package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/scv-cli/scv/scv-agents/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/spf13/cobra"
)

// LoginOptions are the inputs of `login`.
type LoginOptions struct {
	IO    *cmdutil.IOStreams
	F     *cmdutil.Factory
	Agent string
	// Extra are the arguments after --, passed to the agent's own login.
	Extra []string
	// OpenAICompatible, BaseURL, WireAPI and Model configure pi for an
	// OpenAI-compatible endpoint.
	OpenAICompatible        bool
	BaseURL, WireAPI, Model string
}

// NewCmdLogin returns `login`. runF replaces the behaviour in tests.
func NewCmdLogin(f *cmdutil.Factory, runF func(*LoginOptions) error) *cobra.Command {
	opts := &LoginOptions{IO: f.IO, F: f}
	cmd := &cobra.Command{
		Use:   "login NAME [-- ARGS]",
		Short: "Sign an agent in, in its private home",
		Long: `Sign the agent NAME in, in its private home under $SCV_HOME/agents/NAME,
separate from your own login.

claude, codex, grok: runs the agent's own login command (claude auth login,
  codex login, grok login) with the private home and cleaned environment that
  delegated runs use, with the terminal attached; ARGS after -- are passed on.
dsh:  reads a DeepSeek API key without echo (or from stdin when it is not a
  terminal) and stores it in .dsh/.credentials.yaml (mode 0600).
pi:   opens pi so you can run /login, then /quit. With --openai-compatible it
  asks for the base URL, wire API (responses or chat) and model (or takes
  --base-url, --wire-api, --model), then the key without echo.
scv:  gives the nested SCV a copy of SCV's active provider, as
  scv agents import scv does.
A key is never accepted as an argument.`,
		Example: "  scv agents login codex -- --device-auth\n  scv agents login dsh\n  scv agents login pi --openai-compatible --base-url https://relay.example/v1 --wire-api responses --model gpt-5.5",
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			names := args
			if dash >= 0 {
				names, opts.Extra = args[:dash], args[dash:]
			}
			if len(names) != 1 {
				return cli.UsageErrorf("name one agent to sign in, such as scv agents login codex")
			}
			opts.Agent = names[0]
			if opts.OpenAICompatible && opts.Agent != adapters.Pi {
				return cli.UsageErrorf("--openai-compatible is for pi only")
			}
			if !opts.OpenAICompatible && (opts.BaseURL != "" || opts.WireAPI != "" || opts.Model != "") {
				return cli.UsageErrorf("--base-url, --wire-api and --model go with --openai-compatible")
			}
			if runF != nil {
				return runF(opts)
			}
			return loginRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.OpenAICompatible, "openai-compatible", false, "pi: point pi at an OpenAI-compatible endpoint")
	cmd.Flags().StringVar(&opts.BaseURL, "base-url", "", "pi: the endpoint's base URL")
	cmd.Flags().StringVar(&opts.WireAPI, "wire-api", "", "pi: responses or chat")
	cmd.Flags().StringVar(&opts.Model, "model", "", "pi: the default model id")
	return cmd
}

func loginRun(ctx context.Context, opts *LoginOptions) error {
	home, err := opts.F.Home()
	if err != nil {
		return err
	}
	switch opts.Agent {
	case adapters.DSH:
		if len(opts.Extra) > 0 {
			return cli.UsageErrorf("dsh login takes no arguments after --; it reads the key from the terminal or stdin")
		}
		key, err := readKey(opts.F, "DeepSeek API key: ")
		if err != nil {
			return err
		}
		if err := signin.WriteDSHKey(home, key); err != nil {
			return fmt.Errorf("cannot store the DeepSeek key: %w", err)
		}
		fmt.Fprintf(opts.IO.Out, "dsh: key stored in %s (mode 0600)\n", signin.DSHCredentialsPath(home))
		return nil
	case adapters.Pi:
		if opts.OpenAICompatible {
			return loginPiEndpoint(home, opts)
		}
		a, _ := adapters.Get(adapters.Pi)
		fmt.Fprintln(opts.IO.ErrOut, "Opening pi in its private home: run /login, sign in, then /quit.")
		return runOwn(ctx, opts.F, home, a, opts.Extra, "pi")
	case "scv":
		// The nested SCV signs in with a copy of SCV's own active
		// provider: the same as scv agents import scv.
		if len(opts.Extra) > 0 {
			return cli.UsageErrorf("scv login takes no arguments after --; it copies SCV's active provider")
		}
		s, err := signin.ImportSCV(home, opts.F.Env)
		if err != nil {
			return err
		}
		fmt.Fprintln(opts.IO.Out, s)
		return nil
	}
	a, ok := adapters.Get(opts.Agent)
	if !ok {
		return unknownAgent(opts.Agent, agentNames())
	}
	if a.Login == nil {
		return fmt.Errorf("%s has no login command", a.Name)
	}
	if err := runOwn(ctx, opts.F, home, a, append(append([]string(nil), a.Login.Args...), opts.Extra...), a.Executable+" "+strings.Join(a.Login.Args, " ")); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "%s: run scv agents status to check the sign-in\n", a.Name)
	return nil
}

// runOwn runs the agent's own command with the private environment and the
// terminal attached.
func runOwn(ctx context.Context, f *cmdutil.Factory, home string, a adapters.Adapter, args []string, what string) error {
	path, env, dir, err := privateCommand(f, home, a)
	if err != nil {
		return err
	}
	err = f.RunAttached(ctx, path, args, env, dir)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%s exited with status %d", what, ee.ExitCode())
	}
	if err != nil {
		return fmt.Errorf("cannot run %s: %w", path, err)
	}
	return nil
}

// readKey reads a key without echo from the terminal, or one line from
// stdin when stdin is not a terminal.
func readKey(f *cmdutil.Factory, prompt string) (string, error) {
	var key string
	var err error
	if f.StdinIsTerminal() {
		key, err = f.ReadSecret(prompt)
	} else {
		key, err = f.ReadLine(bufio.NewReader(f.IO.In))
	}
	if err != nil && !f.StdinIsTerminal() {
		return "", fmt.Errorf("no key was given (%v); paste it at the prompt, or pipe it on stdin", err)
	}
	if err != nil {
		return "", fmt.Errorf("cannot read the key: %w", err)
	}
	if key == "" {
		return "", errors.New("no key was given; paste it at the prompt, or pipe it on stdin")
	}
	return key, nil
}

func loginPiEndpoint(home string, opts *LoginOptions) error {
	in := bufio.NewReader(opts.IO.In)
	ask := func(v *string, prompt string) error {
		if *v != "" {
			return nil
		}
		if opts.F.StdinIsTerminal() {
			fmt.Fprint(opts.IO.ErrOut, prompt)
		}
		s, err := opts.F.ReadLine(in)
		if err != nil {
			return fmt.Errorf("cannot read the answer to %q: %w", strings.TrimSpace(prompt), err)
		}
		*v = s
		return nil
	}
	if err := ask(&opts.BaseURL, "Base URL (such as https://api.openai.com/v1): "); err != nil {
		return err
	}
	if err := ask(&opts.WireAPI, "Wire API (responses or chat): "); err != nil {
		return err
	}
	if err := ask(&opts.Model, "Default model: "); err != nil {
		return err
	}
	e := signin.PiEndpoint{BaseURL: opts.BaseURL, WireAPI: config.WireAPI(opts.WireAPI), Model: opts.Model}
	if err := e.Validate(); err != nil && !strings.Contains(err.Error(), "API key") {
		return cli.UsageErrorf("%v", err)
	}
	var key string
	var err error
	if opts.F.StdinIsTerminal() {
		key, err = opts.F.ReadSecret("API key: ")
	} else {
		key, err = opts.F.ReadLine(in)
	}
	if err != nil {
		return fmt.Errorf("cannot read the key: %w", err)
	}
	e.Key = key
	if err := signin.WritePi(home, e); err != nil {
		return fmt.Errorf("cannot configure pi: %w", err)
	}
	fmt.Fprintf(opts.IO.Out, "pi: provider scv set up (%s API, model %q) and made the default; key stored in .pi/agent/auth.json\n", e.WireAPI, e.Model)
	return nil
}
