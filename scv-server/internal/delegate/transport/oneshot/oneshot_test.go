//go:build linux

package oneshot

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/scv-cli/scv/shared/paths"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hang bounds every wait of a test; it only guards against a hang.
const hang = 30 * time.Second

var handles atomic.Int64

// fake is one test's fake agent setup.
type fake struct {
	home string // SCV_HOME
	out  string // FAKE_DIR
	work string // the directory to run in
	r    *Runner
}

func script(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("testdata/fake-agent.sh")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newFake returns a Runner whose adapters run the fake agent script
// through /bin/bash, with base as the inherited environment (plus PATH and
// the FAKE_ variables).
func newFake(t *testing.T, opts Options, env ...string) *fake {
	t.Helper()
	f := &fake{home: t.TempDir(), out: t.TempDir()}
	work, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f.work = work
	var fakes []adapters.Adapter
	for _, a := range adapters.All() {
		a.Path, a.PreArgs, a.Env = "/bin/bash", []string{script(t)}, []string{"FAKE_*"}
		fakes = append(fakes, a)
	}
	opts.Home = f.home
	if opts.Adapters == nil {
		opts.Adapters = fakes
	}
	opts.BaseEnv = append([]string{"PATH=" + os.Getenv("PATH"), "FAKE_DIR=" + f.out}, env...)
	f.r = New(opts)
	return f
}

func (f *fake) call(agent, prompt string) delegate.Call {
	return delegate.Call{
		Agent: agent, Prompt: prompt, Dir: f.work, Workspace: f.work,
		Timeout: hang, Handle: agent + "-" + strconv.FormatInt(handles.Add(1), 10),
		SessionID: "sess-1",
	}
}

func (f *fake) run(t *testing.T, ctx context.Context, call delegate.Call, progress func(string)) delegate.Result {
	t.Helper()
	b, ok := f.r.Backend(call.Agent)
	if !ok {
		t.Fatalf("no backend %s", call.Agent)
	}
	done := make(chan delegate.Result, 1)
	go func() { done <- b.Run(ctx, call, progress) }()
	select {
	case res := <-done:
		if pids := procgroup.FindTagged(call.Handle); len(pids) > 0 {
			t.Errorf("processes of %s still alive: %v", call.Handle, pids)
		}
		return res
	case <-time.After(hang):
		t.Fatal("Run did not return")
		return delegate.Result{}
	}
}

func (f *fake) args(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.out, "args"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func (f *fake) env(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.out, "env"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func stream(name string) string {
	p, _ := filepath.Abs("../../output/testdata/" + name + ".jsonl")
	return p
}

func TestArgumentsAndDirectory(t *testing.T) {
	prompt := "fix \"it\" with 'quotes',\n  a $HOME, a `cmd` and \\ backslash"
	tests := []struct {
		agent          string
		model, effort  string
		newSess, resum string
		full           bool
		want           []string
	}{
		{"claude", "sonnet", "high", "0b6f3a52-5d7e-4a43-9a39-2f6f1f3f1a11", "", true,
			[]string{"-p", "--permission-mode", "bypassPermissions", "--output-format", "stream-json", "--verbose", "--session-id", "0b6f3a52-5d7e-4a43-9a39-2f6f1f3f1a11", "--model", "sonnet", "--effort", "high", prompt}},
		{"codex", "gpt-5.5", "xhigh", "", "thread-1", false,
			[]string{"exec", "--json", "-o", "{ofile}", "-m", "gpt-5.5", "-c", `model_reasoning_effort="xhigh"`, "resume", "thread-1", prompt}},
		{"grok", "grok-5", "low", "", "", true, []string{"--always-approve", "-m", "grok-5", "--reasoning-effort", "low", "-p", prompt}},
		{"dsh", "", "", "", "", false, []string{"--profile", "headless", prompt}},
		{"pi", "scv/m", "medium", "", "7f2c9a10-1111-4222-8333-444455556666", false,
			[]string{"-p", "--mode", "json", "--session", "{pisession}", "--model", "scv/m", "--thinking", "medium", prompt}},
	}
	for _, tc := range tests {
		t.Run(tc.agent, func(t *testing.T) {
			perms := map[string]string{}
			if tc.full {
				perms[tc.agent] = "full"
			}
			f := newFake(t, Options{Permissions: perms}, "FAKE_MODE=stream", "FAKE_STREAM=/dev/null")
			sub := filepath.Join(f.work, "proj dir")
			if err := os.Mkdir(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			call := f.call(tc.agent, prompt)
			call.Dir = sub
			call.Model, call.Effort, call.NewCLISession, call.ResumeCLISession = tc.model, tc.effort, tc.newSess, tc.resum
			b, _ := f.r.Backend(tc.agent)
			launch, err := b.Plan(call)
			if err != nil {
				t.Fatal(err)
			}
			if launch.Executable != "/bin/bash" || launch.Dir != sub || launch.FullPermissions != tc.full || launch.Args[0] != script(t) {
				t.Fatalf("launch %+v", launch)
			}
			f.run(t, context.Background(), call, nil)
			got := f.args(t)
			want := slices.Clone(tc.want)
			for i, w := range want {
				switch w {
				case "{ofile}":
					want[i] = filepath.Join(f.home, "agents", "codex", "tmp", call.Handle+".last-message.txt")
				case "{pisession}":
					want[i] = filepath.Join(f.home, "agents", "pi", ".pi", "agent", "sessions", "7f2c9a10-1111-4222-8333-444455556666.jsonl")
				}
			}
			if !slices.Equal(got, want) || !slices.Equal(launch.Args[1:], want) {
				t.Errorf("args\n got %q\nplan %q\nwant %q", got, launch.Args[1:], want)
			}
			cwd, _ := os.ReadFile(filepath.Join(f.out, "cwd"))
			if strings.TrimSpace(string(cwd)) != sub {
				t.Errorf("cwd %q, want %q", cwd, sub)
			}
		})
	}
}

func TestPlanRefusals(t *testing.T) {
	f := newFake(t, Options{})
	b, _ := f.r.Backend("dsh")
	call := f.call("dsh", "x")
	call.Model = "m"
	if _, err := b.Plan(call); !errors.Is(err, adapters.ErrUnsupportedOption) {
		t.Errorf("dsh with a model: %v", err)
	}
	call = f.call("claude", "-rf")
	b, _ = f.r.Backend("claude")
	if _, err := b.Plan(call); err == nil || !strings.Contains(err.Error(), `cannot start with "-"`) {
		t.Errorf("prompt starting with -: %v", err)
	}
	call = f.call("claude", "x")
	call.Model = "bad model"
	if res := f.run(t, context.Background(), call, nil); res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorNone || !strings.Contains(res.Error, "not valid") {
		t.Errorf("bad model result %+v", res)
	}
	if _, err := os.Stat(filepath.Join(f.out, "args")); err == nil {
		t.Error("a refused call launched the agent")
	}
}

func TestMissingExecutable(t *testing.T) {
	a, _ := adapters.Get("codex")
	a.Path = "/nonexistent/codex"
	b2, _ := adapters.Get("claude") // looked up in an empty HOME and PATH
	f := newFake(t, Options{Adapters: []adapters.Adapter{a, b2}, Env: paths.MapEnv(map[string]string{"HOME": t.TempDir(), "PATH": t.TempDir()})})
	for _, name := range []string{"codex", "claude"} {
		b, _ := f.r.Backend(name)
		call := f.call(name, "hello")
		if _, err := b.Plan(call); !errors.Is(err, ErrUnavailable) || !errors.Is(err, adapters.ErrNotInstalled) {
			t.Errorf("%s: Plan error %v", name, err)
		}
		res := f.run(t, context.Background(), call, nil)
		if res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorUnavailable || res.Error == "" || strings.Contains(res.Error, ErrUnavailable.Error()) {
			t.Errorf("%s: result %+v", name, res)
		}
	}
	if got := f.r.Offered(nil); len(got) != 0 {
		t.Errorf("uninstalled agents offered: %d", len(got))
	}
}

func TestEnvironment(t *testing.T) {
	inherited := []string{
		"LANG=C.UTF-8", "TMPDIR=/tmp/kept", "https_proxy=http://proxy:3128",
		// Not on the allow-list: a secret SCV never heard of, a provider
		// key whose name does not end in _API_KEY, loader variables
		// (issue 14, item 1).
		"GH_TOKEN=gh", "AWS_SECRET_ACCESS_KEY=aws", "MOONSHOT_TOKEN=sk-m", "LD_PRELOAD=/evil.so", "BASH_ENV=/evil.sh",
		"HOME=/home/user", "XDG_CONFIG_HOME=/home/user/.config",
		"OPENAI_API_KEY=sk-1", "ANTHROPIC_API_KEY=k", "MY_SERVICE_API_KEY=k",
		"SCV_HOME=/home/user/.scv", "SCV_MODEL=m", "SCV_APPROVAL_POLICY=never", "SCV_SERVER_BIN=/b",
		"ANTHROPIC_BASE_URL=u", "CLAUDE_CODE_OAUTH_TOKEN=t", "CLAUDE_CONFIG_DIR=/c", "CLAUDECODE=1",
		"OPENAI_BASE_URL=u", "CODEX_HOME=/home/user/.codex", "CODEX_BASE_URL=u",
		"GROK_HOME=/g", "GROK_API_BASE=u", "DSH_HOME=/d", "DSH_PERMISSION_MODE=ask", "DEEPSEEK_BASE_URL=u",
		"PI_CODING_AGENT_DIR=/p",
		"SCV_PARENT=/outer/home/s0/codex-0", "SCV_DELEGATION_DEPTH=1",
	}
	for _, name := range adapters.Names() {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, Options{Permissions: map[string]string{"dsh": "full"}, Instance: "/srv/scv"},
				append([]string{"FAKE_MODE=stream", "FAKE_STREAM=/dev/null"}, inherited...)...)
			call := f.call(name, "hello")
			call.Depth = 1
			f.run(t, context.Background(), call, nil)
			env := f.env(t)
			h := filepath.Join(f.home, "agents", name)
			want := map[string]string{
				"HOME": h, "SCV_HOME": h + "/.scv", "XDG_CONFIG_HOME": h + "/.config",
				"XDG_DATA_HOME": h + "/.local/share", "XDG_STATE_HOME": h + "/.local/state",
				"LANG": "C.UTF-8", "TMPDIR": "/tmp/kept", "https_proxy": "http://proxy:3128",
				"SCV_PARENT":           "/outer/home/s0/codex-0,/srv/scv/sess-1/" + call.Handle,
				"SCV_DELEGATION_DEPTH": "2",
			}
			switch name {
			case "codex":
				want["CODEX_HOME"] = h
			case "grok":
				want["GROK_HOME"], want["GROK_DISABLE_AUTOUPDATER"] = h+"/.grok", "1"
			case "dsh":
				want["DSH_HOME"], want["DSH_PERMISSION_MODE"] = h+"/.dsh", "danger-full-access"
			case "pi":
				want["PI_CODING_AGENT_DIR"] = h + "/.pi/agent"
			}
			for k, v := range want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			for _, kv := range inherited {
				k, v, _ := strings.Cut(kv, "=")
				if _, ok := want[k]; !ok && env[k] == v {
					t.Errorf("%s=%s was inherited", k, v)
				}
			}
			if !strings.HasPrefix(env[procgroup.TagVar], call.Handle) {
				t.Errorf("tag %q", env[procgroup.TagVar])
			}
			for _, d := range []string{h, h + "/.config", h + "/.local/state"} {
				if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("%s: %v %v", d, fi, err)
				}
			}
		})
	}
}

// chosenID is a CLI session id SCV chose, unlike any the canned streams
// report.
const chosenID = "c4c4c4c4-0000-4000-8000-00000000c401"

func TestCannedStreams(t *testing.T) {
	tests := []struct {
		agent, stream string
		mode          string
		status        delegate.Status
		kind          delegate.ErrorKind
		reply, errSub string
		session       string
		hint          string
	}{
		{"claude", "claude/success", "stream", delegate.StatusCompleted, "", "Fixed the off-by-one in x.go; `go test ./...` passes.", "", chosenID, ""},
		{"claude", "claude/signout", "stream", delegate.StatusFailed, delegate.ErrorSignedOut, "", "Please run /login", "", "scv agents login claude"},
		{"claude", "claude/refusal", "stream", delegate.StatusDeclined, "", "I can't help with that request.", "", "", ""},
		{"claude", "claude/failure", "stream", delegate.StatusFailed, delegate.ErrorUnavailable, "", "API Error: 529", "", ""},
		{"codex", "codex/success", "stream", delegate.StatusCompleted, "", "Updated main.go; tests pass.", "", "0199a213-81c0-7800-8aa1-bbab2a035a53", ""},
		{"codex", "codex/signout", "fail", delegate.StatusFailed, delegate.ErrorSignedOut, "", "401 Unauthorized", "", "scv agents login codex"},
		{"codex", "codex/failure", "fail", delegate.StatusFailed, delegate.ErrorUnavailable, "", "429", "", ""},
		{"codex", "codex/noreply", "codex-o", delegate.StatusCompleted, "", "final from the -o file", "", "", ""},
		{"pi", "pi/success", "stream", delegate.StatusCompleted, "", "All done.", "", chosenID, ""},
		{"pi", "pi/failure", "stream", delegate.StatusFailed, delegate.ErrorUnavailable, "", "503", "", ""},
		{"pi", "pi/signout", "stream", delegate.StatusFailed, delegate.ErrorSignedOut, "", "No API key", "", "scv agents login pi"},
		{"grok", "text/success", "stream", delegate.StatusCompleted, "", "", "", "", ""},
		{"dsh", "text/failure", "fail", delegate.StatusFailed, delegate.ErrorSignedOut, "", "MISSING_CREDENTIAL", "", "scv agents login dsh"},
		{"claude", "claude/nojson", "fail", delegate.StatusFailed, delegate.ErrorNone, "", "unknown option", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.agent+"/"+tc.stream, func(t *testing.T) {
			f := newFake(t, Options{OutputLimit: 1000}, "FAKE_MODE="+tc.mode, "FAKE_STREAM="+stream(tc.stream))
			var lines []string
			call := f.call(tc.agent, "do the work")
			call.NewCLISession = chosenID // taken by Claude and pi, ignored by the others
			res := f.run(t, context.Background(), call, func(l string) { lines = append(lines, l) })
			if res.Status != tc.status || res.Kind != tc.kind || (tc.reply != "" && res.Reply != tc.reply) ||
				!strings.Contains(res.Error, tc.errSub) || (tc.session != "" && res.CLISession != tc.session) || !strings.Contains(res.Hint, tc.hint) {
				t.Errorf("result %+v", res)
			}
			if tc.status == delegate.StatusCompleted && (res.ExitCode == nil || *res.ExitCode != 0 || res.Error != "") {
				t.Errorf("completed result %+v", res)
			}
			if tc.mode == "fail" && (res.ExitCode == nil || *res.ExitCode != 1 || !strings.Contains(res.StderrTail, "fatal error")) {
				t.Errorf("failed result: exit %v, stderr %q", res.ExitCode, res.StderrTail)
			}
			if tc.agent == "grok" && !strings.HasSuffix(res.Reply, "The answer is 42.") {
				t.Errorf("text reply %q", res.Reply)
			}
			if tc.stream == "claude/success" && len(lines) == 0 {
				t.Error("no progress")
			}
			if tc.agent == "codex" {
				if left, _ := os.ReadDir(filepath.Join(f.home, "agents", "codex", "tmp")); len(left) != 0 {
					t.Errorf("the -o file was left: %v", left)
				}
			}
		})
	}
}

func TestResultJSONNeverHoldsInternals(t *testing.T) {
	f := newFake(t, Options{}, "FAKE_MODE=stream", "FAKE_STREAM="+stream("claude/success"))
	call := f.call("claude", "x")
	call.NewCLISession = "0b6f3a52-5d7e-4a43-9a39-2f6f1f3f1a11"
	res := f.run(t, context.Background(), call, nil)
	if js := res.JSON(); strings.Contains(js, call.NewCLISession) || !strings.Contains(js, `"status":"completed"`) {
		t.Errorf("JSON %s", js)
	}
}

func TestExitedAtOnceIsUnavailable(t *testing.T) {
	f := newFake(t, Options{}, "FAKE_MODE=silent-exit")
	res := f.run(t, context.Background(), f.call("claude", "x"), nil)
	if res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorUnavailable || *res.ExitCode != 127 || !strings.Contains(res.Error, "exited with code 127") {
		t.Errorf("result %+v", res)
	}
}

func TestReplyBounded(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("ü"), 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, Options{OutputLimit: 1001}, "FAKE_MODE=stream", "FAKE_STREAM="+big)
	res := f.run(t, context.Background(), f.call("grok", "x"), nil)
	if res.Status != delegate.StatusCompleted || !res.Truncated || len(res.Reply) != 1000 || res.Reply != strings.Repeat("ü", 500) {
		t.Errorf("reply %d bytes, truncated %v", len(res.Reply), res.Truncated)
	}
}

func TestStderrFloodBounded(t *testing.T) {
	f := newFake(t, Options{}, "FAKE_MODE=flood")
	res := f.run(t, context.Background(), f.call("dsh", "x"), nil)
	if res.Status != delegate.StatusCompleted || res.Reply != "flooded" || len(res.StderrTail) > StderrTail || !res.Truncated ||
		res.StderrTail != strings.Repeat("e", StderrTail) {
		t.Errorf("result status %s reply %q tail %d bytes truncated %v", res.Status, res.Reply, len(res.StderrTail), res.Truncated)
	}
}

// waitLine returns a progress func that signals ch on the first "$ started".
func waitLine(ch chan<- struct{}) func(string) {
	var once atomic.Bool
	return func(l string) {
		if l == "$ started" && once.CompareAndSwap(false, true) {
			close(ch)
		}
	}
}

func TestTimeoutKillsSetsidDescendant(t *testing.T) {
	f := newFake(t, Options{}, "FAKE_MODE=setsid")
	call := f.call("claude", "x")
	// Long enough for the fake to start its child on a loaded machine;
	// the run itself never ends on its own.
	call.Timeout = 3 * time.Second
	res := f.run(t, context.Background(), call, nil)
	if res.Status != delegate.StatusTimeout || !strings.Contains(res.Error, "did not finish within 3s") || res.ExitCode != nil {
		t.Errorf("result %+v", res)
	}
	b, err := os.ReadFile(filepath.Join(f.out, "child"))
	if err != nil {
		t.Fatalf("the fake agent did not start its setsid child: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		t.Errorf("setsid descendant %d survived the timeout", pid)
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		mode    string
		minTime time.Duration
	}{
		{"hang", 0},
		{"ignore-term", StopGrace}, // KILL only after the grace
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			f := newFake(t, Options{}, "FAKE_MODE="+tc.mode)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{})
			go func() {
				select {
				case <-started:
				case <-time.After(hang):
				}
				cancel()
			}()
			t0 := time.Now()
			res := f.run(t, ctx, f.call("claude", "x"), waitLine(started))
			if res.Status != delegate.StatusCancelled || !strings.Contains(res.Error, "cancelled") {
				t.Errorf("result %+v", res)
			}
			if el := time.Since(t0); el < tc.minTime {
				t.Errorf("ended after %v, before the %v grace", el, tc.minTime)
			}
		})
	}
}

func TestRecords(t *testing.T) {
	f := newFake(t, Options{}, "FAKE_MODE=hang")
	// The fake waits until its record exists before it reports progress.
	f.r.opts.BaseEnv = append(f.r.opts.BaseEnv, "FAKE_RECORD_DIR="+records.Dir(f.home))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	call := f.call("pi", "x")
	call.Conversation, call.Turn, call.NewCLISession = "pi-1", 1, "7f2c9a10-1111-4222-8333-444455556666"
	var seen []records.Record
	var listErr error
	var mode os.FileMode
	progress := func(l string) {
		if seen != nil || l != "$ started" {
			return
		}
		seen, listErr = records.List(f.home)
		entries, _ := os.ReadDir(records.Dir(f.home))
		for _, e := range entries {
			if fi, err := e.Info(); err == nil {
				mode = fi.Mode().Perm()
			}
		}
		cancel()
	}
	// pi reads --mode json: make the fake's Bash line a pi tool event.
	a, _ := adapters.Get("pi")
	a.Path, a.PreArgs, a.Format, a.Env = "/bin/bash", []string{script(t)}, adapters.FormatStreamJSON, []string{"FAKE_*"}
	f.r = New(Options{Home: f.home, BaseEnv: f.r.opts.BaseEnv, Adapters: []adapters.Adapter{a}})
	res := f.run(t, ctx, call, progress)
	if res.Status != delegate.StatusCancelled {
		t.Errorf("result %+v", res)
	}
	if listErr != nil || len(seen) != 1 {
		t.Fatalf("records while running: %v, %v", seen, listErr)
	}
	rec := seen[0]
	self, _ := records.Self()
	if rec.Handle != call.Handle || rec.Agent != "pi" || rec.Session != "sess-1" || rec.Cwd != f.work || rec.Depth != 1 ||
		rec.Conversation != "pi-1" || rec.Turn != 1 || rec.AgentProcess.PID == 0 || rec.AgentProcess.StartTime == 0 || rec.Owner != self {
		t.Errorf("record %+v (self %+v)", rec, self)
	}
	if mode != 0o600 {
		t.Errorf("record mode %v", mode)
	}
	if left, err := records.List(f.home); err != nil || len(left) != 0 {
		t.Errorf("records after the run: %v, %v", left, err)
	}
	if fi, err := os.Stat(records.Dir(f.home)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("records dir: %v %v", fi, err)
	}
}

// TestKilledRunReadsAsCancelled stops a run as `scv agents kill` does:
// it marks the record, then stops the run's processes. The result is a
// cancelled run that names the command, not a failure.
func TestKilledRunReadsAsCancelled(t *testing.T) {
	f := newFake(t, Options{}, "FAKE_MODE=hang")
	// The fake waits until its record exists before it reports progress.
	f.r.opts.BaseEnv = append(f.r.opts.BaseEnv, "FAKE_RECORD_DIR="+records.Dir(f.home))
	call := f.call("claude", "x")
	started := make(chan struct{})
	killed := make(chan error, 1)
	go func() {
		select {
		case <-started:
		case <-time.After(hang):
			killed <- errors.New("the run did not start")
			return
		}
		rec, err := records.Read(f.home, call.Handle)
		if err != nil {
			killed <- err
			return
		}
		rec.KillRequestedUnix = time.Now().Unix()
		if err := records.Write(f.home, rec); err != nil {
			killed <- err
			return
		}
		records.StopRun(rec, StopGrace)
		killed <- nil
	}()
	res := f.run(t, context.Background(), call, waitLine(started))
	if err := <-killed; err != nil {
		t.Fatal(err)
	}
	if res.Status != delegate.StatusCancelled || res.Error != "the Claude Code run was stopped with `scv agents kill "+call.Handle+"`" {
		t.Errorf("result %+v", res)
	}
	if left, err := records.List(f.home); err != nil || len(left) != 0 {
		t.Errorf("records after the run: %v, %v", left, err)
	}
}

func TestOffered(t *testing.T) {
	f := newFake(t, Options{})
	var names []string
	for _, b := range f.r.Offered(nil) {
		names = append(names, b.Descriptor().Name)
	}
	// In an empty SCV home the agents whose sign-in is read from a file
	// (grok, dsh, pi) are signed out; claude and codex stay offered.
	if want := []string{"claude", "codex"}; !slices.Equal(names, want) {
		t.Errorf("offered %v, want %v", names, want)
	}
	// Signed in, DeepSeek Harness is offered too, in adapter order.
	if err := signin.WriteDSHKey(f.home, "sk-test-key"); err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, b := range f.r.Offered(nil) {
		names = append(names, b.Descriptor().Name)
	}
	if want := []string{"claude", "codex", "dsh"}; !slices.Equal(names, want) {
		t.Errorf("offered %v, want %v", names, want)
	}
	d := f.r.adaptersDescriptor("codex")
	if d.Product != "Codex" || !d.TakesModel || !d.TakesEffort || !d.TakesSession || d.ModelFamily == "" {
		t.Errorf("descriptor %+v", d)
	}
}

func (r *Runner) adaptersDescriptor(name string) delegate.Descriptor {
	b, _ := r.Backend(name)
	return b.Descriptor()
}

func TestInstanceID(t *testing.T) {
	if a, b := InstanceID("/a"), InstanceID("/b"); a == b || !strings.HasPrefix(a, "scv-") || len(a) != 16 {
		t.Errorf("ids %q %q", a, b)
	}
}

func TestConversationMarkers(t *testing.T) {
	const uuid = "0b6f3a52-5d7e-4a43-9a39-2f6f1f3f1a11"
	markers := func(f *fake) []string {
		t.Helper()
		ms, err := records.Markers(f.home)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range ms {
			ids = append(ids, m.CLISession)
		}
		return ids
	}
	// A conversation's turn leaves its marker for the conversation's
	// life, owned by this process.
	f := newFake(t, Options{}, "FAKE_MODE=stream", "FAKE_STREAM="+stream("claude/refusal"))
	call := f.call("claude", "x")
	call.Conversation, call.Turn, call.NewCLISession = "claude-1", 1, uuid
	res := f.run(t, context.Background(), call, nil)
	// The chosen id is the session, whatever id the stream reported.
	if res.CLISession != uuid {
		t.Errorf("CLI session %q, want the chosen %q", res.CLISession, uuid)
	}
	if got := markers(f); !slices.Equal(got, []string{uuid}) {
		t.Errorf("markers after a conversation turn: %v", got)
	}
	// A one-off run leaves none.
	f = newFake(t, Options{}, "FAKE_MODE=stream", "FAKE_STREAM=/dev/null")
	call = f.call("claude", "x")
	call.NewCLISession = uuid
	f.run(t, context.Background(), call, nil)
	if got := markers(f); len(got) != 0 {
		t.Errorf("markers after a one-off run: %v", got)
	}
	// Codex's thread id is marked once the stream reported it.
	f = newFake(t, Options{}, "FAKE_MODE=stream", "FAKE_STREAM="+stream("codex/success"))
	call = f.call("codex", "x")
	call.Conversation, call.Turn = "codex-1", 1
	call.NewCLISession = uuid // the tool's choice, which Codex does not take
	res = f.run(t, context.Background(), call, nil)
	if got := markers(f); !slices.Equal(got, []string{"0199a213-81c0-7800-8aa1-bbab2a035a53"}) || res.CLISession != got[0] {
		t.Errorf("codex markers %v, session %q", got, res.CLISession)
	}
}

func TestOversizedLineThroughProcess(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.jsonl")
	var b bytes.Buffer
	b.WriteString(`{"type":"system","subtype":"init","session_id":"s-1"}` + "\n")
	b.WriteString(`{"type":"user","message":{"content":"`)
	b.Write(bytes.Repeat([]byte("z"), 6<<20))
	b.WriteString(`"}}` + "\n")
	b.WriteString(`{"type":"result","subtype":"success","is_error":false,"result":"still here"}` + "\n")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newFake(t, Options{}, "FAKE_MODE=stream", "FAKE_STREAM="+p)
	call := f.call("claude", "x")
	call.NewCLISession = chosenID
	res := f.run(t, context.Background(), call, nil)
	if res.Status != delegate.StatusCompleted || res.Reply != "still here" || res.CLISession != chosenID {
		t.Errorf("result %+v", res)
	}
}

func TestTimedOutTurnKeepsItsSession(t *testing.T) {
	// A turn that times out after the CLI reported its session stays
	// resumable: the result carries the session id.
	f := newFake(t, Options{}, "FAKE_MODE=hang-session")
	call := f.call("claude", "x")
	call.Conversation, call.Turn, call.Timeout = "claude-1", 1, 5*time.Second
	call.NewCLISession = chosenID
	started := make(chan struct{})
	res := f.run(t, context.Background(), call, waitLine(started))
	select {
	case <-started:
	default:
		t.Fatal("the fake agent never reported progress")
	}
	if res.Status != delegate.StatusTimeout || res.CLISession != chosenID || res.Session != "claude-1" || res.Turn != 1 {
		t.Errorf("result %+v", res)
	}
}

func TestRunStartsThePlannedExecutable(t *testing.T) {
	// Plan resolves the executable shown for approval; Run starts that
	// one even if the lookup would now find another.
	bin1, bin2 := t.TempDir(), t.TempDir()
	for _, d := range []string{bin1, bin2} {
		// Copies of /bin/true; the test removes the first after Plan and
		// expects Run to fail starting it rather than find the second.
		data, err := os.ReadFile("/bin/true")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "dsh"), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := adapters.Get("dsh")
	env := paths.MapEnv(map[string]string{"HOME": t.TempDir(), "PATH": bin1 + ":" + bin2})
	f := newFake(t, Options{Adapters: []adapters.Adapter{a}, Env: env})
	b, _ := f.r.Backend("dsh")
	call := f.call("dsh", "x")
	launch, err := b.Plan(call)
	if err != nil || launch.Executable != filepath.Join(bin1, "dsh") {
		t.Fatalf("Plan = %+v, %v", launch, err)
	}
	if err := os.Remove(filepath.Join(bin1, "dsh")); err != nil {
		t.Fatal(err)
	}
	res := f.run(t, context.Background(), call, nil)
	if res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorUnavailable || !strings.Contains(res.Error, filepath.Join(bin1, "dsh")) {
		t.Errorf("result %+v; want the approved executable's start failure", res)
	}
	// A call that was not planned looks the executable up at run time.
	if res := f.run(t, context.Background(), f.call("dsh", "x"), nil); res.Status != delegate.StatusCompleted {
		t.Errorf("unplanned run %+v", res)
	}
}

// markerIDs returns the CLI sessions of the conversation markers in home.
func markerIDs(t *testing.T, home string) []string {
	t.Helper()
	ms, err := records.Markers(home)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.CLISession)
	}
	return ids
}

// TestSessionOnlyOnceReported: a turn of Claude or pi has a CLI session
// only once the stream reported one; a first turn that ended before (the
// CLI signed out, crashed or was stopped) has none and leaves no marker,
// so the conversation is forgotten rather than resumed on a session that
// never existed. A resumed turn keeps the session it resumed.
func TestSessionOnlyOnceReported(t *testing.T) {
	tests := []struct {
		name, agent string
		env         []string
		timeout     time.Duration
		resume      bool
		status      delegate.Status
		want        string // the CLI session
	}{
		{"claude signed out before init", "claude", []string{"FAKE_MODE=fail", "FAKE_STREAM=/dev/null", "FAKE_ERR=Invalid API key · Please run /login"}, hang, false, delegate.StatusFailed, ""},
		{"pi crashed before its header", "pi", []string{"FAKE_MODE=fail", "FAKE_STREAM=/dev/null", "FAKE_CODE=139"}, hang, false, delegate.StatusFailed, ""},
		{"claude timed out before init", "claude", []string{"FAKE_MODE=hang"}, 3 * time.Second, false, delegate.StatusTimeout, ""},
		{"claude timed out after init", "claude", []string{"FAKE_MODE=hang-session"}, 3 * time.Second, false, delegate.StatusTimeout, chosenID},
		{"pi signed out after its header", "pi", []string{"FAKE_MODE=stream", "FAKE_STREAM=" + stream("pi/signout")}, hang, false, delegate.StatusFailed, chosenID},
		{"claude resumed, crashed before init", "claude", []string{"FAKE_MODE=fail", "FAKE_STREAM=/dev/null"}, hang, true, delegate.StatusFailed, chosenID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, Options{}, tc.env...)
			call := f.call(tc.agent, "x")
			call.Conversation, call.Turn, call.Timeout = tc.agent+"-1", 1, tc.timeout
			if tc.resume {
				call.Turn, call.ResumeCLISession = 2, chosenID
			} else {
				call.NewCLISession = chosenID
			}
			res := f.run(t, context.Background(), call, nil)
			if res.Status != tc.status || res.CLISession != tc.want {
				t.Errorf("status %s, CLI session %q; want %s, %q (%+v)", res.Status, res.CLISession, tc.status, tc.want, res)
			}
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if got := markerIDs(t, f.home); !slices.Equal(got, want) {
				t.Errorf("markers %v, want %v", got, want)
			}
		})
	}
}

// TestPiConversationResumesItsFile runs two pi turns the way pi 0.73
// behaves: --session names the session file, and the stream's header
// carries an id of pi's own. The second turn must name the same file, so
// pi sees the first turn.
func TestPiConversationResumesItsFile(t *testing.T) {
	f := newFake(t, Options{}, "FAKE_MODE=pi-session")
	sessions := filepath.Join(f.home, "agents", "pi", ".pi", "agent", "sessions")
	call := f.call("pi", "first")
	call.Conversation, call.Turn, call.NewCLISession = "pi-1", 1, chosenID
	res := f.run(t, context.Background(), call, nil)
	if res.Status != delegate.StatusCompleted || res.Reply != "0 earlier turns" || res.CLISession != chosenID {
		t.Fatalf("first turn %+v", res)
	}
	if got := markerIDs(t, f.home); !slices.Equal(got, []string{chosenID}) {
		t.Errorf("markers after the first turn %v", got)
	}
	call = f.call("pi", "second")
	call.Conversation, call.Turn, call.ResumeCLISession = "pi-1", 2, res.CLISession
	res = f.run(t, context.Background(), call, nil)
	if res.Status != delegate.StatusCompleted || res.Reply != "1 earlier turns" || res.CLISession != chosenID {
		t.Errorf("second turn %+v; want it to continue the first turn's file", res)
	}
	if args := f.args(t); !slices.Contains(args, filepath.Join(sessions, chosenID+".jsonl")) {
		t.Errorf("second turn's args %q", args)
	}
	if entries, err := os.ReadDir(sessions); err != nil || len(entries) != 1 {
		t.Errorf("session files %v, %v; want the one SCV named", entries, err)
	}
	if got := markerIDs(t, f.home); !slices.Equal(got, []string{chosenID}) {
		t.Errorf("markers after the second turn %v", got)
	}
}
