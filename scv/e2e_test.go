package main_test

// End-to-end tests: TestMain builds the real scv and scv-server side by
// side, and each test runs `scv exec` as a user would, against the built-in
// demo provider and against a scripted OpenAI-compatible server on
// loopback. Nothing is skipped: when scv-server does not build, these fail.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit/bins"
	"go.uber.org/goleak"
)

// scvBin is the built scv; scv-server and scv-tui sit next to it, where
// scv looks first.
var scvBin string

func TestMain(m *testing.M) {
	dir, err := bins.Build("scv-server", "scv-tui", "scv")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scvBin = filepath.Join(dir, "scv")
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	bins.Cleanup()
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// runSCV runs scv with args in a clean environment: SCV_HOME is home, no
// OpenAI variables leak in from the developer's shell, and stdin is not a
// terminal.
func runSCV(t *testing.T, home string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := scvCmd(ctx, home, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	code := 0
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running scv: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("scv %q timed out; stderr:\n%s", args, stderr.String())
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// scvCmd returns the command of scv with args in a clean environment.
func scvCmd(ctx context.Context, home string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, scvBin, args...)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "SCV_") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "SCV_HOME="+home)
	return cmd
}

// events decodes NDJSON output, failing on any line that is not a known,
// valid protocol event.
func events(t *testing.T, out string) []protocol.Event {
	t.Helper()
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("--json output does not end with a newline: %q", out)
	}
	var evs []protocol.Event
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		ev, err := protocol.DecodeEvent([]byte(line))
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	return evs
}

// replyText is what scv exec prints on stdout for evs: every assistant
// message's text, each ending with a newline.
func replyText(evs []protocol.Event) string {
	var b strings.Builder
	var msg strings.Builder
	streamed := false
	for _, ev := range evs {
		switch ev := ev.(type) {
		case *protocol.AssistantDelta:
			msg.WriteString(ev.Content)
			streamed = streamed || ev.Content != ""
		case *protocol.AssistantCompleted:
			s := msg.String()
			if !streamed {
				s = ev.Content
			}
			if s != "" && !strings.HasSuffix(s, "\n") {
				s += "\n"
			}
			b.WriteString(s)
			msg.Reset()
			streamed = false
		}
	}
	return b.String()
}

func TestExecDemo(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	plain := runSCV(t, home, "exec", "--cd", ws, "hello")
	if plain.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", plain.code, plain.stderr)
	}
	if !strings.Contains(plain.stdout, "demo") || !strings.HasSuffix(plain.stdout, "\n") {
		t.Errorf("stdout = %q, want the demo's reply ending in a newline", plain.stdout)
	}
	if !strings.Contains(plain.stderr, "• read") {
		t.Errorf("stderr %q does not show the demo's read call", plain.stderr)
	}

	js := runSCV(t, home, "exec", "--json", "--cd", ws, "hello")
	if js.code != 0 {
		t.Fatalf("--json exit %d; stderr:\n%s", js.code, js.stderr)
	}
	evs := events(t, js.stdout)
	if _, ok := evs[len(evs)-1].(*protocol.TurnCompleted); !ok {
		t.Errorf("last event is %s, want turn.completed", evs[len(evs)-1].Kind())
	}
	// The plain run printed exactly the text the events carry.
	if want := replyText(evs); plain.stdout != want {
		t.Errorf("plain stdout = %q\nwant the --json run's text %q", plain.stdout, want)
	}
}

// TestExecShowsRetries: a retried model request is one line on stderr
// with the provider's status and message, not a server log line.
func TestExecShowsRetries(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.Start(t)
	srv.Enqueue(fakeopenai.Script(fakeopenai.APIError(429, "slow down please"), fakeopenai.Header("Retry-After", "1")),
		fakeopenai.Script(fakeopenai.Text("Made it.")))
	home := t.TempDir()
	cfg := strings.Replace(srv.Config(""), "max_retries = 0", "max_retries = 2", 1)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runSCV(t, home, "exec", "--no-daemon", "--cd", t.TempDir(), "hi")
	if r.code != 0 || r.stdout != "Made it.\n" || !strings.Contains(r.stderr, "scv: retrying (2/3) in 1 s: HTTP 429") ||
		!strings.Contains(r.stderr, "slow down please") || strings.Contains(r.stderr, "level=") {
		t.Fatalf("exec: %+v", r)
	}
}

// fakeHome writes a config.toml that points scv-server at srv.
func fakeHome(t *testing.T, srv *fakeopenai.Server) string {
	t.Helper()
	home := t.TempDir()
	cfg := srv.Config("")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// readEnv scripts a model that reads .env, then answers.
func readEnv() []fakeopenai.Reply {
	return []fakeopenai.Reply{
		fakeopenai.Script(fakeopenai.ToolCall("call_1", "read", `{"path":".env"}`)),
		fakeopenai.Script(fakeopenai.Text("Checked the file.")),
	}
}

func TestExecFakeOpenAI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		replies []fakeopenai.Reply
		args    []string
		// wantCode and wantOut are exact; wantErr and notErr are
		// substrings of stderr.
		wantCode int
		wantOut  string
		wantErr  []string
		notErr   []string
		// toolResult, when set, is a substring of the tool message the
		// model received in its second request.
		toolResult string
	}{
		{
			name:    "text reply",
			replies: []fakeopenai.Reply{fakeopenai.Script(fakeopenai.Text("Hello", " from", " the fake."))},
			wantOut: "Hello from the fake.\n",
		},
		{
			name:     "provider error",
			replies:  []fakeopenai.Reply{fakeopenai.Script(fakeopenai.APIError(400, "the model is on strike"))},
			wantCode: 1,
			wantErr:  []string{"scv: turn failed (provider_error)", "the model is on strike"},
		},
		{
			name:       "approval needed without a terminal is denied",
			replies:    readEnv(),
			wantOut:    "Checked the file.\n",
			wantErr:    []string{"• read .env", `scv: denied "`, "it needs approval and there is no terminal to ask", "--approval-policy auto", "✗ failed"},
			notErr:     []string{"✓ done"},
			toolResult: "denied",
		},
		{
			name:       "approval policy auto runs it",
			replies:    readEnv(),
			args:       []string{"--approval-policy", "auto"},
			wantOut:    "Checked the file.\n",
			wantErr:    []string{"• read .env", "  ✓ done", "scv: warning: Approval policy is auto"},
			notErr:     []string{"denied", "level=WARN"},
			toolResult: "SECRET=hunter2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeopenai.Start(t)
			srv.Enqueue(tt.replies...)
			home, ws := fakeHome(t, srv), t.TempDir()
			if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET=hunter2\n"), 0o600); err != nil {
				t.Fatal(err)
			}

			args := append([]string{"exec", "--cd", ws}, tt.args...)
			r := runSCV(t, home, append(args, "do the thing")...)
			if r.code != tt.wantCode {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", r.code, tt.wantCode, r.stderr)
			}
			if r.stdout != tt.wantOut {
				t.Errorf("stdout = %q, want %q", r.stdout, tt.wantOut)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr does not contain %q:\n%s", s, r.stderr)
				}
			}
			for _, s := range tt.notErr {
				if strings.Contains(r.stderr, s) {
					t.Errorf("stderr contains %q:\n%s", s, r.stderr)
				}
			}
			reqs := srv.Requests()
			if len(reqs) == 0 || !strings.Contains(string(reqs[0].Body), "do the thing") {
				t.Errorf("the prompt did not reach the provider (%d requests)", len(reqs))
			}
			if tt.toolResult != "" {
				if len(reqs) < 2 {
					t.Fatalf("%d provider requests, want 2", len(reqs))
				}
				var tool string
				for _, m := range reqs[1].Messages {
					if m.Role == "tool" {
						tool = m.Content
					}
				}
				if !strings.Contains(tool, tt.toolResult) {
					t.Errorf("tool result %q does not contain %q", tool, tt.toolResult)
				}
			}
		})
	}
}

func TestExecJSON(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.Start(t)
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("one ", "two")))
	r := runSCV(t, fakeHome(t, srv), "exec", "--json", "--cd", t.TempDir(), "count")
	if r.code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	evs := events(t, r.stdout)
	if _, ok := evs[0].(*protocol.Initialized); !ok {
		t.Errorf("first event is %s, want initialized", evs[0].Kind())
	}
	if _, ok := evs[len(evs)-1].(*protocol.TurnCompleted); !ok {
		t.Errorf("last event is %s, want turn.completed", evs[len(evs)-1].Kind())
	}
	if got := replyText(evs); got != "one two\n" {
		t.Errorf("the deltas carry %q, want %q", got, "one two\n")
	}
}

func TestExecUsage(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, args := range [][]string{
		{"exec"},
		{"exec", "--approval-policy", "sometimes", "hi"},
	} {
		r := runSCV(t, home, args...)
		if r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "Run 'scv exec --help' for usage.") {
			t.Errorf("scv %q: exit %d, stdout %q, stderr %q; want exit 2 and a usage hint", args, r.code, r.stdout, r.stderr)
		}
	}
}

func TestServerIsScvServer(t *testing.T) {
	t.Parallel()
	// `scv server --stdio` is scv-server itself: the same handshake.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := scvCmd(ctx, t.TempDir(), "server", "--stdio")
	cmd.Stdin = strings.NewReader(`{"type":"initialize","request_id":"1","protocol_version":3,"client":{"name":"e2e","version":"0"}}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scv server: %v", err)
	}
	evs := events(t, string(out))
	init, ok := evs[0].(*protocol.Initialized)
	if !ok || init.ProtocolVersion != 3 || init.Server.Name != "scv-server" {
		t.Errorf("first event %s, want initialized from scv-server for protocol 3", strings.TrimSpace(string(out)))
	}
}

func TestNoArgsRunsTheTUI(t *testing.T) {
	t.Parallel()
	// scv execs scv-tui, which needs a terminal (scv-tui/e2e_test.go drives
	// it in tmux).
	r := runSCV(t, t.TempDir())
	if r.code != 1 || !strings.Contains(r.stderr, "scv-tui: the terminal UI needs a terminal on stdin and stdout") {
		t.Errorf("scv: exit %d, stderr %q; want scv-tui's needs-a-terminal message", r.code, r.stderr)
	}
}

func TestExecInterrupt(t *testing.T) {
	// The model hangs mid-reply; SIGINT makes scv cancel the turn over the
	// protocol, and the real server confirms it.
	srv := fakeopenai.Start(t)
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("thinking"), fakeopenai.Hang()))
	home := fakeHome(t, srv)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := scvCmd(ctx, home, "exec", "--cd", t.TempDir(), "take your time")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The request has arrived; give the first delta a moment to be sent
	// on, though the cancel works the same before it.
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("scv exec: %v, want exit status 130; stderr:\n%s", err, stderr.String())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancel took %s", d)
	}
	for _, s := range []string{"scv: cancelling the turn", "scv: the turn was cancelled"} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("stderr does not contain %q:\n%s", s, stderr.String())
		}
	}
	if out := stdout.String(); out != "" && !strings.HasSuffix(out, "\n") {
		t.Errorf("stdout %q does not end with a newline", out)
	}
}

// BenchmarkExec is scv exec answering a one-line prompt from a local
// scripted model (fakeopenai on loopback), process start to exit, server
// start and exit included; scripts/bench.sh reports it. ns/op is the wall
// time.
//
// peak-RSS-MiB is the largest peak resident set of scv and the scv-server
// it reaps. Linux charges a process started with vfork (as os/exec does)
// with its parent's peak at exec, which here would be this test binary's;
// so when /usr/bin/time is present the run goes through it (GNU time
// forks), and the figure is what scv and scv-server themselves used.
func BenchmarkExec(b *testing.B) {
	srv := fakeopenai.Start(b)
	home, ws := b.TempDir(), b.TempDir()
	cfg := srv.Config("")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	peak := newPeakMeter(b)
	for b.Loop() {
		b.StopTimer()
		srv.Enqueue(fakeopenai.Script(fakeopenai.Text("Hello! How can I help?")))
		cmd := scvCmd(context.Background(), home, "exec", "--cd", ws, "hello")
		peak.wrap(cmd)
		b.StartTimer()
		out, err := cmd.CombinedOutput()
		b.StopTimer()
		if err != nil {
			b.Fatalf("scv exec: %v\n%s", err, out)
		}
		peak.record(b, cmd)
		b.StartTimer()
	}
	b.ReportMetric(float64(peak.max)/(1<<20), "peak-RSS-MiB")
}

// BenchmarkExecFiveBashCalls is scv exec --approval-policy auto on a turn
// in which the scripted model makes five sequential bash calls (echo
// step-N), one per response, then answers: process start to exit, server
// start and exit included; scripts/bench.sh reports it. ns/op is the wall
// time; peak-RSS-MiB is measured as in BenchmarkExec.
//
// HOME is an empty directory, so bash -lc reads the system profile only:
// the developer account's own login profile (pyenv init takes 120 ms per
// shell on the project machine) would swamp what SCV does.
func BenchmarkExecFiveBashCalls(b *testing.B) {
	srv := fakeopenai.Start(b)
	home, ws, userHome := b.TempDir(), b.TempDir(), b.TempDir()
	cfg := srv.Config("")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	peak := newPeakMeter(b)
	first := true
	for b.Loop() {
		b.StopTimer()
		for i := 1; i <= 5; i++ {
			srv.Enqueue(fakeopenai.Script(fakeopenai.ToolCall(fmt.Sprintf("call_%d", i), "bash", fmt.Sprintf(`{"command":"echo step-%d"}`, i))))
		}
		srv.Enqueue(fakeopenai.Script(fakeopenai.Text("All five steps ran.")))
		before := len(srv.Requests())
		cmd := scvCmd(context.Background(), home, "exec", "--approval-policy", "auto", "--cd", ws, "run the steps")
		cmd.Env = append(cmd.Env, "HOME="+userHome)
		peak.wrap(cmd)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		b.StartTimer()
		err := cmd.Run()
		b.StopTimer()
		if err != nil || stdout.String() != "All five steps ran.\n" {
			b.Fatalf("scv exec: %v\nstdout %q\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
		if first {
			// The model read every step's result.
			first = false
			reqs := srv.Requests()[before:]
			if len(reqs) != 6 {
				b.Fatalf("%d model requests, want 6", len(reqs))
			}
			for i := 1; i <= 5; i++ {
				m := reqs[i].Messages
				if last := m[len(m)-1]; last.Role != "tool" || last.Content != fmt.Sprintf("exit 0\nstep-%d\n", i) {
					b.Fatalf("request %d ends with %+v", i+1, last)
				}
			}
		}
		peak.record(b, cmd)
		b.StartTimer()
	}
	b.ReportMetric(float64(peak.max)/(1<<20), "peak-RSS-MiB")
}

func TestExecBadConfig(t *testing.T) {
	// A malformed user file stops the server before it reads stdin; a
	// malformed project file refuses the session. Either way scv exec exits
	// 1 with the loader's message (file, line, key) and no stack trace.
	home := t.TempDir()
	ws := t.TempDir()
	userFile := filepath.Join(home, "config.toml")
	projectFile := filepath.Join(ws, ".scv", "config.toml")
	if err := os.MkdirAll(filepath.Dir(projectFile), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, file, text, want string
	}{
		{"user file", userFile, "[tools]\naproval_policy = \"never\"\n",
			userFile + `:2: unknown key "tools.aproval_policy"; see docs/configuration.md for the keys (did you mean "tools.approval_policy"?)`},
		{"project file", projectFile, "[tools]\noutput_limit_bytes = 1\n",
			projectFile + `:2: key "tools.output_limit_bytes" is 1, out of range: it must be a number of bytes from 1024 to 1048576`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(tt.file, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(tt.file)
			r := runSCV(t, home, "exec", "--cd", ws, "hi")
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 1 and %s", r.code, r.stderr, tt.want)
			}
			if strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "panic") || r.stdout != "" {
				t.Errorf("stdout %q, stderr:\n%s", r.stdout, r.stderr)
			}
			if tt.name == "user file" && strings.Contains(r.stderr, "exited before the turn ended") {
				t.Errorf("the configuration error is followed by a second message:\n%s", r.stderr)
			}
		})
	}
}

// peakMeter measures the peak resident memory of scv exec runs. Linux
// charges a process started with vfork (as os/exec does) with its parent's
// peak at exec, which would be this test binary's; so when /usr/bin/time
// is present each run goes through it (GNU time forks) and its %M is what
// scv and the scv-server it reaps used themselves.
type peakMeter struct {
	gnuTime string // empty without /usr/bin/time
	file    string
	max     int64 // bytes
}

func newPeakMeter(b *testing.B) *peakMeter {
	m := &peakMeter{file: filepath.Join(b.TempDir(), "rss")}
	if p, err := exec.LookPath("/usr/bin/time"); err == nil {
		m.gnuTime = p
	}
	return m
}

// wrap makes cmd (an scvCmd) run under GNU time.
func (m *peakMeter) wrap(cmd *exec.Cmd) {
	if m.gnuTime == "" {
		return
	}
	cmd.Args = append([]string{m.gnuTime, "-f", "%M", "-o", m.file, scvBin}, cmd.Args[1:]...)
	cmd.Path = m.gnuTime
}

// record takes the finished run's peak.
func (m *peakMeter) record(b *testing.B, cmd *exec.Cmd) {
	if m.gnuTime == "" {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			m.max = max(m.max, ru.Maxrss<<10)
		}
		return
	}
	data, err := os.ReadFile(m.file)
	if err != nil {
		b.Fatal(err)
	}
	kib, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		b.Fatalf("parsing %q: %v", data, err)
	}
	m.max = max(m.max, kib<<10)
}
