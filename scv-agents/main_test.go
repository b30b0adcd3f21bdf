package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/scv-cli/scv/shared/proctag"
	"github.com/scv-cli/scv/shared/testkit/bins"
	"go.uber.org/goleak"
)

// The binary under test and a directory of fake agent CLIs, both made in
// TestMain before any test starts a process (a script written while
// another thread forks can fail to exec with ETXTBSY).
var (
	binary  string
	fakeBin string
	// fakeACPBin holds a fake codex-acp, put on PATH only by the tests
	// that delegate over ACP.
	fakeACPBin string
)

// fakeCodexACP is a minimal ACP server in bash: it answers initialize and
// session/new, and on session/prompt leaves a setsid descendant and never
// answers, so a test can kill its owner mid-turn; the end of its input does
// not end it.
const fakeCodexACP = `#!/bin/bash
while IFS= read -r line; do
	id=""; method=""
	[[ $line =~ \"id\":([0-9]+) ]] && id=${BASH_REMATCH[1]}
	[[ $line =~ \"method\":\"([^\"]+)\" ]] && method=${BASH_REMATCH[1]}
	case "$method" in
	initialize) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"authMethods":[]}}\n' "$id";;
	session/new) printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"fake-1"}}\n' "$id";;
	session/prompt) setsid sleep 300 </dev/null >/dev/null 2>&1 &;;
	esac
done
# Like an agent busy with its turn, it outlives the end of its input, so
# killing its owner leaves it behind for the reconcile to find.
exec sleep 300
`

// secret is the key the tests store; no output may contain it.
const secret = "sk-test-SECRET-5f3a9c"

// Fake agent CLIs: each logs its arguments and the variables that matter
// to $HOME/calls, so the tests see the private environment it got.
var fakeScripts = map[string]string{
	// dsh works for five minutes and leaves a setsid descendant.
	"dsh": `#!/bin/sh
echo "dsh $*" >> "$HOME/calls"
setsid sleep 300 </dev/null >/dev/null 2>&1 &
exec sleep 300
`,
	"claude": `#!/bin/sh
echo "claude $* HOME=$HOME ANTHROPIC_API_KEY=${ANTHROPIC_API_KEY-unset} OPENAI_API_KEY=${OPENAI_API_KEY-unset}" >> "$HOME/calls"
case "$1 $2" in
"auth status") echo '{"loggedIn":true,"authMethod":"claude.ai","email":"person@example.com","subscriptionType":"max"}';;
esac
`,
	// grok's login asks for a device code and needs a terminal, as the
	// real sign-in screens do.
	"grok": `#!/bin/sh
if [ -t 0 ] && [ -t 1 ]; then tty=yes; else tty=no; fi
printf 'Enter the device code: '
read code
echo "grok $* tty=$tty code=$code" >> "$HOME/calls"
echo "Signed in to Grok."
`,
	"codex": `#!/bin/sh
echo "codex $* CODEX_HOME=$CODEX_HOME" >> "$HOME/calls"
case "$1 $2" in
"login status") if [ -f "$CODEX_HOME/auth.json" ]; then echo "Logged in using an API key - sk-proj-***ABCD"; else echo "Not logged in"; exit 1; fi;;
esac
`,
}

func TestMain(m *testing.M) {
	var err error
	if binary, err = bins.Path("scv-agents"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "scv-agents-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = filepath.Join(dir, "bin")
	if err := os.Mkdir(fakeBin, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, script := range fakeScripts {
		if err := os.WriteFile(filepath.Join(fakeBin, name), []byte(script), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	fakeACPBin = filepath.Join(dir, "acpbin")
	if err := os.Mkdir(fakeACPBin, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(filepath.Join(fakeACPBin, "codex-acp"), []byte(fakeCodexACP), 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.RemoveAll(dir)
	bins.Cleanup()
	os.Exit(code)
}

// world is a fake user: a HOME, an SCV_HOME inside it, and PATH holding
// only the system and the fake agents (unless noAgents).
type world struct {
	t     *testing.T
	home  string // the user's HOME
	scv   string // SCV_HOME
	extra []string
	path  string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	h := t.TempDir()
	w := &world{t: t, home: h, scv: filepath.Join(h, ".scv"), path: fakeBin + ":/usr/bin:/bin"}
	if err := os.MkdirAll(w.scv, 0o700); err != nil {
		t.Fatal(err)
	}
	return w
}

type result struct {
	stdout, stderr string
	code           int
}

func (w *world) run(stdin string, args ...string) result {
	w.t.Helper()
	c := exec.Command(binary, args...)
	c.Env = append([]string{"HOME=" + w.home, "SCV_HOME=" + w.scv, "PATH=" + w.path,
		"ANTHROPIC_API_KEY=" + secret, "OPENAI_API_KEY=" + secret}, w.extra...)
	c.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatal(err)
	}
	r := result{out.String(), errOut.String(), code}
	if strings.Contains(r.stdout+r.stderr, secret) || strings.Contains(r.stdout+r.stderr, "SECRET") {
		w.t.Fatalf("scv-agents %v printed the secret:\n%s%s", args, r.stdout, r.stderr)
	}
	return r
}

func (w *world) write(rel, content string) string {
	w.t.Helper()
	p := filepath.Join(w.scv, rel)
	if filepath.IsAbs(rel) {
		p = rel
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return p
}

func want(t *testing.T, r result, code int, substrings ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range substrings {
		if !strings.Contains(r.stdout+r.stderr, s) {
			t.Fatalf("output lacks %q\nstdout:\n%s\nstderr:\n%s", s, r.stdout, r.stderr)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, args := range [][]string{
		{"bogus"}, {"ps", "x"}, {"kill"}, {"kill", "a", "--orphans"}, {"gc", "--older-than", "30m"},
		{"gc", "--older-than", "soon"}, {"gc", "grok"}, {"gc", "a", "b"}, {"login"}, {"login", "dsh", "--", "--key", "k"},
		{"login", "codex", "--openai-compatible"}, {"import"}, {"import", "pi"}, {"import", "claude"},
		{"import", "scv", "--from", "/x"}, {"logout"}, {"login", "zcode"}, {"ps", "--nope"},
	} {
		r := w.run("", args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--help") {
			t.Errorf("scv-agents %v: exit %d, stderr %q; want a usage error", args, r.code, r.stderr)
		}
	}
}

// startAgent starts a sleeping "agent" in its own process group, tagged
// with handle, and returns its identity; the test cleans it up.
func startAgent(t *testing.T, handle string) (records.Process, <-chan struct{}) {
	t.Helper()
	c := exec.Command("sleep", "300")
	c.Env = append(os.Environ(), proctag.Var+"="+handle)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	t.Cleanup(func() { _ = c.Process.Kill(); <-done })
	p, err := records.ProcessOf(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return p, done
}

// goneOwner returns the identity of a process that has exited.
func goneOwner(t *testing.T) records.Process {
	t.Helper()
	c := exec.Command("sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p, err := records.ProcessOf(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	return p
}

func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s is still running", what)
	}
}

func TestPsAndKill(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	want(t, w.run("", "ps"), 0, "no delegated runs")
	self, err := records.Self()
	if err != nil {
		t.Fatal(err)
	}
	agent, done := startAgent(t, "codex-3f9a2c")
	r := records.Record{Handle: "codex-3f9a2c", Agent: "codex", Session: "sess-1", Cwd: "/work/proj", Depth: 1,
		AgentProcess: agent, Owner: self, StartedUnix: time.Now().Add(-125 * time.Second).Unix(), Conversation: "codex-2", Turn: 3}
	if err := records.Write(w.scv, r); err != nil {
		t.Fatal(err)
	}
	idle := records.Record{Handle: "scv-1a", Agent: "scv", Owner: self, StartedUnix: time.Now().Unix(), IdleSinceUnix: time.Now().Unix(), BackgroundJobs: 2}
	if err := records.Write(w.scv, idle); err != nil {
		t.Fatal(err)
	}
	orphan := records.Record{Handle: "pi-0rphan", Agent: "pi", Owner: goneOwner(t), StartedUnix: time.Now().Unix()}
	if err := records.Write(w.scv, orphan); err != nil {
		t.Fatal(err)
	}
	out := w.run("", "ps")
	want(t, out, 0, "HANDLE", "codex-3f9a2c", "sess-1", "codex-2 turn 3", "running", "2m0", "/work/proj", "scv-1a", "background", "1 orphans await cleanup")
	if strings.Contains(out.stdout, "pi-0rphan") {
		t.Fatalf("ps lists an orphan without --all:\n%s", out.stdout)
	}
	want(t, w.run("", "ps", "--all"), 0, "pi-0rphan", "orphan")

	want(t, w.run("", "kill", "claude-none"), 1, "no delegated run has the handle claude-none; run scv agents ps")
	want(t, w.run("", "kill", "../x"), 2, "cannot be a file name")

	// A run whose owner lives: stopped, and marked for the owner, which
	// removes the record itself.
	want(t, w.run("", "kill", "codex-3f9a2c"), 0, "stopped codex-3f9a2c (codex)")
	waitDone(t, done, "the killed agent")
	got, err := records.Read(w.scv, "codex-3f9a2c")
	if err != nil || got.KillRequestedUnix == 0 {
		t.Fatalf("record after kill = %+v, %v; want it kept with kill_requested_unix", got, err)
	}

	// Orphans: stopped and their records removed.
	agent2, done2 := startAgent(t, "grok-77aa")
	if err := records.Write(w.scv, records.Record{Handle: "grok-77aa", Agent: "grok", AgentProcess: agent2, Owner: goneOwner(t)}); err != nil {
		t.Fatal(err)
	}
	want(t, w.run("", "kill", "--orphans"), 0, "stopped orphan grok-77aa", "stopped orphan pi-0rphan")
	waitDone(t, done2, "the orphan's agent")
	recs, _ := records.List(w.scv)
	for _, rec := range recs {
		if rec.Handle == "grok-77aa" || rec.Handle == "pi-0rphan" {
			t.Fatalf("orphan record %s left", rec.Handle)
		}
	}
	want(t, w.run("", "kill", "--orphans"), 0, "no orphans")

	// A corrupt record: reported by ps, removed by kill.
	w.write("state/delegations/dsh-bad.json", "{")
	want(t, w.run("", "ps"), 0, "dsh-bad.json is corrupt", "scv agents kill dsh-bad")
	want(t, w.run("", "kill", "dsh-bad"), 0, "removed the corrupt record of dsh-bad")
	if _, err := os.Stat(filepath.Join(records.Dir(w.scv), "dsh-bad.json")); !os.IsNotExist(err) {
		t.Fatal("corrupt record not removed")
	}
}

func TestGC(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	old := time.Now().Add(-40 * 24 * time.Hour)
	week := time.Now().Add(-8 * 24 * time.Hour)
	files := map[string]time.Time{
		"agents/claude/.claude/projects/-work-p/0b1c-old.jsonl":          old,
		"agents/claude/.claude/projects/-work-p/live-7e57.jsonl":         old,
		"agents/claude/.claude/projects/-work-p/new.jsonl":               time.Now().Add(-10 * time.Minute),
		"agents/codex/sessions/2026/10/01/rollout-2026-10-01-aaaa.jsonl": old,
		"agents/codex/sessions/2026/11/23/rollout-2026-11-23-bbbb.jsonl": week,
		"agents/pi/.pi/agent/sessions/--work-p--/2026-10-01_cccc.jsonl":  old,
		"agents/pi/.pi/agent/sessions/--work-p--/2026-11-30_dddd.jsonl":  time.Now().Add(-2 * time.Hour),
	}
	for rel, mt := range files {
		p := w.write(rel, strings.Repeat("x", 100))
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"agents/codex/sessions/2026/10/01", "agents/codex/sessions/2026/10"} {
		if err := os.Chtimes(filepath.Join(w.scv, d), old, old); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink to a file outside, old: neither followed nor removed.
	outside := w.write(filepath.Join(t.TempDir(), "precious.jsonl"), "keep")
	link := filepath.Join(w.scv, "agents/pi/.pi/agent/sessions/--work-p--/link.jsonl")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	self, _ := records.Self()
	if err := records.MarkConversation(w.scv, "live-7e57", self); err != nil {
		t.Fatal(err)
	}
	if err := records.MarkConversation(w.scv, "aaaa", goneOwner(t)); err != nil {
		t.Fatal(err)
	}

	dry := w.run("", "gc", "--dry-run")
	want(t, dry, 0, "claude: would remove 1 transcripts", "0b1c-old.jsonl", "codex: would remove 1 transcripts", "rollout-2026-10-01-aaaa.jsonl", "pi: would remove 1 transcripts")
	for rel := range files {
		if _, err := os.Stat(filepath.Join(w.scv, rel)); err != nil {
			t.Fatalf("dry run removed %s", rel)
		}
	}
	want(t, w.run("", "gc", "--older-than", "7d", "codex"), 0, "codex: removed 2 transcripts")
	if strings.Contains(w.run("", "gc", "--dry-run", "codex").stdout, "claude") {
		t.Fatal("gc codex looked at claude")
	}
	if _, err := os.Stat(filepath.Join(w.scv, "agents/codex/sessions/2026/10")); !os.IsNotExist(err) {
		t.Fatal("emptied old directories were kept")
	}
	want(t, w.run("", "gc"), 0, "claude: removed 1 transcripts", "pi: removed 1 transcripts")
	for rel, keep := range map[string]bool{
		"agents/claude/.claude/projects/-work-p/0b1c-old.jsonl":         false,
		"agents/claude/.claude/projects/-work-p/live-7e57.jsonl":        true,
		"agents/claude/.claude/projects/-work-p/new.jsonl":              true,
		"agents/pi/.pi/agent/sessions/--work-p--/2026-10-01_cccc.jsonl": false,
		"agents/pi/.pi/agent/sessions/--work-p--/2026-11-30_dddd.jsonl": true,
	} {
		_, err := os.Stat(filepath.Join(w.scv, rel))
		if keep != (err == nil) {
			t.Errorf("%s: kept=%v, want %v", rel, err == nil, keep)
		}
	}
	if _, err := os.Lstat(link); err != nil {
		t.Fatal("gc removed a symlink")
	}
	if data, _ := os.ReadFile(outside); string(data) != "keep" {
		t.Fatal("gc touched a symlink's target")
	}
}

func TestStatusOfFileCheckedAgents(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := w.run("", "status")
	want(t, r, 0, "grok", "signed out: run scv agents login grok", "dsh", "signed out: run scv agents login dsh", "scv agents import scv")
	w.write("agents/grok/.grok/config.toml", "[models]\ndefault = \"relay\"\n[model.relay]\nmodel = \"grok-9\"\napi_key = \""+secret+"\"\n")
	w.write("agents/dsh/.dsh/.credentials.yaml", "refs:\n  DEEPSEEK_API_KEY: "+secret+"\n")
	w.write("agents/pi/.pi/agent/auth.json", `{"anthropic":{"type":"oauth","access":"`+secret+`"}}`)
	w.write("agents/scv/config.toml", "[provider]\nactive = \"scv\"\n[providers.scv]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \""+secret+"\"\n")
	r = w.run("", "status")
	want(t, r, 0, `signed in (API key in config, model "grok-9")`, "signed in (API key)", "sign-ins: anthropic", `signed in (provider scv, model "m" at 127.0.0.1:9)`)
}

func TestStatusOfCLICheckedAgents(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := w.run("", "status")
	want(t, r, 0, filepath.Join(fakeBin, "claude"), "signed in (Claude account, max)", "signed out: run scv agents login codex")
	if strings.Contains(r.stdout, "person@example.com") || strings.Contains(r.stdout, "ABCD") {
		t.Fatalf("status printed the CLI's output:\n%s", r.stdout)
	}
	w.write("agents/codex/auth.json", `{"OPENAI_API_KEY":"x"}`)
	want(t, w.run("", "status"), 0, "signed in (API key)")
	calls, _ := os.ReadFile(filepath.Join(w.scv, "agents/claude/calls"))
	if !strings.Contains(string(calls), "claude auth status HOME="+filepath.Join(w.scv, "agents/claude")+" ANTHROPIC_API_KEY=unset OPENAI_API_KEY=unset") {
		t.Fatalf("claude ran without the private environment: %s", calls)
	}
	codexCalls, _ := os.ReadFile(filepath.Join(w.scv, "agents/codex/calls"))
	if !strings.Contains(string(codexCalls), "codex login status CODEX_HOME="+filepath.Join(w.scv, "agents/codex")) {
		t.Fatalf("codex calls: %s", codexCalls)
	}
}

func TestLoginLogoutOwnCommand(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	want(t, w.run("", "login", "claude", "--", "--console"), 0, "claude: run scv agents status")
	want(t, w.run("", "logout", "claude"), 0, "claude: signed out of its private home")
	calls, _ := os.ReadFile(filepath.Join(w.scv, "agents/claude/calls"))
	for _, line := range []string{"claude auth login --console HOME=", "claude auth logout HOME="} {
		if !strings.Contains(string(calls), line) {
			t.Fatalf("calls lack %q:\n%s", line, calls)
		}
	}
	if fi, err := os.Stat(filepath.Join(w.scv, "agents/claude")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("private home: %v %v", fi, err)
	}
	w.path = "/usr/bin:/bin"
	want(t, w.run("", "login", "codex"), 1, "not installed")
}

func TestDSHLoginFromStdin(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	want(t, w.run("", "login", "dsh"), 1, "no key was given")
	r := w.run(secret+"\n", "login", "dsh")
	want(t, r, 0, "dsh: key stored in", "mode 0600")
	p := signin.DSHCredentialsPath(w.scv)
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", p, fi, err)
	}
	data, _ := os.ReadFile(p)
	if !strings.Contains(string(data), "DEEPSEEK_API_KEY: "+secret) {
		t.Fatalf("credentials: %s", data)
	}
	want(t, w.run("", "status"), 0, "signed in (API key)")
	want(t, w.run("", "logout", "dsh"), 0, "dsh: removed the stored key")
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatal("logout left the key file")
	}
	want(t, w.run("", "logout", "dsh"), 0, "dsh: no key was stored")
}

func TestPiLoginOpenAICompatible(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	r := w.run("https://relay.example/v1\nchat\ngpt-relay\n"+secret+"\n", "login", "pi", "--openai-compatible")
	want(t, r, 0, `pi: provider scv set up (chat API, model "gpt-relay")`)
	want(t, w.run(secret+"\n", "login", "pi", "--openai-compatible", "--base-url", "ftp://x", "--wire-api", "chat", "--model", "m"), 2, "not an http or https URL")
	want(t, w.run("", "status"), 0, `default provider scv, openai-completions API at relay.example, model "gpt-relay"; sign-ins: scv`)
	want(t, w.run("", "logout", "pi"), 0, "removed the stored sign-ins", "removed provider scv")
	want(t, w.run("", "status"), 0, "signed out: run scv agents login pi")
}

const scvConfig = `[provider]
active = "relay"
[providers.relay]
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
model = "gpt-relay"
api_key_env = "RELAY_TOKEN"
`

func TestImportPiAndSCVFromSCVProvider(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write("config.toml", scvConfig)
	want(t, w.run("", "import", "pi", "--from-scv-provider"), 1, "RELAY_TOKEN")
	w.extra = []string{"RELAY_TOKEN=" + secret}
	want(t, w.run("", "import", "pi", "--from-scv-provider"), 0, "pi now uses SCV's provider relay", `model "gpt-relay"`)
	authPath, modelsPath, _ := signin.PiFiles(w.scv)
	var auth map[string]map[string]string
	data, _ := os.ReadFile(authPath)
	if json.Unmarshal(data, &auth) != nil || auth["scv"]["key"] != secret {
		t.Fatalf("auth.json: %s", data)
	}
	if data, _ := os.ReadFile(modelsPath); !strings.Contains(string(data), `"sessionAffinityFormat": "openai-nosession"`) {
		t.Fatalf("models.json: %s", data)
	}
	want(t, w.run("", "import", "scv"), 0, "the nested SCV now uses a copy of SCV's provider relay")
	r := w.run("", "status")
	want(t, r, 0, "up to date", `signed in (provider scv, model "gpt-relay" at 127.0.0.1:9)`)
	w.extra = []string{"RELAY_TOKEN=rotated"}
	want(t, w.run("", "status"), 0, "SCV's provider relay has changed since the import; run scv agents import pi --from-scv-provider")
	want(t, w.run("", "logout", "scv"), 0, "scv: removed")
	if _, err := os.Stat(signin.SCVConfigPath(w.scv)); !os.IsNotExist(err) {
		t.Fatal("logout scv left the config")
	}
	if _, err := os.Stat(signin.ImportRecordPath(w.scv, "scv")); !os.IsNotExist(err) {
		t.Fatal("logout scv left the import record")
	}
}

// TestLoginSCVCopiesTheProvider: scv agents login scv does what
// scv agents import scv does (issue 16): the nested SCV gets a copy of
// SCV's active provider, and status then says it is signed in.
func TestLoginSCVCopiesTheProvider(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write("config.toml", scvConfig)
	want(t, w.run("", "login", "scv", "--", "--x"), 2, "takes no arguments after --")
	w.extra = []string{"RELAY_TOKEN=" + secret}
	want(t, w.run("", "login", "scv"), 0, "the nested SCV now uses a copy of SCV's provider relay")
	want(t, w.run("", "status"), 0, `signed in (provider scv, model "gpt-relay" at 127.0.0.1:9)`)
	if data, err := os.ReadFile(signin.SCVConfigPath(w.scv)); err != nil || !strings.Contains(string(data), secret) {
		t.Fatalf("the nested SCV's config.toml after login (%v):\n%s", err, data)
	}
}

func TestImportCodexAndGrok(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	codexHome := filepath.Join(w.home, ".codex")
	w.write(filepath.Join(codexHome, "config.toml"), "model = \"gpt-5.5\"\nmodel_provider = \"relay\"\n[model_providers.relay]\nenv_key = \"RELAY_API_KEY\"\n")
	w.write(filepath.Join(codexHome, "auth.json"), `{"auth_mode":"chatgpt","tokens":{"refresh_token":"`+secret+`"}}`)
	r := w.run("", "import", "codex")
	want(t, r, 0, "codex: copied "+codexHome+"/config.toml: model gpt-5.5, provider relay", "auth.json not copied: it holds a ChatGPT sign-in", "warning: provider relay: RELAY_API_KEY")
	if _, err := os.Stat(filepath.Join(w.scv, "agents/codex/auth.json")); !os.IsNotExist(err) {
		t.Fatal("a ChatGPT auth.json was copied")
	}
	want(t, w.run("", "import", "codex", "--from", filepath.Join(w.home, "none")), 1, "there is no Codex config at")

	grokHome := filepath.Join(w.home, "mygrok")
	w.write(filepath.Join(grokHome, "config.toml"), "[models]\ndefault = \"relay\"\n[model.relay]\nmodel = \"grok-9\"\napi_key = \""+secret+"\"\n")
	w.extra = []string{"GROK_HOME=" + grokHome}
	want(t, w.run("", "import", "grok"), 0, "default model: relay", "profile relay: model grok-9 (api_key stored)")
	want(t, w.run("", "status"), 0, `signed in (API key in config, model "grok-9")`, "up to date")
}
