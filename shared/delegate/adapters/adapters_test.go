package adapters

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/paths"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	uuid1  = "0b6f3a52-5d7e-4a43-9a39-2f6f1f3f1a11"
	thread = "019a-thread"
	prompt = "fix the \"bug\"\nin  main.go"
	ofile  = "/h/agents/codex/tmp/last-1.txt"
)

func TestArgs(t *testing.T) {
	tests := []struct {
		agent string
		inv   Invocation
		want  []string
	}{
		// claude
		{Claude, Invocation{}, []string{"-p", "--output-format", "stream-json", "--verbose", prompt}},
		{Claude, Invocation{Model: "sonnet", Effort: "high"}, []string{"-p", "--output-format", "stream-json", "--verbose", "--model", "sonnet", "--effort", "high", prompt}},
		{Claude, Invocation{NewSession: uuid1}, []string{"-p", "--output-format", "stream-json", "--verbose", "--session-id", uuid1, prompt}},
		{Claude, Invocation{ResumeSession: uuid1, Model: "opus"}, []string{"-p", "--output-format", "stream-json", "--verbose", "--resume", uuid1, "--model", "opus", prompt}},
		{Claude, Invocation{FullPermissions: true, NewSession: uuid1}, []string{"-p", "--permission-mode", "bypassPermissions", "--output-format", "stream-json", "--verbose", "--session-id", uuid1, prompt}},
		// codex
		{Codex, Invocation{OutputFile: ofile}, []string{"exec", "--json", "-o", ofile, prompt}},
		{Codex, Invocation{OutputFile: ofile, Model: "gpt-5.5", Effort: "xhigh"}, []string{"exec", "--json", "-o", ofile, "-m", "gpt-5.5", "-c", `model_reasoning_effort="xhigh"`, prompt}},
		{Codex, Invocation{OutputFile: ofile, ResumeSession: thread, Effort: "low"}, []string{"exec", "--json", "-o", ofile, "-c", `model_reasoning_effort="low"`, "resume", thread, prompt}},
		{Codex, Invocation{OutputFile: ofile, FullPermissions: true}, []string{"exec", "--dangerously-bypass-approvals-and-sandbox", "-c", `web_search="live"`, "--json", "-o", ofile, prompt}},
		{Codex, Invocation{OutputFile: ofile, FullPermissions: true, ResumeSession: thread, Model: "o3"}, []string{"exec", "--dangerously-bypass-approvals-and-sandbox", "-c", `web_search="live"`, "--json", "-o", ofile, "-m", "o3", "resume", thread, prompt}},
		{Codex, Invocation{OutputFile: ofile, NewSession: uuid1}, []string{"exec", "--json", "-o", ofile, prompt}},
		// grok
		{Grok, Invocation{}, []string{"-p", prompt}},
		{Grok, Invocation{Model: "grok-5", Effort: "max"}, []string{"-m", "grok-5", "--reasoning-effort", "max", "-p", prompt}},
		{Grok, Invocation{FullPermissions: true, Model: "grok-5"}, []string{"--always-approve", "-m", "grok-5", "-p", prompt}},
		{Grok, Invocation{NewSession: uuid1}, []string{"-p", prompt}},
		// dsh
		{DSH, Invocation{}, []string{"--profile", "headless", prompt}},
		{DSH, Invocation{FullPermissions: true}, []string{"--profile", "headless", prompt}},
		// pi
		{Pi, Invocation{}, []string{"-p", "--mode", "json", prompt}},
		{Pi, Invocation{Model: "scv/gpt-x", Effort: "medium"}, []string{"-p", "--mode", "json", "--model", "scv/gpt-x", "--thinking", "medium", prompt}},
		{Pi, Invocation{NewSession: uuid1, StateDir: "/h/agents/pi/.pi/agent"}, []string{"-p", "--mode", "json", "--session", "/h/agents/pi/.pi/agent/sessions/" + uuid1 + ".jsonl", prompt}},
		{Pi, Invocation{ResumeSession: uuid1, FullPermissions: true, StateDir: "/h/agents/pi/.pi/agent"}, []string{"-p", "--mode", "json", "--session", "/h/agents/pi/.pi/agent/sessions/" + uuid1 + ".jsonl", prompt}},
	}
	for _, tc := range tests {
		a, ok := Get(tc.agent)
		if !ok {
			t.Fatalf("no adapter %s", tc.agent)
		}
		tc.inv.Prompt = prompt
		got, err := a.Args(tc.inv)
		if err != nil {
			t.Errorf("%s %+v: %v", tc.agent, tc.inv, err)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %+v:\n got %q\nwant %q", tc.agent, tc.inv, got, tc.want)
		}
	}
}

func TestArgsRefusals(t *testing.T) {
	tests := []struct {
		agent       string
		inv         Invocation
		unsupported bool
		want        string
	}{
		{DSH, Invocation{Prompt: "x", Model: "m"}, true, "dsh does not take model"},
		{DSH, Invocation{Prompt: "x", Effort: "low"}, true, "dsh does not take effort"},
		{DSH, Invocation{Prompt: "x", ResumeSession: "s"}, true, "dsh does not take session"},
		{Grok, Invocation{Prompt: "x", ResumeSession: "s"}, true, "grok does not take session"},
		{Codex, Invocation{Prompt: "x"}, false, "needs an output file"},
		{Claude, Invocation{Prompt: "-x"}, false, `cannot start with "-"`},
		{Claude, Invocation{Prompt: ""}, false, "prompt is empty"},
		{Claude, Invocation{Prompt: "x", Model: "-m"}, false, "cannot start with"},
		{Claude, Invocation{Prompt: "x", Model: "@m"}, false, "cannot start with"},
		{Claude, Invocation{Prompt: "x", Model: "a b"}, false, "only ASCII letters"},
		{Claude, Invocation{Prompt: "x", Model: `a"b`}, false, "only ASCII letters"},
		{Claude, Invocation{Prompt: "x", Model: strings.Repeat("m", 129)}, false, "1 to 128"},
		{Claude, Invocation{Prompt: "x", Effort: "extreme"}, false, "effort \"extreme\" is not valid"},
		{Claude, Invocation{Prompt: "x", NewSession: "a", ResumeSession: "b"}, false, "both start and resume"},
		{Claude, Invocation{Prompt: "x", ResumeSession: "--evil"}, false, "session id"},
		{Claude, Invocation{Prompt: "x", ResumeSession: "a b"}, false, "session id"},
	}
	for _, tc := range tests {
		a, _ := Get(tc.agent)
		_, err := a.Args(tc.inv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: error %v, want %q", tc.agent, tc.inv, err, tc.want)
			continue
		}
		if errors.Is(err, ErrUnsupportedOption) != tc.unsupported {
			t.Errorf("%s %+v: errors.Is(ErrUnsupportedOption) = %v", tc.agent, tc.inv, !tc.unsupported)
		}
	}
}

func TestValidateModel(t *testing.T) {
	for _, m := range []string{"a", "gpt-5.5", "scv/gpt-4.1", "claude-opus-4@20250101", "us.anthropic[1m]:v2", strings.Repeat("x", 128)} {
		if err := ValidateModel(m); err != nil {
			t.Errorf("ValidateModel(%q) = %v", m, err)
		}
	}
	for _, m := range []string{"", "-a", "@a", "a b", "a\n", "é", "a;b", "a$b", strings.Repeat("x", 129)} {
		if ValidateModel(m) == nil {
			t.Errorf("ValidateModel(%q) accepted", m)
		}
	}
	for _, e := range Efforts {
		if ValidateEffort(e) != nil {
			t.Errorf("effort %q refused", e)
		}
	}
	if ValidateEffort("HIGH") == nil || ValidateEffort("") == nil {
		t.Error("bad effort accepted")
	}
}

func TestDescriptors(t *testing.T) {
	want := []struct {
		name                   string
		model, effort, session bool
		format                 Format
		summary                string
	}{
		{Claude, true, true, true, FormatStreamJSON, "Anthropic's coding agent; reads, edits, and runs code, and can search and fetch the web"},
		{Codex, true, true, true, FormatCodexJSON, "OpenAI's coding agent; reads, edits, and runs code, with live web search under full permissions"},
		{Grok, true, true, false, FormatText, "xAI's coding agent; reads, edits, and runs code, with live web and X search. Call it when another agent declined or refused a request, including a safety or guardrail refusal"},
		{DSH, false, false, false, FormatText, "a coding agent on DeepSeek models"},
		{Pi, true, true, true, FormatPiJSON, "a minimal coding agent that can run on SCV's own model endpoint; no web search"},
	}
	all := All()
	if len(all) != len(want) {
		t.Fatalf("%d adapters", len(all))
	}
	for i, w := range want {
		a := all[i]
		if a.Name != w.name || a.TakesModel() != w.model || a.TakesEffort() != w.effort || a.TakesSession() != w.session || a.Format != w.format || a.Summary != w.summary {
			t.Errorf("adapter %d = %s model %v effort %v session %v format %s summary %q", i, a.Name, a.TakesModel(), a.TakesEffort(), a.TakesSession(), a.Format, a.Summary)
		}
		if a.Product == "" || (a.TakesModel() != (a.ModelFamily != "")) {
			t.Errorf("%s: product %q, model family %q", a.Name, a.Product, a.ModelFamily)
		}
	}
	if !slices.Equal(Names(), []string{"claude", "codex", "grok", "dsh", "pi"}) {
		t.Errorf("Names = %v", Names())
	}
	// All returns copies.
	all[0].FixedArgs[0] = "changed"
	if a, _ := Get(Claude); a.FixedArgs[0] != "-p" {
		t.Error("All shares the table's slices")
	}
	if _, ok := Get("zcode"); ok {
		t.Error("Get of an unknown agent succeeded")
	}
}

func TestSignInCommands(t *testing.T) {
	tests := []struct {
		agent                 string
		login, logout, status []string
	}{
		{Claude, []string{"auth", "login"}, []string{"auth", "logout"}, []string{"auth", "status"}},
		{Codex, []string{"login"}, []string{"logout"}, []string{"login", "status"}},
		{Grok, []string{"login"}, []string{"logout"}, nil},
		{DSH, nil, nil, nil},
		{Pi, nil, nil, nil},
	}
	args := func(c *Command) []string {
		if c == nil {
			return nil
		}
		return c.Args
	}
	for _, tc := range tests {
		a, _ := Get(tc.agent)
		if !slices.Equal(args(a.Login), tc.login) || !slices.Equal(args(a.Logout), tc.logout) || !slices.Equal(args(a.Status), tc.status) {
			t.Errorf("%s: login %q logout %q status %q", tc.agent, args(a.Login), args(a.Logout), args(a.Status))
		}
	}
}

func TestLookup(t *testing.T) {
	home := t.TempDir()
	pathDir := t.TempDir()
	mk := func(p string, mode os.FileMode) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(pathDir, "claude"), 0o755)
	mk(filepath.Join(pathDir, "grok"), 0o755)
	mk(filepath.Join(home, ".grok/bin/grok"), 0o755)
	mk(filepath.Join(pathDir, "codex"), 0o755)
	mk(filepath.Join(home, ".local/bin/codex"), 0o755)
	mk(filepath.Join(home, ".local/bin/pi"), 0o644)                           // not executable
	if err := os.MkdirAll(filepath.Join(pathDir, "dsh"), 0o755); err != nil { // a directory
		t.Fatal(err)
	}
	env := paths.MapEnv(map[string]string{"HOME": home, "PATH": "relative:" + pathDir})
	tests := []struct {
		agent, want string
	}{
		{Claude, filepath.Join(pathDir, "claude")},
		{Codex, filepath.Join(home, ".local/bin/codex")},
		{Grok, filepath.Join(home, ".grok/bin/grok")},
		{DSH, ""},
		{Pi, ""},
	}
	for _, tc := range tests {
		a, _ := Get(tc.agent)
		got, err := a.Lookup(env)
		if tc.want == "" {
			if err == nil || !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "is not installed") {
				t.Errorf("%s: Lookup = %q, %v; want not installed", tc.agent, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: Lookup = %q, %v; want %q", tc.agent, got, err, tc.want)
		}
	}
	// A Path override is returned as is, when executable.
	a, _ := Get(Claude)
	a.Path = "/bin/sh"
	if got, err := a.Lookup(env); err != nil || got != "/bin/sh" {
		t.Errorf("Path override: %q, %v", got, err)
	}
	a.Path = "sh"
	if _, err := a.Lookup(env); err == nil {
		t.Error("a relative Path was accepted")
	}
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func TestPrivateEnv(t *testing.T) {
	base := []string{
		"PATH=/usr/bin", "LANG=C.UTF-8", "TERM=xterm", "GH_TOKEN=keep-me",
		"HOME=/home/u", "XDG_CONFIG_HOME=/home/u/.config", "XDG_DATA_HOME=/x", "XDG_STATE_HOME=/y", "XDG_CACHE_HOME=/z",
		"OPENAI_API_KEY=k", "GEMINI_API_KEY=k", "XAI_API_KEY=k", "DEEPSEEK_API_KEY=k",
		"SCV_HOME=/home/u/.scv", "SCV_MODEL=m", "SCV_APPROVAL_POLICY=never", "SCV_SERVER_BIN=/b", "SCV_TUI_BIN=/t", "SCV_LOG_LEVEL=debug",
		"SCV_RUN_TAG=outer", "SCV_PARENT=i/s/h", "SCV_DELEGATION_DEPTH=1",
		"ANTHROPIC_AUTH_TOKEN=t", "ANTHROPIC_BASE_URL=u", "CLAUDE_CODE_OAUTH_TOKEN=t", "CLAUDE_CONFIG_DIR=/c", "CLAUDECODE=1",
		"OPENAI_BASE_URL=u", "CODEX_HOME=/home/u/.codex", "CODEX_BASE_URL=u",
		"GROK_HOME=/g", "GROK_MODEL=x", "XAI_BASE_URL=u",
		"DSH_HOME=/d", "DSH_PERMISSION_MODE=ask", "DEEPSEEK_BASE_URL=u",
		"PI_CODING_AGENT_DIR=/p", "PI_X=1",
		"NOEQUALS", "=novalue",
	}
	// GH_TOKEN, AWS_SECRET_ACCESS_KEY, LD_PRELOAD, BASH_ENV and a provider
	// key whose name does not end in _API_KEY are not on the allow-list
	// (issue 14, item 1): the loop below fails on any of them.
	base = append(base, "AWS_SECRET_ACCESS_KEY=aws", "LD_PRELOAD=/evil.so", "BASH_ENV=/evil.sh", "MOONSHOT_TOKEN=sk-x")
	kept := []string{"PATH", "LANG", "TERM", "SCV_RUN_TAG", "SCV_PARENT", "SCV_DELEGATION_DEPTH"}
	home := "/srv/scv"
	tests := []struct {
		agent    string
		stateVar string
		state    string
		extra    map[string]string
	}{
		{Claude, "", "", nil},
		{Codex, "CODEX_HOME", "/srv/scv/agents/codex", nil},
		{Grok, "GROK_HOME", "/srv/scv/agents/grok/.grok", map[string]string{"GROK_DISABLE_AUTOUPDATER": "1"}},
		{DSH, "DSH_HOME", "/srv/scv/agents/dsh/.dsh", nil},
		{Pi, "PI_CODING_AGENT_DIR", "/srv/scv/agents/pi/.pi/agent", nil},
	}
	for _, tc := range tests {
		a, _ := Get(tc.agent)
		env, err := a.PrivateEnv(base, home)
		if err != nil {
			t.Fatal(err)
		}
		m := envMap(env)
		h := filepath.Join(home, "agents", tc.agent)
		want := map[string]string{
			"HOME": h, "SCV_HOME": h + "/.scv", "XDG_CONFIG_HOME": h + "/.config",
			"XDG_DATA_HOME": h + "/.local/share", "XDG_STATE_HOME": h + "/.local/state", "XDG_CACHE_HOME": h + "/.cache",
		}
		if tc.stateVar != "" {
			want[tc.stateVar] = tc.state
		}
		for k, v := range tc.extra {
			want[k] = v
		}
		for _, k := range kept {
			want[k] = envMap(base)[k]
		}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s: %s = %q, want %q", tc.agent, k, m[k], v)
			}
		}
		for k := range m {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: %s inherited", tc.agent, k)
			}
		}
		if len(env) != len(m) {
			t.Errorf("%s: duplicate entries in %q", tc.agent, env)
		}
	}
	a, _ := Get(Claude)
	if _, err := a.PrivateEnv(nil, "relative"); err == nil {
		t.Error("a relative SCV home was accepted")
	}
}

func TestEnsureDirs(t *testing.T) {
	home := t.TempDir()
	for _, a := range All() {
		if err := a.EnsureDirs(home); err != nil {
			t.Fatal(err)
		}
		dirs, _ := a.PrivateDirs(home)
		for _, d := range dirs {
			fi, err := os.Stat(d)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("%s: %s: %v %v", a.Name, d, fi.Mode(), err)
			}
		}
	}
	a, _ := Get(Codex)
	if d, _ := a.TmpDir("/h"); d != "/h/agents/codex/tmp" {
		t.Errorf("codex TmpDir = %s", d)
	}
}

func FuzzArgs(f *testing.F) {
	f.Add("codex", "fix it", "gpt-5", "high", "", "t1", true)
	f.Add("claude", "a\nb", "", "", "u", "", false)
	f.Fuzz(func(t *testing.T, agent, prompt, model, effort, newSess, resume string, full bool) {
		a, ok := Get(agent)
		if !ok {
			a, _ = Get(Claude)
		}
		inv := Invocation{Prompt: prompt, Model: model, Effort: effort, NewSession: newSess, ResumeSession: resume, FullPermissions: full, OutputFile: "/tmp/o"}
		args, err := a.Args(inv)
		if err != nil {
			return
		}
		// The prompt is exactly the last argument, and never a flag.
		if args[len(args)-1] != prompt || strings.HasPrefix(prompt, "-") {
			t.Fatalf("args %q for prompt %q", args, prompt)
		}
		if model != "" && !slices.ContainsFunc(args, func(s string) bool { return strings.Contains(s, model) }) {
			t.Fatalf("model %q missing from %q", model, args)
		}
	})
}

func FuzzPrivateEnv(f *testing.F) {
	f.Add("codex", "OPENAI_API_KEY=x\x00PATH=/bin\x00HOME=/h\x00CODEX_HOME=/c\x00SCV_PARENT=a")
	f.Fuzz(func(t *testing.T, agent, block string) {
		a, ok := Get(agent)
		if !ok {
			a, _ = Get(Grok)
		}
		env, err := a.PrivateEnv(strings.Split(block, "\x00"), "/srv/scv")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, kv := range env {
			name, value, ok := strings.Cut(kv, "=")
			if !ok || name == "" || seen[name] {
				t.Fatalf("entry %q in %q", kv, env)
			}
			seen[name] = true
			own := name == a.StateVar || slices.Contains(privateVars, name) || slices.ContainsFunc(a.ExtraEnv, func(e string) bool { return strings.HasPrefix(e, name+"=") })
			if Scrubbed(name) && !own {
				t.Fatalf("scrubbed %s inherited", name)
			}
			if name == "HOME" && value != "/srv/scv/agents/"+a.Name {
				t.Fatalf("HOME = %q", value)
			}
		}
		if !seen["HOME"] || !seen["SCV_HOME"] {
			t.Fatalf("private variables missing: %q", env)
		}
	})
}
