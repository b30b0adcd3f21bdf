package config_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv/internal/cmd"
	"github.com/scv-cli/scv/scv/internal/cmd/config"
	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/testkit/golden"
)

// TestNewCmdConfig is the argv -> options table.
func TestNewCmdConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		argv     []string
		wantCmd  string // "show" or "path"
		want     config.Options
		wantCode cli.Code
		wantErr  string
	}{
		{name: "show", argv: []string{"show"}, wantCmd: "show"},
		{name: "show json", argv: []string{"show", "--json"}, wantCmd: "show", want: config.Options{JSON: true}},
		{name: "show cd", argv: []string{"show", "--cd", "../app"}, wantCmd: "show", want: config.Options{Dir: "../app"}},
		{name: "show -C json", argv: []string{"show", "-C", "/src", "--json"}, wantCmd: "show", want: config.Options{Dir: "/src", JSON: true}},
		{name: "path", argv: []string{"path"}, wantCmd: "path"},
		{name: "path cd", argv: []string{"path", "-C", "/src"}, wantCmd: "path", want: config.Options{Dir: "/src"}},
		{name: "show takes no args", argv: []string{"show", "x"}, wantCode: cli.Usage, wantErr: "takes no arguments"},
		{name: "path has no json", argv: []string{"path", "--json"}, wantCode: cli.Usage, wantErr: "unknown flag: --json"},
		{name: "unknown subcommand", argv: []string{"edit"}, wantCode: cli.Usage, wantErr: `unknown config command "edit": use show or path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
			var got *config.Options
			var ran string
			c := config.NewCmdConfig(f,
				func(o *config.Options) error { got, ran = o, "show"; return nil },
				func(o *config.Options) error { got, ran = o, "path"; return nil })
			c.SetFlagErrorFunc(cli.FlagErrorFunc)
			c.SetArgs(tt.argv)
			c.SetOut(&bytes.Buffer{})
			c.SetErr(&bytes.Buffer{})
			c.SilenceErrors, c.SilenceUsage = true, true
			err := c.Execute()
			if tt.wantCode != cli.OK {
				if code := cli.CodeOf(err); code != tt.wantCode {
					t.Fatalf("exit code = %d (%v), want %d", code, err, tt.wantCode)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				if got != nil {
					t.Error("the command ran for a refused command line")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ran != tt.wantCmd || got.Dir != tt.want.Dir || got.JSON != tt.want.JSON {
				t.Errorf("ran %s with {Dir:%q JSON:%v}, want %s with {Dir:%q JSON:%v}", ran, got.Dir, got.JSON, tt.wantCmd, tt.want.Dir, tt.want.JSON)
			}
			if got.IO != f.IO || got.Env == nil {
				t.Error("dependencies not wired")
			}
		})
	}
}

// instance is an SCV_HOME and a workspace, canonical, with optional files.
type instance struct{ home, ws string }

func newInstance(t *testing.T, user, project string) instance {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	in := instance{home: filepath.Join(base, "scvhome"), ws: filepath.Join(base, "ws")}
	for _, d := range []string{in.home, in.ws} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if user != "" {
		if err := os.WriteFile(paths.ConfigFile(in.home), []byte(user), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if project != "" {
		if err := os.MkdirAll(paths.ProjectDir(in.ws), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(paths.ProjectConfigFile(in.ws), []byte(project), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return in
}

// placeholders replaces the instance's paths by $HOME and $WS.
func (in instance) placeholders(s string) string {
	return strings.NewReplacer(in.home, "$HOME", in.ws, "$WS").Replace(s)
}

// requireGolden compares got with testdata/<name>.golden (testkit/golden).
func requireGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Equal(t, filepath.Join("testdata", name+".golden"), got)
}

const secretUser = `[provider]
active = "work"

[providers.work]
base_url = "https://llm.example.com/v1"
api_key = "sk-user-secret-1"
model = "big-model"
headers = { X-Org = "org-secret-2", Authorization = "Bearer secret-3" }

[providers.other]
api_key_env = "OTHER_KEY"

[tools]
approval_policy = "on-risk"
command_timeout_seconds = 300

[agent]
system_prompt = "You are a careful assistant who always explains the reasoning behind every change in detail."
`

const secretProject = `[tools]
approval_policy = "never"
output_limit_bytes = 4096

[providers.work]
api_key = "sk-project-secret-4"
`

var secrets = []string{"sk-user-secret-1", "org-secret-2", "secret-3", "sk-project-secret-4", "sk-env-secret-5", "sk-other-secret-6"}

// TestShow is the options -> behaviour table of show, compared with golden
// files (run with -update to rewrite them).
func TestShow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		user, project string
		env           map[string]string
		json          bool
	}{
		{name: "defaults"},
		{name: "user_and_project", user: secretUser, project: secretProject, env: map[string]string{"OTHER_KEY": "sk-other-secret-6"}},
		{name: "user_and_project_json", user: secretUser, project: secretProject, json: true},
		{name: "environment", env: map[string]string{"OPENAI_API_KEY": "sk-env-secret-5", "OPENAI_BASE_URL": "http://localhost:8080/v1",
			"SCV_MODEL": "local-model", "SCV_APPROVAL_POLICY": "never"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newInstance(t, tt.user, tt.project)
			env := map[string]string{"SCV_HOME": in.home}
			for k, v := range tt.env {
				env[k] = v
			}
			var out, errOut bytes.Buffer
			err := config.Show(&config.Options{IO: &cmdutil.IOStreams{Out: &out, ErrOut: &errOut}, Env: paths.MapEnv(env), Dir: in.ws, JSON: tt.json})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets {
				if strings.Contains(out.String()+errOut.String(), s) {
					t.Errorf("the output reveals the secret %q", s)
				}
			}
			if tt.json {
				var v map[string]any
				if err := json.Unmarshal(out.Bytes(), &v); err != nil {
					t.Fatalf("not JSON: %v", err)
				}
			}
			requireGolden(t, "show_"+tt.name, in.placeholders(out.String()+"--- stderr\n"+errOut.String()))
		})
	}
}

func TestShowFromWorkspaceSubdirectoryUsesCwd(t *testing.T) {
	// Not parallel: it changes the working directory.
	in := newInstance(t, "", "[tools]\napproval_policy = \"never\"\n")
	t.Chdir(in.ws)
	var out bytes.Buffer
	err := config.Show(&config.Options{IO: &cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}, Env: paths.MapEnv(map[string]string{"SCV_HOME": in.home})})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^tools\.approval_policy +"never" +` + regexp.QuoteMeta(paths.ProjectConfigFile(in.ws)) + `:2$`).MatchString(out.String()) {
		t.Errorf("the current directory's project file was not read:\n%s", out.String())
	}
}

func TestPath(t *testing.T) {
	t.Parallel()
	in := newInstance(t, "[tools]\n", "")
	var out bytes.Buffer
	err := config.Path(&config.Options{IO: &cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}, Env: paths.MapEnv(map[string]string{"SCV_HOME": in.home}), Dir: in.ws})
	if err != nil {
		t.Fatal(err)
	}
	requireGolden(t, "path", in.placeholders(out.String()))
}

// TestConfigErrorExitsOne runs the whole command: a bad file is one line
// of stderr per problem, naming the file, the line and the key (all of the
// file's problems at once: the unknown key does not hide the value out of
// range), exit code 1.
func TestConfigErrorExitsOne(t *testing.T) {
	for _, sub := range []string{"show", "path"} {
		t.Run(sub, func(t *testing.T) {
			in := newInstance(t, "", "[tools]\nzzz = 1\noutput_limit_bytes = 1\n")
			t.Setenv("SCV_HOME", in.home)
			var out, errOut bytes.Buffer
			f := &cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}}
			code := cmd.Run(f, []string{"config", sub, "--cd", in.ws})
			if sub == "path" {
				// path does not load the files: it still works.
				if code != cli.OK || !strings.Contains(out.String(), "project config  exists") {
					t.Fatalf("code %d, out %q, err %q", code, out.String(), errOut.String())
				}
				return
			}
			got := in.placeholders(errOut.String())
			want := `scv: $WS/.scv/config.toml:2: unknown key "tools.zzz"; see docs/configuration.md for the keys` + "\n" +
				`$WS/.scv/config.toml:3: key "tools.output_limit_bytes" is 1, out of range: it must be a number of bytes from 1024 to 1048576` + "\n"
			if code != cli.Failure || got != want || out.Len() != 0 {
				t.Fatalf("code %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out.String(), got, want)
			}
		})
	}
}

// TestShowImportedSetups: after `scv agents import scv`, config show says
// whether the imported provider is still what the user file holds.
func TestShowImportedSetups(t *testing.T) {
	t.Parallel()
	user := "[providers.openai]\nmodel = \"gpt-4.1\"\napi_key = \"sk-import-secret\"\n"
	in := newInstance(t, user, "")
	env := paths.MapEnv(map[string]string{"SCV_HOME": in.home})
	if _, err := signin.ImportSCV(in.home, env); err != nil {
		t.Fatal(err)
	}
	show := func() string {
		var out bytes.Buffer
		if err := config.Show(&config.Options{IO: &cmdutil.IOStreams{Out: &out, ErrOut: &bytes.Buffer{}}, Env: env, Dir: in.ws}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "sk-import-secret") {
			t.Fatalf("config show printed the key:\n%s", out.String())
		}
		return out.String()
	}
	if got := show(); !strings.Contains(got, "Imported agent setups\n  scv: up to date\n") {
		t.Fatalf("config show:\n%s", got)
	}
	if err := os.WriteFile(paths.ConfigFile(in.home), []byte(strings.Replace(user, "gpt-4.1", "gpt-5", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := show(); !strings.Contains(got, "  scv: ") || strings.Contains(got, "scv: up to date") || !strings.Contains(got, "scv agents import scv") {
		t.Fatalf("config show after the source changed:\n%s", got)
	}
}
