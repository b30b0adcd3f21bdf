package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/paths"
)

// FuzzLoad loads arbitrary bytes as the user file, then as the project
// file. Load must never panic; a success must satisfy the invariants
// validation promises, and an error must be a located *Error.
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"",
		"[tools]\napproval_policy = \"never\"\n",
		"[provider]\nactive = \"openai\"\n[providers.openai]\nmodel = \"gpt-4.1\"\nheaders = { X = \"y\" }\n",
		"providers = { a = { b = { c = 1 } } }\n",
		"[[providers]]\n[tools\n",
		"a.b.c.d = [1, { x = 2 }]\n\"quoted.key\" = 1\n",
	} {
		f.Add([]byte(seed))
	}
	base := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		dir, err := os.MkdirTemp(base, "case")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		home := filepath.Join(dir, "home")
		ws := filepath.Join(dir, "ws")
		for _, d := range []string{home, paths.ProjectDir(ws)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		env := paths.MapEnv(map[string]string{"OPENAI_API_KEY": "sk-fuzz"})

		// As the user file.
		if err := os.WriteFile(paths.ConfigFile(home), data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, _, err := Load(LoadOptions{Home: home, Env: env})
		check(t, c, err)
		if err := os.Remove(paths.ConfigFile(home)); err != nil {
			t.Fatal(err)
		}

		// As the project file: it can never configure a provider.
		if err := os.WriteFile(paths.ProjectConfigFile(ws), data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, _, err = Load(LoadOptions{Home: home, Workspace: ws, Env: env})
		check(t, c, err)
		if err == nil {
			if name, p, _ := c.ActiveProvider(); name != ImplicitProvider || len(c.Providers) != 1 || p.BaseURL != DefaultOpenAIBaseURL {
				t.Fatalf("a project file changed the provider: %q %v", name, p)
			}
			if !reflect.DeepEqual(c.Agent, Defaults().Agent) || !reflect.DeepEqual(c.Web, Defaults().Web) || len(c.Agents) != 0 {
				t.Fatalf("a project file changed the agent: %+v", c.Agent)
			}
		}
	})
}

func check(t *testing.T, c *Config, err error) {
	t.Helper()
	if err != nil {
		if c != nil {
			t.Fatal("config returned with an error")
		}
		var ce *Error
		if !errors.As(err, &ce) || err.Error() == "" {
			t.Fatalf("error %T %q is not a *config.Error", err, err)
		}
		if ce.File == "" && ce.Env == "" {
			t.Fatalf("error without a file: %v", err)
		}
		return
	}
	name, p, isDemo := c.ActiveProvider()
	if !isDemo {
		if _, ok := c.Providers[name]; !ok {
			t.Fatalf("active provider %q does not exist", name)
		}
		if p.Kind != KindOpenAI || p.Model == "" || p.TimeoutSeconds < 1 || p.ContextMaxTokens < 1 || p.MaxRetries < 0 {
			t.Fatalf("invalid provider accepted: %v", p)
		}
	}
	tl := c.Tools
	if !validApprovalPolicy(tl.ApprovalPolicy) || tl.OutputLimitBytes < 1 || tl.CommandTimeoutSeconds < 1 || tl.MaxTimeoutSeconds < tl.CommandTimeoutSeconds || c.Agent.MaxSteps < 1 {
		t.Fatalf("invalid values accepted: %+v %+v", tl, c.Agent)
	}
	for _, k := range c.Keys() {
		if _, ok := c.Sources[k]; !ok {
			t.Fatalf("no source for %s", k)
		}
	}
	for _, name := range c.ProviderNames() {
		if s := c.Providers[name].String(); strings.Contains(s, "sk-") && c.Providers[name].APIKey != "" && strings.Contains(s, c.Providers[name].APIKey) {
			t.Fatalf("String reveals the key: %s", s)
		}
	}
}
