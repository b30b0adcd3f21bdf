// Package setup is `scv setup`: a short first-run dialogue on the terminal
// that writes the user configuration for a real provider (pick one, name
// the key's environment variable or paste the key, test the connection).
package setup

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/spf13/cobra"
)

// preset is a provider the dialogue offers.
type preset struct {
	key, title, name, baseURL, keyEnv, model string
}

var presets = []preset{
	{"1", "OpenAI", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4.1-mini"},
	{"2", "OpenRouter", "openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", "openai/gpt-4.1-mini"},
	{"3", "Ollama on this machine (no key)", "local", "http://127.0.0.1:11434/v1", "", "llama3.1"},
	{"4", "another OpenAI-compatible endpoint", "custom", "", "", ""},
}

// Options are the command's inputs.
type Options struct {
	IO  *cmdutil.IOStreams
	Env paths.Env
	// Client tests the connection (http.DefaultClient's transport with a
	// 10 s timeout when nil).
	Client *http.Client
	// in, when set, is the reader of IO.In already in use (Offer's).
	in *bufio.Reader
}

// NewCmdSetup returns `scv setup`.
func NewCmdSetup(f *cmdutil.Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "setup",
		Short: "Configure a model provider on first run (writes $SCV_HOME/config.toml)",
		Long: `setup asks which provider to use (OpenAI, OpenRouter, a local Ollama or any
OpenAI-compatible endpoint), the environment variable that holds its key or
the key itself (stored in config.toml, mode 0600), and the model; it tests
the connection (GET /models) and writes $SCV_HOME/config.toml. It never
overwrites an existing configuration. Answering d keeps the built-in demo.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return Run(cmd.Context(), &Options{IO: f.IO, Env: paths.OSEnv()})
		},
	}
}

// answers holds what the user chose.
type answers struct {
	p      preset
	key    string // a pasted key; "" when keyEnv names it
	keyEnv string
	// testKey is the key the connection test sends.
	testKey string
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Run runs the dialogue on opts.IO.
func Run(ctx context.Context, opts *Options) error {
	home, err := paths.Home(opts.Env)
	if err != nil {
		return err
	}
	path := paths.ConfigFile(home)
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s already exists, so setup changes nothing; edit it (docs/configuration.md) or move it away and run scv setup again", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("checking %s: %w", path, err)
	}
	in := opts.in
	if in == nil {
		in = bufio.NewReader(opts.IO.In)
	}
	out := opts.IO.Out
	a, ok, err := ask(in, out, opts.Env)
	if err != nil || !ok {
		return err
	}
	if err := testConnection(ctx, opts.client(), a, out); err != nil {
		fmt.Fprintf(out, "The connection test failed: %v\n", err)
		if ans, _ := prompt(in, out, "Save the configuration anyway? [y/N] ", "n"); !strings.EqualFold(ans, "y") {
			return errors.New("nothing was written; run scv setup again when the provider answers")
		}
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", home, err)
	}
	b, err := render(a)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fmt.Fprintf(out, "Wrote %s (mode 0600). Run scv to start; /model switches models in a session.\n", path)
	return nil
}

func (o *Options) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{Timeout: 10 * time.Second}
}

// prompt prints q and reads one answer line; "" gives def. End of input
// is an error (a dialogue needs answers).
func prompt(in *bufio.Reader, out io.Writer, q, def string) (string, error) {
	fmt.Fprint(out, q)
	line, err := in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		if errors.Is(err, io.EOF) {
			return "", errors.New("the input ended before setup was answered; nothing was written")
		}
		return "", err
	}
	if line = strings.TrimSpace(line); line == "" {
		return def, nil
	}
	return line, nil
}

// ask asks for the provider, key and model; ok is false when the user
// keeps the demo.
func ask(in *bufio.Reader, out io.Writer, env paths.Env) (a answers, ok bool, err error) {
	fmt.Fprintln(out, "Which model provider should SCV use?")
	for _, p := range presets {
		fmt.Fprintf(out, "  %s  %s\n", p.key, p.title)
	}
	fmt.Fprintln(out, "  d  keep the built-in demo (no key, scripted replies)")
	for {
		c, err := prompt(in, out, "Choice [1]: ", "1")
		if err != nil {
			return a, false, err
		}
		if strings.EqualFold(c, "d") {
			fmt.Fprintln(out, "Nothing was written; scv runs the demo. Run scv setup again when you have a key.")
			return a, false, nil
		}
		for _, p := range presets {
			if p.key == c {
				a.p = p
			}
		}
		if a.p.key != "" {
			break
		}
		fmt.Fprintf(out, "%q is not one of 1, 2, 3, 4 or d.\n", c)
	}
	if a.p.baseURL == "" {
		if a.p.baseURL, err = prompt(in, out, "Base URL (for example https://host/v1): ", ""); err != nil {
			return a, false, err
		}
		if !strings.HasPrefix(a.p.baseURL, "http://") && !strings.HasPrefix(a.p.baseURL, "https://") {
			return a, false, fmt.Errorf("the base URL %q must start with http:// or https://; nothing was written", a.p.baseURL)
		}
		a.p.keyEnv = "OPENAI_API_KEY"
		a.p.model = "gpt-4.1-mini"
	}
	if a.p.keyEnv != "" {
		k, err := prompt(in, out, fmt.Sprintf("The environment variable holding the key, or paste the key itself (stored in config.toml, mode 0600) [%s]: ", a.p.keyEnv), a.p.keyEnv)
		if err != nil {
			return a, false, err
		}
		if envName.MatchString(k) && len(k) < 64 && strings.ToUpper(k) == k {
			a.keyEnv = k
			if env.Getenv(k) == "" {
				fmt.Fprintf(out, "Note: %s is not set in this shell; set it before running scv.\n", k)
			}
		} else {
			a.key = k
		}
	}
	if a.p.model, err = prompt(in, out, fmt.Sprintf("Model [%s]: ", a.p.model), a.p.model); err != nil {
		return a, false, err
	}
	a.keyLookup(env)
	return a, true, nil
}

// keyLookup fills key from the environment when keyEnv names a set
// variable, for the connection test only (render writes the name).
func (a *answers) keyLookup(env paths.Env) {
	if a.key == "" && a.keyEnv != "" {
		a.testKey = env.Getenv(a.keyEnv)
	} else {
		a.testKey = a.key
	}
}

// testConnection asks the endpoint for its models with the key.
func testConnection(ctx context.Context, c *http.Client, a answers, out io.Writer) error {
	fmt.Fprintf(out, "Testing %s/models…\n", strings.TrimRight(a.p.baseURL, "/"))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(a.p.baseURL, "/")+"/models", nil)
	if err != nil {
		return err
	}
	if a.testKey != "" {
		req.Header.Set("Authorization", "Bearer "+a.testKey)
	}
	resp, err := c.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		hint := "check the address, or start the provider's server"
		if a.p.name == "local" {
			hint = "start Ollama (ollama serve), or check its port"
		}
		return fmt.Errorf("nothing listens at %s (connection refused); %s", req.URL.Host, hint)
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, providerMessage(body))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &list)
	fmt.Fprintf(out, "Connection OK: the provider lists %d models.\n", len(list.Data))
	// A model the provider does not list fails at the first prompt; say
	// so now, while the name can still be fixed.
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if len(ids) > 0 && a.p.model != "" && !slices.Contains(ids, a.p.model) {
		shown := ids[:min(len(ids), 8)]
		more := ""
		if len(ids) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(ids)-len(shown))
		}
		fix := "change model in the file written below, or run scv setup again"
		if a.p.name == "local" {
			fix = "ollama pull " + a.p.model + " fetches it"
		}
		fmt.Fprintf(out, "Note: %s is not among them (%s%s); %s.\n", a.p.model, strings.Join(shown, ", "), more, fix)
	}
	return nil
}

// providerMessage is the error message of an OpenAI-style error body, or
// the body's start.
func providerMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		s = "(no message)"
	}
	return s
}

// render writes the configuration file's text.
func render(a answers) ([]byte, error) {
	p := map[string]any{"base_url": a.p.baseURL, "model": a.p.model, "api_key_env": a.keyEnv}
	if a.key != "" {
		p["api_key"] = a.key
		delete(p, "api_key_env")
	}
	doc := map[string]any{
		"provider":  map[string]any{"active": a.p.name},
		"providers": map[string]any{a.p.name: p},
	}
	b, err := toml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encoding the configuration: %w", err)
	}
	return append([]byte("# Written by scv setup; every key: docs/configuration.md\n"), b...), nil
}
