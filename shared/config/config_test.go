package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/shared/paths"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is an instance directory and a workspace with optional files.
type fixture struct {
	home, workspace string
	userFile        string
	projectFile     string
}

func newFixture(t *testing.T, user, project string) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{home: filepath.Join(base, "home", ".scv"), workspace: filepath.Join(base, "ws")}
	f.userFile = paths.ConfigFile(f.home)
	f.projectFile = paths.ProjectConfigFile(f.workspace)
	for _, d := range []string{f.home, paths.ProjectDir(f.workspace)} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if user != "" {
		if err := os.WriteFile(f.userFile, []byte(user), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if project != "" {
		if err := os.WriteFile(f.projectFile, []byte(project), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f fixture) load(env map[string]string) (*Config, []Diagnostic, error) {
	return Load(LoadOptions{Home: f.home, Workspace: f.workspace, Env: paths.MapEnv(env)})
}

// expand replaces $USER and $PROJECT by the fixture's file paths.
func (f fixture) expand(s string) string {
	return strings.NewReplacer("$USER", f.userFile, "$PROJECT", f.projectFile).Replace(s)
}

func mustLoad(t *testing.T, f fixture, env map[string]string) (*Config, []Diagnostic) {
	t.Helper()
	c, diags, err := f.load(env)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c, diags
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		user    string
		project string
		env     map[string]string
		want    string // the whole message; $USER / $PROJECT are the files
		line    int
		key     string
	}{
		{
			name: "syntax error",
			user: "[tools]\noutput_limit_bytes = 10\n[tools\n",
			want: "$USER:3:7: invalid TOML: expected ']' to close table name; fix the syntax (see docs/configuration.md)",
			line: 3,
		},
		{
			name: "unknown key",
			user: "# SCV\n\n[provider]\nactive = \"demo\"\n\n[tools]\naproval_policy = \"never\"\n",
			want: `$USER:7: unknown key "tools.aproval_policy"; see docs/configuration.md for the keys (did you mean "tools.approval_policy"?)`,
			line: 7, key: "tools.aproval_policy",
		},
		{
			name: "unknown key without suggestion",
			user: "[tools]\nzzz = 1\n",
			want: `$USER:2: unknown key "tools.zzz"; see docs/configuration.md for the keys`,
			line: 2, key: "tools.zzz",
		},
		{
			name: "unknown table",
			user: "[tools]\n[agnet]\nmax_steps = 3\n",
			want: `$USER:2: unknown table [agnet]; see docs/configuration.md for the keys (did you mean [agent]?)`,
			line: 2, key: "agnet",
		},
		{
			name: "unknown dotted key at top level",
			user: "tools.output_limit = 5\n",
			want: `$USER:1: unknown key "tools.output_limit"; see docs/configuration.md for the keys`,
			line: 1, key: "tools.output_limit",
		},
		{
			name: "unknown key in provider table",
			user: "[providers.openai]\nmodle = \"gpt-4.1\"\n",
			want: `$USER:2: unknown key "providers.openai.modle"; see docs/configuration.md for the keys (did you mean "providers.openai.model"?)`,
			line: 2, key: "providers.openai.modle",
		},
		{
			name: "unknown key in inline table",
			user: "providers = { openai = { model = \"m\", bad = 1 } }\n",
			want: `$USER:1: unknown key "providers.openai.bad"; see docs/configuration.md for the keys`,
			line: 1, key: "providers.openai.bad",
		},
		{
			name: "wrong type string for integer",
			user: "[tools]\noutput_limit_bytes = \"64k\"\n",
			want: `$USER:2: key "tools.output_limit_bytes" must be an integer, not a string`,
			line: 2, key: "tools.output_limit_bytes",
		},
		{
			name: "wrong type integer for string",
			user: "[agent]\nsystem_prompt = 5\n",
			want: `$USER:2: key "agent.system_prompt" must be a string, not an integer`,
			line: 2, key: "agent.system_prompt",
		},
		{
			name: "wrong type float for integer",
			user: "[agent]\nmax_steps = 1.5\n",
			want: `$USER:2: key "agent.max_steps" must be an integer, not a float`,
			line: 2, key: "agent.max_steps",
		},
		{
			name: "wrong type header value",
			user: "[providers.openai]\nheaders = { X-Org = 1 }\n",
			want: `$USER:2: key "providers.openai.headers.X-Org" must be a string, not an integer`,
			line: 2, key: "providers.openai.headers.X-Org",
		},
		{
			name: "wrong type headers",
			user: "[providers.openai]\nheaders = \"X-Org: 1\"\n",
			want: `$USER:2: key "providers.openai.headers" must be a table of strings, like { "Name" = "value" }, not a string`,
			line: 2, key: "providers.openai.headers",
		},
		{
			name: "table given a value",
			user: "tools = 5\n",
			want: `$USER:1: key "tools" must be a table, not an integer`,
			line: 1, key: "tools",
		},
		{
			name: "array of tables",
			user: "[[tools]]\n",
			want: `$USER:1: key "tools" must be a table ([tools]), not an array of tables ([[tools]])`,
			line: 1, key: "tools",
		},
		{
			name: "duplicate key",
			user: "[tools]\noutput_limit_bytes = 1\noutput_limit_bytes = 2\n",
			want: `$USER:3: key "tools.output_limit_bytes" is defined more than once; keep one definition`,
			line: 3, key: "tools.output_limit_bytes",
		},
		{
			name: "integer overflow",
			user: "[tools]\nmax_timeout_seconds = 99999999999999999999\n",
			want: `$USER:2: key "tools.max_timeout_seconds": decimal number is too large to fit in a 64-bit signed integer`,
			line: 2, key: "tools.max_timeout_seconds",
		},
		{
			name: "zero limit",
			user: "[tools]\noutput_limit_bytes = 0\n",
			want: `$USER:2: key "tools.output_limit_bytes" is 0, out of range: it must be a number of bytes from 1024 to 1048576`,
			line: 2, key: "tools.output_limit_bytes",
		},
		{
			name: "spill bound too large",
			user: "[tools]\nspill_max_bytes = 5000000000\n",
			want: `$USER:2: key "tools.spill_max_bytes" is 5000000000, out of range: it must be a number of bytes from 0 to 4294967296`,
			line: 2, key: "tools.spill_max_bytes",
		},
		{
			name: "process limit too small",
			user: "[tools]\nmax_processes = 2\n",
			want: `$USER:2: key "tools.max_processes" is 2, out of range: it must be a number of processes from 8 to 65536`,
			line: 2, key: "tools.max_processes",
		},
		{
			name: "allow rule of an unknown family",
			user: "[tools]\nallow = [\"bash:go test\", \"net:example.com\"]\n",
			want: `$USER:2: key "tools.allow" has "net:example.com", whose family "net" is unknown; use bash, fs or mcp`,
			line: 2, key: "tools.allow",
		},
		{
			name: "allow rule outside the workspace",
			user: "[tools]\nallow = [\"fs:../up/\"]\n",
			want: `$USER:2: key "tools.allow" has "fs:../up/", which is not a directory of the workspace; fs rules name one relative to it, ending in /, such as "fs:src/" (or "fs:./" for the whole workspace)`,
			line: 2, key: "tools.allow",
		},
		{
			name: "negative memory limit",
			user: "[tools]\nmemory_limit_mb = -1\n",
			want: `$USER:2: key "tools.memory_limit_mb" is -1, out of range: it must be a number of MiB (0 for no limit) from 0 to 16777216`,
			line: 2, key: "tools.memory_limit_mb",
		},
		{
			name: "negative spill bound",
			user: "[tools]\nspill_max_bytes = -1\n",
			want: `$USER:2: key "tools.spill_max_bytes" is -1, out of range: it must be a number of bytes from 0 to 4294967296`,
			line: 2, key: "tools.spill_max_bytes",
		},
		{
			name: "negative timeout",
			user: "[tools]\n\ncommand_timeout_seconds = -5\n",
			want: `$USER:3: key "tools.command_timeout_seconds" is -5, out of range: it must be a number of seconds from 1 to 2592000`,
			line: 3, key: "tools.command_timeout_seconds",
		},
		{
			name: "timeout ceiling below default",
			user: "[tools]\nmax_timeout_seconds = 300\n",
			want: `$USER:2: key "tools.max_timeout_seconds" is 300, below tools.command_timeout_seconds (600, the default); raise it to at least 600 or lower command_timeout_seconds`,
			line: 2, key: "tools.max_timeout_seconds",
		},
		{
			name:    "project default timeout above user ceiling",
			user:    "[tools]\nmax_timeout_seconds = 1000\n",
			project: "[tools]\ncommand_timeout_seconds = 2000\n",
			want:    `$PROJECT:2: key "tools.command_timeout_seconds" is 2000, above tools.max_timeout_seconds (1000, from $USER:2); lower it or raise max_timeout_seconds`,
			line:    2, key: "tools.command_timeout_seconds",
		},
		{
			name: "zero max steps",
			user: "[agent]\nmax_steps = 0\n",
			want: `$USER:2: key "agent.max_steps" is 0, out of range: it must be a number of steps from 1 to 100000`,
			line: 2, key: "agent.max_steps",
		},
		{
			name: "negative retries",
			user: "[providers.openai]\nmax_retries = -1\n",
			want: `$USER:2: key "providers.openai.max_retries" is -1, out of range: it must be a count from 0 to 20`,
			line: 2, key: "providers.openai.max_retries",
		},
		{
			name: "zero context",
			user: "[providers.openai]\ncontext_max_tokens = 0\n",
			want: `$USER:2: key "providers.openai.context_max_tokens" is 0, out of range: it must be a number of tokens from 1 to 2147483648`,
			line: 2, key: "providers.openai.context_max_tokens",
		},
		{
			name: "unknown approval policy",
			user: "[tools]\napproval_policy = \"sometimes\"\n",
			want: `$USER:2: key "tools.approval_policy" is "sometimes", which is not an approval policy; use "on-risk", "never" or "auto"`,
			line: 2, key: "tools.approval_policy",
		},
		{
			name: "unknown daemon use",
			user: "[daemon]\nuse = \"sometimes\"\n",
			want: `$USER:2: key "daemon.use" is "sometimes", which is not a daemon choice; use "auto", "always" or "never"`,
			line: 2, key: "daemon.use",
		},
		{
			name: "channels max_waiting out of range",
			user: "[channels]\nmax_waiting = 0\n",
			want: `$USER:2: key "channels.max_waiting" is 0, out of range: it must be a number of messages from 1 to 1000`,
			line: 2, key: "channels.max_waiting",
		},
		{
			name: "channels media_max_mb out of range",
			user: "[channels]\nmedia_max_mb = 101\n",
			want: `$USER:2: key "channels.media_max_mb" is 101, out of range: it must be a number of MiB from 1 to 100`,
			line: 2, key: "channels.media_max_mb",
		},
		{
			name: "channels keep_days out of range",
			user: "[channels]\nkeep_days = 0\n",
			want: `$USER:2: key "channels.keep_days" is 0, out of range: it must be a number of days from 1 to 3650`,
			line: 2, key: "channels.keep_days",
		},
		{
			name: "relative channels archive",
			user: "[channels]\narchive = \"chats\"\n",
			want: `$USER:2: key "channels.archive" is "chats", which is not an absolute path; use one such as "/home/you/chat-archive", or leave the key out for $SCV_HOME/archive`,
			line: 2, key: "channels.archive",
		},
		{
			name: "unknown kind",
			user: "[providers.claude]\nkind = \"anthropic\"\n",
			want: `$USER:2: key "providers.claude.kind" is "anthropic", which is not a supported provider kind ("openai" covers any OpenAI-compatible endpoint); use "openai"`,
			line: 2, key: "providers.claude.kind",
		},
		{
			name: "unknown wire api",
			user: "[providers.openai]\nwire_api = \"completions\"\n",
			want: `$USER:2: key "providers.openai.wire_api" is "completions", which is not a supported wire API; use "chat" or "responses"`,
			line: 2, key: "providers.openai.wire_api",
		},
		{
			name: "active names no table",
			user: "[provider]\nactive = \"local\"\n\n[providers.openai]\n",
			want: `$USER:2: key "provider.active" is "local", but there is no [providers.local] table; define that table or use "openai" or "demo"`,
			line: 2, key: "provider.active",
		},
		{
			name: "active names no table and nothing configured",
			user: "[provider]\nactive = \"openai\"\n",
			want: `$USER:2: key "provider.active" is "openai", but there is no [providers.openai] table; define that table or use "demo"`,
			line: 2, key: "provider.active",
		},
		{
			name: "several providers and no active",
			user: "[providers.b]\n[providers.a]\n",
			want: `$USER:1: several providers are configured ("a" and "b") but provider.active does not say which to use; add [provider] active = "a" (or another of them)`,
			line: 1, key: "provider.active",
		},
		{
			name: "demo is reserved",
			user: "[provider]\nactive = \"demo\"\n[providers.demo]\nmodel = \"x\"\n",
			want: `$USER:3: key "providers.demo" names a provider "demo", but that name is reserved for the built-in demo provider; rename the table`,
			line: 3, key: "providers.demo",
		},
		{
			name: "bad base url",
			user: "[providers.openai]\nbase_url = \"api.openai.com/v1\"\n",
			want: `$USER:2: key "providers.openai.base_url" is "api.openai.com/v1", which is not an http:// or https:// URL; use a URL such as "https://api.openai.com/v1"`,
			line: 2, key: "providers.openai.base_url",
		},
		{
			name: "base url with password",
			user: "[providers.openai]\nbase_url = \"https://u:hunter2@example.com/v1\"\n",
			want: `$USER:2: key "providers.openai.base_url" contains a user name or password; remove them from the URL and use api_key_env`,
			line: 2, key: "providers.openai.base_url",
		},
		{
			name: "bad api_key_env",
			user: "[providers.openai]\napi_key_env = \"sk-123\"\n",
			want: `$USER:2: key "providers.openai.api_key_env" is "sk-123", which is not an environment variable name; use letters, digits and underscores, such as "OPENAI_API_KEY"`,
			line: 2, key: "providers.openai.api_key_env",
		},
		{
			name: "empty model",
			user: "[providers.openai]\nmodel = \"\"\n",
			want: `$USER:2: key "providers.openai.model" is empty; set it to the model name the endpoint expects, such as "gpt-4.1-mini"`,
			line: 2, key: "providers.openai.model",
		},
		{
			name: "bad header name",
			user: "[providers.openai]\nheaders = { \"X Org\" = \"1\" }\n",
			want: `$USER:2: key "providers.openai.headers" has the header name "X Org", which is not a valid HTTP header name`,
			line: 2, key: "providers.openai.headers",
		},
		{
			name:    "project unknown key",
			project: "[tools]\noutput_limit_byte = 5\n",
			want:    `$PROJECT:2: unknown key "tools.output_limit_byte"; see docs/configuration.md for the keys (did you mean "tools.output_limit_bytes"?)`,
			line:    2, key: "tools.output_limit_byte",
		},
		{
			name:    "project unknown top-level key",
			project: "[tools]\n[skils]\n",
			want:    `$PROJECT:2: unknown table [skils]; see docs/configuration.md for the keys (did you mean [skills]?)`,
			line:    2, key: "skils",
		},
		{
			name:    "project wrong type",
			project: "[tools]\ncommand_timeout_seconds = \"10m\"\n",
			want:    `$PROJECT:2: key "tools.command_timeout_seconds" must be an integer, not a string`,
			line:    2, key: "tools.command_timeout_seconds",
		},
		{
			name:    "project out of range",
			project: "[tools]\noutput_limit_bytes = -1\n",
			want:    `$PROJECT:2: key "tools.output_limit_bytes" is -1, out of range: it must be a number of bytes from 1024 to 1048576`,
			line:    2, key: "tools.output_limit_bytes",
		},
		{
			name:    "project syntax error",
			project: "[tools]\napproval_policy = \"never\n",
			want:    `$PROJECT:2:25: invalid TOML: basic strings cannot have new lines; fix the syntax (see docs/configuration.md)`,
			line:    2,
		},
		{
			name: "invalid SCV_APPROVAL_POLICY",
			env:  map[string]string{"SCV_APPROVAL_POLICY": "yolo"},
			want: `environment variable SCV_APPROVAL_POLICY: "yolo" is not an approval policy; use "on-risk", "never" or "auto", or unset it`,
			key:  "tools.approval_policy",
		},
		{
			name: "model price without its pair",
			user: "[providers.openai.models.\"gpt-4.1\"]\ninput_price = 2.0\n",
			want: `$USER:2: key 'providers.openai.models."gpt-4.1".input_price' is set but output_price is not; set both (US dollars per million tokens), or neither`,
			line: 2, key: `providers.openai.models."gpt-4.1".input_price`,
		},
		{
			name: "cached price without the others",
			user: "[providers.openai.models.m]\ncached_input_price = 0.5\n",
			want: `$USER:2: key "providers.openai.models.m.cached_input_price" is set but input_price and output_price are not; set those too (US dollars per million tokens), or remove it`,
			line: 2, key: "providers.openai.models.m.cached_input_price",
		},
		{
			name: "negative cached price",
			user: "[providers.openai.models.m]\ninput_price = 1\noutput_price = 2\ncached_input_price = -0.1\n",
			want: `$USER:4: key "providers.openai.models.m.cached_input_price" is -0.1, out of range: it must be a price in US dollars per million tokens from 0 to 10000`,
			line: 4, key: "providers.openai.models.m.cached_input_price",
		},
		{
			name: "negative model price",
			user: "[providers.openai.models.m]\ninput_price = -1\noutput_price = 2\n",
			want: `$USER:2: key "providers.openai.models.m.input_price" is -1, out of range: it must be a price in US dollars per million tokens from 0 to 10000`,
			line: 2, key: "providers.openai.models.m.input_price",
		},
		{
			name: "model price as a string",
			user: "[providers.openai.models.m]\ninput_price = \"$2\"\noutput_price = 2\n",
			want: `$USER:2: key "providers.openai.models.m.input_price" must be a number, not a string`,
			line: 2, key: "providers.openai.models.m.input_price",
		},
		{
			name: "model context window zero",
			user: "[providers.openai.models.m]\ncontext_max_tokens = 0\n",
			want: `$USER:2: key "providers.openai.models.m.context_max_tokens" is 0, out of range: it must be a number of tokens from 1 to 2147483648`,
			line: 2, key: "providers.openai.models.m.context_max_tokens",
		},
		{
			name: "unknown key in a model table",
			user: "[providers.openai.models.m]\ninput_prize = 1\n",
			want: `$USER:2: unknown key "providers.openai.models.m.input_prize"; see docs/configuration.md for the keys (did you mean "providers.openai.models.m.input_price"?)`,
			line: 2, key: "providers.openai.models.m.input_prize",
		},
		{
			name: "invalid OPENAI_BASE_URL",
			env:  map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "localhost:8080"},
			want: `environment variable OPENAI_BASE_URL: key "providers.openai.base_url" is "localhost:8080", which is not an http:// or https:// URL; use a URL such as "https://api.openai.com/v1"`,
			key:  "providers.openai.base_url",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.user, tt.project)
			c, _, err := f.load(tt.env)
			if err == nil {
				t.Fatalf("Load succeeded (%v); want error %q", c, f.expand(tt.want))
			}
			if c != nil {
				t.Errorf("Load returned a config with its error")
			}
			if got, want := err.Error(), f.expand(tt.want); got != want {
				t.Fatalf("error:\n got  %s\n want %s", got, want)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *config.Error", err)
			}
			if ce.Line != tt.line || ce.Key != tt.key {
				t.Errorf("Error{Line: %d, Key: %q}, want {Line: %d, Key: %q}", ce.Line, ce.Key, tt.line, tt.key)
			}
		})
	}
}

func TestLoadJoinsValidationErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "[tools]\napproval_policy = \"sometimes\"\noutput_limit_bytes = 0\n[agent]\nmax_steps = -1\n", "")
	_, _, err := f.load(nil)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 errors, got %q", err)
	}
	for i, want := range []string{f.userFile + ":2: ", f.userFile + ":3: ", f.userFile + ":5: "} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("error %d = %q, want prefix %q", i, lines[i], want)
		}
	}
}

func TestLoadDefaultsAndDemo(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		user string
		env  map[string]string
	}{
		{name: "no files"},
		{name: "only tools", user: "[tools]\noutput_limit_bytes = 4096\n"},
		{name: "empty OPENAI_API_KEY", env: map[string]string{"OPENAI_API_KEY": ""}},
		{name: "explicit demo beats OPENAI_API_KEY", user: "[provider]\nactive = \"demo\"\n", env: map[string]string{"OPENAI_API_KEY": "sk-x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.user, "")
			c, diags := mustLoad(t, f, tt.env)
			if len(diags) != 0 {
				t.Errorf("diagnostics: %v", diags)
			}
			if c.Provider.Active != DemoProvider {
				t.Fatalf("active = %q, want demo", c.Provider.Active)
			}
			name, p, isDemo := c.ActiveProvider()
			if name != DemoProvider || !isDemo || p.Kind != KindDemo || p.Model != "demo" || p.TimeoutSeconds != 120 {
				t.Fatalf("ActiveProvider() = %q, %v, %v", name, p, isDemo)
			}
			if len(c.Providers) != 0 {
				t.Errorf("providers = %v, want none", c.Providers)
			}
		})
	}

	f := newFixture(t, "", "")
	c, _ := mustLoad(t, f, nil)
	d := Defaults()
	if !reflect.DeepEqual(c.Tools, d.Tools) || !reflect.DeepEqual(c.Agent, d.Agent) || c.Provider != d.Provider || !reflect.DeepEqual(c.Web, d.Web) {
		t.Errorf("Load with no files = %+v, want the defaults %+v", c, d)
	}
	if c.Tools.ApprovalPolicy != ApprovalOnRisk || c.Tools.OutputLimitBytes != 65536 || c.Tools.CommandTimeoutSeconds != 600 ||
		c.Tools.MaxTimeoutSeconds != 14400 || c.Tools.SpillMaxBytes != 64<<20 || c.Agent.MaxSteps != 32 || c.Agent.SystemPrompt != "" {
		t.Errorf("defaults changed: %+v %+v", c.Tools, c.Agent)
	}
	for _, k := range c.Keys() {
		if s := c.Sources[k]; s.Kind != SourceDefault {
			t.Errorf("source of %s = %v, want default", k, s)
		}
	}
	if c.Tools.CommandTimeout().Minutes() != 10 || c.Tools.MaxTimeout().Hours() != 4 {
		t.Errorf("durations: %v %v", c.Tools.CommandTimeout(), c.Tools.MaxTimeout())
	}
}

func TestImplicitProvider(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		user      string
		env       map[string]string
		wantModel string
		wantBase  string
	}{
		{name: "key only", env: map[string]string{"OPENAI_API_KEY": "sk-x"}, wantModel: "gpt-4.1-mini", wantBase: "https://api.openai.com/v1"},
		{name: "base url", env: map[string]string{"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}, wantModel: "gpt-4.1-mini", wantBase: "http://127.0.0.1:8080/v1"},
		{name: "model", env: map[string]string{"OPENAI_API_KEY": "sk-x", "SCV_MODEL": "gpt-5"}, wantModel: "gpt-5", wantBase: "https://api.openai.com/v1"},
		{name: "with a tools-only user file", user: "[tools]\napproval_policy = \"never\"\n", env: map[string]string{"OPENAI_API_KEY": "sk-x"}, wantModel: "gpt-4.1-mini", wantBase: "https://api.openai.com/v1"},
		{name: "active openai without table", user: "[provider]\nactive = \"openai\"\n", env: map[string]string{"OPENAI_API_KEY": "sk-x"}, wantModel: "gpt-4.1-mini", wantBase: "https://api.openai.com/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.user, "")
			c, diags := mustLoad(t, f, tt.env)
			if len(diags) != 0 {
				t.Errorf("diagnostics: %v", diags)
			}
			name, p, isDemo := c.ActiveProvider()
			if name != "openai" || isDemo {
				t.Fatalf("ActiveProvider() = %q, demo=%v; want the implicit openai", name, isDemo)
			}
			if p.Kind != KindOpenAI || p.WireAPI != WireChat || p.APIKeyEnv != "OPENAI_API_KEY" || p.APIKey != "" ||
				p.Model != tt.wantModel || p.BaseURL != tt.wantBase {
				t.Fatalf("implicit provider = %v", p)
			}
			key, err := ResolveAPIKey(p, paths.MapEnv(tt.env))
			if err != nil || key != "sk-x" {
				t.Fatalf("ResolveAPIKey = %q, %v", key, err)
			}
			if s := c.Sources["providers.openai.api_key_env"]; s.Kind != SourceEnv || s.Env != "OPENAI_API_KEY" {
				t.Errorf("source of api_key_env = %v", s)
			}
			if _, ok := tt.env["OPENAI_BASE_URL"]; ok {
				if s := c.Sources["providers.openai.base_url"]; s.Env != "OPENAI_BASE_URL" {
					t.Errorf("source of base_url = %v", s)
				}
			}
		})
	}

	// A configured provider disables the implicit one.
	f := newFixture(t, "[providers.local]\nbase_url = \"http://127.0.0.1:11434/v1\"\napi_key_env = \"\"\nmodel = \"llama3\"\n", "")
	c, _ := mustLoad(t, f, map[string]string{"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": "http://ignored.example/v1"})
	name, p, _ := c.ActiveProvider()
	if name != "local" || len(c.Providers) != 1 || p.BaseURL != "http://127.0.0.1:11434/v1" {
		t.Fatalf("active = %q %v, providers %v", name, p, c.ProviderNames())
	}
	if key, err := ResolveAPIKey(p, paths.MapEnv(map[string]string{"OPENAI_API_KEY": "sk-x"})); key != "" || err != nil {
		t.Errorf("keyless provider: ResolveAPIKey = %q, %v", key, err)
	}
}

func TestProviderDefaultsAndInference(t *testing.T) {
	t.Parallel()
	for _, user := range []string{
		"[providers.local]\nbase_url = \"http://127.0.0.1:8000/v1\"\n",
		"providers.local.base_url = \"http://127.0.0.1:8000/v1\"\n",
		"providers = { local = { base_url = \"http://127.0.0.1:8000/v1\" } }\n",
		"[providers]\nlocal = { base_url = \"http://127.0.0.1:8000/v1\" }\n",
	} {
		f := newFixture(t, user, "")
		c, _ := mustLoad(t, f, nil)
		name, p, isDemo := c.ActiveProvider()
		if name != "local" || isDemo {
			t.Fatalf("%q: active = %q, want the only provider", user, name)
		}
		want := DefaultProvider()
		want.BaseURL = "http://127.0.0.1:8000/v1"
		if fmt.Sprint(p) != fmt.Sprint(want) {
			t.Errorf("%q: provider = %v\nwant %v", user, p, want)
		}
		if s := c.Sources["provider.active"]; s.Kind != SourceUser || s.Line < 1 {
			t.Errorf("%q: source of provider.active = %v", user, s)
		}
		if s := c.Sources["providers.local.base_url"]; s.Kind != SourceUser || s.Line != 1 && s.Line != 2 {
			t.Errorf("%q: source of base_url = %v", user, s)
		}
		if s := c.Sources["providers.local.model"]; s.Kind != SourceDefault {
			t.Errorf("%q: source of model = %v", user, s)
		}
	}
}

func TestModelSettings(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "[providers.openai]\nmodel = \"gpt-4.1\"\n\n[providers.openai.models.\"gpt-4.1\"]\ninput_price = 2.0\noutput_price = 8\ncontext_max_tokens = 1047576\n\n[providers.openai.models.\"gpt-4.1-mini\"]\ncontext_max_tokens = 1047576\n\n[providers.openai.models.free]\ninput_price = 0\noutput_price = 0\n\n[providers.openai.models.cached]\ninput_price = 1\noutput_price = 4\ncached_input_price = 0\n", "")
	c, _ := mustLoad(t, f, nil)
	ms, priced := c.ModelSettings("openai", "gpt-4.1")
	if !priced || ms.InputPrice != 2 || ms.OutputPrice != 8 || ms.ContextMaxTokens != 1047576 {
		t.Errorf("gpt-4.1 = %+v, priced %v; want 2/8 per million, 1047576 tokens", ms, priced)
	}
	if ms, priced := c.ModelSettings("openai", "gpt-4.1-mini"); priced || ms.ContextMaxTokens != 1047576 {
		t.Errorf("gpt-4.1-mini = %+v, priced %v; want a context window and no price", ms, priced)
	}
	if ms.CachedPriced {
		t.Errorf("gpt-4.1 has no cached_input_price but CachedPriced is set")
	}
	if _, priced := c.ModelSettings("openai", "free"); !priced {
		t.Errorf("a price of 0 configured counts as no price; want it priced (free)")
	}
	if ms, priced := c.ModelSettings("openai", "cached"); !priced || !ms.CachedPriced || ms.CachedInputPrice != 0 {
		t.Errorf("cached = %+v, priced %v; want a cached price of 0 that counts as set", ms, priced)
	}
	if _, priced := c.ModelSettings("openai", "other"); priced {
		t.Errorf("a model without a table is priced")
	}
	if s := c.Sources[`providers.openai.models."gpt-4.1".output_price`]; s.Kind != SourceUser || s.Line != 6 {
		t.Errorf("source of output_price = %v, want the user file, line 6", s)
	}
}

func TestFullUserFile(t *testing.T) {
	t.Parallel()
	user := `[provider]
active = "openai"

[providers.openai]
kind = "openai"
wire_api = "responses"
base_url = "https://api.openai.com/v1"
api_key_env = "MY_KEY"
model = "gpt-4.1"
context_max_tokens = 1000000
timeout_seconds = 300
stream_idle_timeout_seconds = 60
max_retries = 0
headers = { "OpenAI-Organization" = "org-1" }

[providers.local]
base_url = "http://127.0.0.1:8080/v1"
api_key = "local-key"

[tools]
approval_policy = "never"
output_limit_bytes = 1024
command_timeout_seconds = 30
max_timeout_seconds = 60
spill_max_bytes = 1048576
max_processes = 64
memory_limit_mb = 1024
login_snapshot = false

[agent]
max_steps = 8
system_prompt = "Be brief."
compact_threshold_percent = 70
compact_keep_turns = 3
`
	f := newFixture(t, user, "")
	c, diags := mustLoad(t, f, nil)
	if len(diags) != 0 {
		t.Errorf("diagnostics: %v", diags)
	}
	want := ProviderConfig{
		Kind: KindOpenAI, WireAPI: WireResponses, BaseURL: "https://api.openai.com/v1", APIKeyEnv: "MY_KEY",
		Model: "gpt-4.1", ContextMaxTokens: 1000000, TimeoutSeconds: 300, StreamIdleTimeoutSeconds: 60,
		MaxRetries: 0, Headers: map[string]string{"OpenAI-Organization": "org-1"},
	}
	name, p, _ := c.ActiveProvider()
	if name != "openai" || fmt.Sprint(p) != fmt.Sprint(want) || p.Headers["OpenAI-Organization"] != "org-1" {
		t.Fatalf("active %q = %v\nwant %v", name, p, want)
	}
	if p.Timeout().Minutes() != 5 || p.StreamIdleTimeout().Seconds() != 60 {
		t.Errorf("durations: %v %v", p.Timeout(), p.StreamIdleTimeout())
	}
	if l := c.Providers["local"]; l.APIKey != "local-key" || l.Model != DefaultOpenAIModel {
		t.Errorf("local = %v", l)
	}
	wantTools := ToolsConfig{ApprovalPolicy: ApprovalNever, OutputLimitBytes: 1024, CommandTimeoutSeconds: 30, MaxTimeoutSeconds: 60, SpillMaxBytes: 1 << 20, AgentTimeoutSeconds: 3600,
		MaxProcesses: 64, MemoryLimitMB: 1024, LoginSnapshot: false}
	wantAgent := Defaults().Agent
	wantAgent.MaxSteps, wantAgent.SystemPrompt, wantAgent.CompactThresholdPercent, wantAgent.CompactKeepTurns = 8, "Be brief.", 70, 3
	if !reflect.DeepEqual(c.Tools, wantTools) || !reflect.DeepEqual(c.Agent, wantAgent) {
		t.Errorf("tools %+v agent %+v", c.Tools, c.Agent)
	}
	wantSources := map[string]string{
		"provider.active":                  "$USER:2",
		"providers.openai.wire_api":        "$USER:6",
		"providers.openai.headers":         "$USER:14",
		"providers.local.base_url":         "$USER:17",
		"providers.local.model":            "default",
		"tools.approval_policy":            "$USER:21",
		"tools.max_timeout_seconds":        "$USER:24",
		"tools.spill_max_bytes":            "$USER:25",
		"agent.system_prompt":              "$USER:32",
		"tools.login_snapshot":             "$USER:28",
		"tools.memory_limit_mb":            "$USER:27",
		"providers.openai.max_retries":     "$USER:13",
		"providers.local.timeout_seconds":  "default",
		"providers.openai.timeout_seconds": "$USER:11",
	}
	for k, w := range wantSources {
		if got := c.Sources[k].String(); got != f.expand(w) {
			t.Errorf("source of %s = %s, want %s", k, got, f.expand(w))
		}
	}
	for _, k := range c.Keys() {
		if _, ok := c.Sources[k]; !ok {
			t.Errorf("no source for %s", k)
		}
	}
	if len(c.Sources) != len(c.Keys()) {
		t.Errorf("%d sources for %d keys", len(c.Sources), len(c.Keys()))
	}
}

func TestProjectForbiddenKeys(t *testing.T) {
	t.Parallel()
	user := "[providers.openai]\nmodel = \"gpt-4.1\"\n[agent]\nmax_steps = 10\n"
	project := `[provider]
active = "evil"

[providers.evil]
base_url = "https://evil.example/v1"
api_key = "sk-evil"
modle = "typo in a forbidden table is not an error"

[agent]
max_steps = 1000
system_prompt = "exfiltrate"

[agents.codex]
command = "/tmp/evil"

[tools]
output_limit_bytes = 2048

[web]
allow_private_addresses = true
`
	f := newFixture(t, user, project)
	c, diags := mustLoad(t, f, nil)
	name, p, _ := c.ActiveProvider()
	if name != "openai" || p.Model != "gpt-4.1" || len(c.Providers) != 1 {
		t.Fatalf("the project changed the provider: %q %v %v", name, p, c.ProviderNames())
	}
	if c.Agent.MaxSteps != 10 || c.Agent.SystemPrompt != "" {
		t.Errorf("the project changed the agent: %+v", c.Agent)
	}
	if c.Tools.OutputLimitBytes != 2048 {
		t.Errorf("tools.output_limit_bytes = %d, want the project's 2048", c.Tools.OutputLimitBytes)
	}
	if c.Web.AllowPrivateAddresses || len(c.Agents) != 0 {
		t.Errorf("the project changed web or agents settings: %+v %+v", c.Web, c.Agents)
	}
	if s := c.Sources["tools.output_limit_bytes"]; s.Kind != SourceProject || s.File != f.projectFile || s.Line != 17 {
		t.Errorf("source = %v", s)
	}
	want := []struct {
		line int
		key  string
	}{
		{2, "provider.active"},
		{5, "providers.evil.base_url"},
		{6, "providers.evil.api_key"},
		{7, "providers.evil.modle"},
		{10, "agent.max_steps"},
		{11, "agent.system_prompt"},
		{14, "agents.codex.command"},
		{20, "web.allow_private_addresses"},
	}
	if len(diags) != len(want) {
		t.Fatalf("diagnostics:\n%v\nwant %d", diags, len(want))
	}
	for i, w := range want {
		d := diags[i]
		if d.File != f.projectFile || d.Line != w.line || d.Key != w.key {
			t.Errorf("diagnostic %d = %s:%d %s, want line %d key %s", i, d.File, d.Line, d.Key, w.line, w.key)
		}
		wantMsg := fmt.Sprintf(`%s:%d: key "%s" is ignored: a project config may set only [tools] and [skills] options, never providers, credentials, agent or web settings; move it to your user config ($SCV_HOME/config.toml)`, f.projectFile, w.line, w.key)
		if d.String() != wantMsg {
			t.Errorf("diagnostic %d:\n got  %s\n want %s", i, d, wantMsg)
		}
		if strings.Contains(d.String(), "sk-evil") {
			t.Errorf("diagnostic reveals a key: %s", d)
		}
	}

	// Forms other than tables, and an empty forbidden table.
	f = newFixture(t, "", "agent.max_steps = 5\nproviders = { x = { model = \"m\" } }\n[agents]\n")
	c, diags = mustLoad(t, f, nil)
	if c.Agent.MaxSteps != 32 || len(c.Providers) != 0 {
		t.Errorf("forbidden keys applied: %+v %v", c.Agent, c.Providers)
	}
	var got []string
	for _, d := range diags {
		got = append(got, fmt.Sprintf("%d %s", d.Line, d.Key))
	}
	if strings.Join(got, ", ") != "1 agent.max_steps, 2 providers.x.model, 3 agents" {
		t.Errorf("diagnostics = %v", got)
	}
	if !strings.Contains(diags[2].Message, "table [agents] is ignored") {
		t.Errorf("diagnostic = %s", diags[2])
	}
}

func TestMergeOrder(t *testing.T) {
	t.Parallel()
	user := "[tools]\napproval_policy = \"auto\"\noutput_limit_bytes = 10000\ncommand_timeout_seconds = 100\n"
	project := "[tools]\noutput_limit_bytes = 20000\napproval_policy = \"never\"\n"
	f := newFixture(t, user, project)

	c, diags := mustLoad(t, f, nil)
	if len(diags) != 0 {
		t.Errorf("diagnostics: %v", diags)
	}
	checks := []struct {
		key  string
		got  any
		want any
		src  string
	}{
		{"tools.output_limit_bytes", c.Tools.OutputLimitBytes, int64(20000), "$PROJECT:2"},
		{"tools.approval_policy", c.Tools.ApprovalPolicy, ApprovalNever, "$PROJECT:3"},
		{"tools.command_timeout_seconds", c.Tools.CommandTimeoutSeconds, 100, "$USER:4"},
		{"tools.max_timeout_seconds", c.Tools.MaxTimeoutSeconds, 14400, "default"},
	}
	for _, ch := range checks {
		if ch.got != ch.want || c.Sources[ch.key].String() != f.expand(ch.src) {
			t.Errorf("%s = %v from %v, want %v from %s", ch.key, ch.got, c.Sources[ch.key], ch.want, f.expand(ch.src))
		}
	}

	// The environment comes last.
	c, _ = mustLoad(t, f, map[string]string{"SCV_APPROVAL_POLICY": "auto"})
	if c.Tools.ApprovalPolicy != ApprovalAuto || c.Sources["tools.approval_policy"].String() != "environment (SCV_APPROVAL_POLICY)" {
		t.Errorf("approval = %v from %v", c.Tools.ApprovalPolicy, c.Sources["tools.approval_policy"])
	}

	// Without a workspace the project file is not read.
	c, _, err := Load(LoadOptions{Home: f.home, Env: paths.MapEnv(nil)})
	if err != nil || c.Tools.OutputLimitBytes != 10000 {
		t.Errorf("no workspace: %v, %v", c, err)
	}
}

func TestProjectCannotLoosenApprovals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		user, project string
		want          ApprovalPolicy
		warn          bool
	}{
		{"", "auto", ApprovalOnRisk, true},
		{"never", "on-risk", ApprovalNever, true},
		{"never", "auto", ApprovalNever, true},
		{"", "never", ApprovalNever, false},
		{"auto", "on-risk", ApprovalOnRisk, false},
		{"on-risk", "on-risk", ApprovalOnRisk, false},
	}
	for _, tt := range tests {
		t.Run(tt.user+"/"+tt.project, func(t *testing.T) {
			user := ""
			if tt.user != "" {
				user = fmt.Sprintf("[tools]\napproval_policy = %q\n", tt.user)
			}
			f := newFixture(t, user, fmt.Sprintf("[tools]\napproval_policy = %q\n", tt.project))
			c, diags := mustLoad(t, f, nil)
			if c.Tools.ApprovalPolicy != tt.want {
				t.Errorf("approval_policy = %q, want %q", c.Tools.ApprovalPolicy, tt.want)
			}
			if got := len(diags) == 1; got != tt.warn || len(diags) > 1 {
				t.Fatalf("diagnostics = %v, want a warning: %v", diags, tt.warn)
			}
			if tt.warn {
				if d := diags[0]; d.File != f.projectFile || d.Line != 2 || d.Key != "tools.approval_policy" || !strings.Contains(d.Message, "not looser") {
					t.Errorf("diagnostic = %+v", d)
				}
			}
		})
	}
}

// TestProjectCannotAllowCalls: tools.allow in a project file is ignored
// with a warning, so a cloned repository approves nothing; the user's own
// rules stand.
func TestProjectCannotAllowCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "[tools]\nallow = [\"bash:go test\"]\n", "[tools]\nallow = [\"bash:rm\", \"fs:./\"]\n")
	c, diags := mustLoad(t, f, nil)
	if !slices.Equal(c.Tools.Allow, []string{"bash:go test"}) {
		t.Errorf("tools.allow = %q, want the user's rules only", c.Tools.Allow)
	}
	if len(diags) != 1 || diags[0].Key != "tools.allow" || diags[0].File != f.projectFile || !strings.Contains(diags[0].Message, "may not approve calls") {
		t.Fatalf("diagnostics = %v, want one about tools.allow in the project file", diags)
	}
}

func TestProjectCannotRaiseToolLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		user, project string
		procs, mem    int64
		warn          string
	}{
		{"", "max_processes = 100000", 512, 4096, "tools.max_processes"},
		{"", "memory_limit_mb = 0", 512, 4096, "tools.memory_limit_mb"},
		{"", "memory_limit_mb = 8192", 512, 4096, "tools.memory_limit_mb"},
		{"", "max_processes = 64\nmemory_limit_mb = 1024", 64, 1024, ""},
		{"memory_limit_mb = 0", "memory_limit_mb = 8192", 512, 8192, ""},
		{"max_processes = 100", "max_processes = 100", 100, 4096, ""},
	}
	for _, tt := range tests {
		t.Run(tt.user+"/"+tt.project, func(t *testing.T) {
			f := newFixture(t, "[tools]\n"+tt.user+"\n", "[tools]\n"+tt.project+"\n")
			c, diags := mustLoad(t, f, nil)
			if int64(c.Tools.MaxProcesses) != tt.procs || c.Tools.MemoryLimitMB != tt.mem {
				t.Errorf("max_processes %d, memory_limit_mb %d; want %d, %d", c.Tools.MaxProcesses, c.Tools.MemoryLimitMB, tt.procs, tt.mem)
			}
			if tt.warn == "" {
				if len(diags) != 0 {
					t.Fatalf("diagnostics = %v, want none", diags)
				}
				return
			}
			if len(diags) != 1 || diags[0].Key != tt.warn || diags[0].File != f.projectFile || !strings.Contains(diags[0].Message, "not raise or remove") {
				t.Fatalf("diagnostics = %v, want one about %s", diags, tt.warn)
			}
		})
	}
}

func TestEnvOverrides(t *testing.T) {
	t.Parallel()
	user := "[providers.openai]\nmodel = \"gpt-4.1\"\n"
	f := newFixture(t, user, "")
	c, diags := mustLoad(t, f, map[string]string{"SCV_MODEL": "o3", "SCV_APPROVAL_POLICY": "never"})
	if len(diags) != 0 {
		t.Errorf("diagnostics: %v", diags)
	}
	if _, p, _ := c.ActiveProvider(); p.Model != "o3" {
		t.Errorf("model = %q, want SCV_MODEL's", p.Model)
	}
	if s := c.Sources["providers.openai.model"]; s.Kind != SourceEnv || s.Env != "SCV_MODEL" {
		t.Errorf("source of model = %v", s)
	}
	if c.Tools.ApprovalPolicy != ApprovalNever {
		t.Errorf("approval_policy = %q", c.Tools.ApprovalPolicy)
	}
	// Empty variables are unset.
	c, _ = mustLoad(t, f, map[string]string{"SCV_MODEL": "", "SCV_APPROVAL_POLICY": ""})
	if _, p, _ := c.ActiveProvider(); p.Model != "gpt-4.1" || c.Tools.ApprovalPolicy != ApprovalOnRisk {
		t.Errorf("empty overrides applied: %v %v", p, c.Tools.ApprovalPolicy)
	}
	// SCV_MODEL with the demo is a warning.
	f = newFixture(t, "", "")
	c, diags = mustLoad(t, f, map[string]string{"SCV_MODEL": "o3"})
	if c.Provider.Active != DemoProvider || len(diags) != 1 || !strings.Contains(diags[0].String(), "SCV_MODEL is set but the active provider is the built-in demo") {
		t.Errorf("active %q, diagnostics %v", c.Provider.Active, diags)
	}
}

func TestResolveAPIKey(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-0123456789"
	env := paths.MapEnv(map[string]string{"MY_KEY": " " + secret + "\n", "EMPTY": ""})
	tests := []struct {
		name    string
		p       ProviderConfig
		want    string
		wantErr string
	}{
		{"api_key wins", ProviderConfig{APIKey: "inline", APIKeyEnv: "MY_KEY"}, "inline", ""},
		{"from env, trimmed", ProviderConfig{APIKeyEnv: "MY_KEY"}, secret, ""},
		{"keyless", ProviderConfig{}, "", ""},
		{"unset", ProviderConfig{APIKeyEnv: "NOPE_KEY"}, "", "the environment variable NOPE_KEY (api_key_env) is not set"},
		{"empty", ProviderConfig{APIKeyEnv: "EMPTY"}, "", "the environment variable EMPTY (api_key_env) is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveAPIKey(tt.p, env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrAPIKeyMissing) {
					t.Fatalf("ResolveAPIKey = %q, %v; want error %q", got, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error reveals a key: %v", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ResolveAPIKey = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestRedaction(t *testing.T) {
	t.Parallel()
	const secret, headerSecret = "sk-secret-value-42", "header-secret-43"
	user := fmt.Sprintf("[providers.openai]\napi_key = %q\nheaders = { \"X-Api-Key\" = %q }\n", secret, headerSecret)
	f := newFixture(t, user, "")
	c, _ := mustLoad(t, f, nil)
	_, p, _ := c.ActiveProvider()
	if p.APIKey != secret || p.Headers["X-Api-Key"] != headerSecret {
		t.Fatalf("provider not loaded: %v", p)
	}

	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		outs = append(outs, fmt.Sprintf(verb, p), fmt.Sprintf(verb, &p), fmt.Sprintf(verb, c), fmt.Sprintf(verb, *c), fmt.Sprintf(verb, c.Providers))
	}
	outs = append(outs, fmt.Sprint(p), fmt.Sprintln(c))
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		lg := slog.New(h(&b))
		lg.Info("p", "provider", p, "config", c)
		outs = append(outs, b.String())
	}
	for _, v := range []any{p, c, c.Providers} {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, string(j))
	}
	for _, out := range outs {
		if strings.Contains(out, secret) || strings.Contains(out, headerSecret) {
			t.Errorf("output reveals a secret: %s", out)
		}
	}
	if s := p.String(); !strings.Contains(s, "api_key="+Redacted) || !strings.Contains(s, "X-Api-Key="+Redacted) || !strings.Contains(s, "model=gpt-4.1-mini") {
		t.Errorf("String() = %s", s)
	}
	if s := fmt.Sprintf("%#v", p); !strings.HasPrefix(s, "config.ProviderConfig{") {
		t.Errorf("GoString() = %s", s)
	}
	var b bytes.Buffer
	slog.New(slog.NewJSONHandler(&b, nil)).Info("p", "provider", p)
	if !strings.Contains(b.String(), `"api_key":"[redacted]"`) || !strings.Contains(b.String(), `"model":"gpt-4.1-mini"`) {
		t.Errorf("LogValue: %s", b.String())
	}
	// Without a key, nothing says there is one.
	if s := DefaultProvider().String(); strings.Contains(s, "api_key=") {
		t.Errorf("String() of a keyless provider = %s", s)
	}
}

func TestKeyFileModeWarning(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "[providers.openai]\napi_key = \"sk-x\"\n", "")
	if err := os.Chmod(f.userFile, 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := mustLoad(t, f, nil)
	if len(diags) != 1 || diags[0].Line != 2 || diags[0].Key != "providers.openai.api_key" || !strings.Contains(diags[0].Message, "chmod 600") {
		t.Fatalf("diagnostics = %v", diags)
	}
	if err := os.Chmod(f.userFile, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, diags = mustLoad(t, f, nil); len(diags) != 0 {
		t.Fatalf("diagnostics = %v", diags)
	}
}

func TestLoadFiles(t *testing.T) {
	// The workspace is the user's home: its .scv/config.toml is the user
	// file, read once and not as a project file.
	f := newFixture(t, "[providers.openai]\n[agent]\nmax_steps = 3\n", "")
	home := filepath.Dir(f.home)
	c, diags, err := Load(LoadOptions{Home: f.home, Workspace: home, Env: paths.MapEnv(nil)})
	if err != nil || len(diags) != 0 || c.Agent.MaxSteps != 3 {
		t.Fatalf("workspace = home: %v %v %v", c, diags, err)
	}

	// A directory where the file should be.
	f = newFixture(t, "", "")
	if err := os.Mkdir(f.userFile, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.load(nil); err == nil || !strings.Contains(err.Error(), f.userFile+": is a directory") {
		t.Errorf("directory: %v", err)
	}

	// Too big.
	f = newFixture(t, "# "+strings.Repeat("x", MaxFileSize)+"\n", "")
	if _, _, err := f.load(nil); err == nil || !strings.Contains(err.Error(), "is larger than") {
		t.Errorf("big file: %v", err)
	}

	// Bad options.
	for _, o := range []LoadOptions{{}, {Home: "rel"}, {Home: "/abs", Workspace: "rel"}} {
		if _, _, err := Load(o); err == nil {
			t.Errorf("Load(%+v) succeeded", o)
		}
	}

	// A missing home directory is no configuration at all.
	c, _, err = Load(LoadOptions{Home: filepath.Join(t.TempDir(), "none"), Workspace: "/nonexistent-ws", Env: paths.MapEnv(nil)})
	if err != nil || c.Provider.Active != DemoProvider {
		t.Errorf("missing home: %v %v", c, err)
	}
}

func TestSourceAndDiagnosticStrings(t *testing.T) {
	t.Parallel()
	for s, want := range map[Source]string{
		{}:                                    "default",
		{Kind: SourceDefault}:                 "default",
		{Kind: SourceUser, File: "/u/c.toml"}: "/u/c.toml",
		{Kind: SourceProject, File: "/p/c.toml", Line: 3}: "/p/c.toml:3",
		{Kind: SourceEnv, Env: "SCV_MODEL"}:               "environment (SCV_MODEL)",
	} {
		if s.String() != want {
			t.Errorf("%#v.String() = %q, want %q", s, s.String(), want)
		}
	}
	if d := (Diagnostic{Message: "m"}); d.String() != "m" {
		t.Errorf("Diagnostic.String() = %q", d)
	}
	if e := (&Error{Message: "m"}); e.Error() != "config: m" {
		t.Errorf("Error() = %q", e)
	}
}

func TestSchemaSuggest(t *testing.T) {
	t.Parallel()
	s := configSchema()
	for in, want := range map[string]string{
		"tools.aproval_policy":       "tools.approval_policy",
		"agnet.max_steps":            "agent.max_steps",
		"providers.x.timeout_second": "providers.x.timeout_seconds",
		"tools.zzzzzzzz":             "",
		"providers.x":                "",
	} {
		got := joinKey(s.suggest(strings.Split(in, ".")))
		if got != want {
			t.Errorf("suggest(%s) = %q, want %q", in, got, want)
		}
	}
	if k := joinKey([]string{"providers", "my.proxy", "model"}); k != `providers."my.proxy".model` {
		t.Errorf("joinKey = %s", k)
	}
}

func TestAgentsAndWebKeys(t *testing.T) {
	t.Parallel()
	user := `[agent]
prefer = ["codex", "claude"]
max_background = 0
max_delegation_depth = 1

[agents.claude]
use_for = "coding"
model = "opus-5.5"
effort = "xhigh"
permissions = "full"

[agents.grok]
use_for = "current events, and anything that needs posts on X"

[tools]
agent_timeout_seconds = 7200

[web]
fetch_max_bytes = 1048576
max_redirects = 2
auto_approve_domains = ["docs.rs", ".go.dev", "*.rust-lang.org"]
search = "searxng"
searxng_url = "http://127.0.0.1:8888"
max_search_results = 5
allowed_ports = ["443", " 3000 - 3999 ", "8443"]
`
	f := newFixture(t, user, "")
	c, diags := mustLoad(t, f, nil)
	if len(diags) != 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	if !reflect.DeepEqual(c.Agent.Prefer, []string{"codex", "claude"}) || c.Agent.MaxBackground != 0 || c.Agent.MaxDelegationDepth != 1 ||
		c.Agent.MaxConversations != 8 || c.Agent.ConversationIdle().Hours() != 24 {
		t.Errorf("agent = %+v", c.Agent)
	}
	want := map[string]AgentSettings{
		"claude": {UseFor: "coding", Model: "opus-5.5", Effort: "xhigh", Permissions: "full"},
		"grok":   {UseFor: "current events, and anything that needs posts on X"},
	}
	if !reflect.DeepEqual(c.Agents, want) {
		t.Errorf("agents = %+v\nwant %+v", c.Agents, want)
	}
	if c.Tools.AgentTimeout().Hours() != 2 {
		t.Errorf("agent timeout = %v", c.Tools.AgentTimeout())
	}
	w := c.Web
	if w.FetchMaxBytes != 1<<20 || w.MaxRedirects != 2 || w.FetchTimeout().Seconds() != 30 || w.Search != SearchSearXNG ||
		w.SearXNGURL != "http://127.0.0.1:8888" || w.MaxSearchResults != 5 || w.BraveAPIKeyEnv != "BRAVE_API_KEY" ||
		!reflect.DeepEqual(w.AutoApproveDomains, []string{"docs.rs", ".go.dev", "*.rust-lang.org"}) ||
		!reflect.DeepEqual(w.Ports(), []PortRange{{443, 443}, {3000, 3999}, {8443, 8443}}) {
		t.Errorf("web = %+v", w)
	}
	if got := Defaults().Web.Ports(); !reflect.DeepEqual(got, []PortRange{{80, 80}, {443, 443}, {8000, 8999}}) {
		t.Errorf("default ports %v", got)
	}
	if s := c.Sources["agents.claude.model"]; s.Kind != SourceUser || s.Line != 8 {
		t.Errorf("source of agents.claude.model = %v", s)
	}
	if s := c.Sources["agents.grok.model"]; s.Kind != SourceDefault {
		t.Errorf("source of agents.grok.model = %v, want the default", s)
	}
	if s := c.Sources["web.max_redirects"]; s.Kind != SourceUser || s.Line != 20 {
		t.Errorf("source of web.max_redirects = %v", s)
	}
}

func TestValidModel(t *testing.T) {
	t.Parallel()
	for m, want := range map[string]bool{
		"gpt-5.5": true, "opus": true, "openai/gpt-4.1": true, "us.anthropic.claude[1m]": true, "a:b@c": true,
		"": false, "-x": false, "@x": false, "a b": false, "a;b": false, strings.Repeat("a", 129): false, strings.Repeat("a", 128): true,
	} {
		if got := ValidModel(m); got != want {
			t.Errorf("ValidModel(%q) = %v, want %v", m, got, want)
		}
	}
}

func TestParsePortRange(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]PortRange{"1": {1, 1}, "443": {443, 443}, " 8000-8999 ": {8000, 8999}, "65535": {65535, 65535}, "80-80": {80, 80}, "1-65535": {1, 65535}} {
		if got, err := ParsePortRange(in); err != nil || got != want {
			t.Errorf("ParsePortRange(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "65536", "-1", "+80", "0x50", "80-", "-80", "9-8", "1-2-3", "80,443", "http", "٨٠"} {
		if got, err := ParsePortRange(in); err == nil {
			t.Errorf("ParsePortRange(%q) = %v, want an error", in, got)
		}
	}
}

func TestAgentTransportAndCommand(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "[agents.codex]\ntransport = \"acp\"\n\n[agents.claude]\ncommand = \"/opt/claude/bin/claude\"\n\n[agents.pi]\ncommand = \"pi-nightly\"\ntransport = \"resume\"\n", "")
	c, _ := mustLoad(t, f, nil)
	if a := c.Agents["codex"]; a.EffectiveTransport() != TransportACP || a.Command != "" {
		t.Errorf("codex = %+v", a)
	}
	if a := c.Agents["claude"]; a.EffectiveTransport() != TransportAuto || a.Command != "/opt/claude/bin/claude" {
		t.Errorf("claude = %+v", a)
	}
	if a := c.Agents["pi"]; a.EffectiveTransport() != TransportResume || a.Command != "pi-nightly" {
		t.Errorf("pi = %+v", a)
	}
}
