package exec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/protocol"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if scenario := os.Getenv(fakeServerEnv); scenario != "" {
		os.Exit(fakeServer(scenario))
	}
	goleak.VerifyTestMain(m)
}

// TestNewCmdExec is the argv -> options table.
func TestNewCmdExec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		argv     []string
		want     Options
		wantCode cli.Code // of a refused command line
		wantErr  string
	}{
		{name: "prompt", argv: []string{"fix the test"}, want: Options{Prompt: "fix the test"}},
		{name: "stdin", argv: []string{"-"}, want: Options{Prompt: "-"}},
		{name: "json", argv: []string{"--json", "hi"}, want: Options{Prompt: "hi", JSON: true}},
		{name: "cd", argv: []string{"--cd", "../app", "hi"}, want: Options{Prompt: "hi", Dir: "../app"}},
		{name: "-C", argv: []string{"-C", "/src", "hi"}, want: Options{Prompt: "hi", Dir: "/src"}},
		{name: "flags after prompt", argv: []string{"hi", "--json"}, want: Options{Prompt: "hi", JSON: true}},
		{name: "policy auto", argv: []string{"--approval-policy", "auto", "hi"}, want: Options{Prompt: "hi", ApprovalPolicy: "auto"}},
		{name: "policy on-risk", argv: []string{"--approval-policy=on-risk", "hi"}, want: Options{Prompt: "hi", ApprovalPolicy: "on-risk"}},
		{name: "policy never", argv: []string{"--approval-policy", "never", "hi"}, want: Options{Prompt: "hi", ApprovalPolicy: "never"}},
		{name: "dash-dash prompt", argv: []string{"--", "--json"}, want: Options{Prompt: "--json"}},
		{name: "continue", argv: []string{"--continue", "go on"}, want: Options{Prompt: "go on", Continue: true}},
		{name: "continue with json", argv: []string{"--json", "--continue", "-"}, want: Options{Prompt: "-", JSON: true, Continue: true}},
		{name: "bad policy", argv: []string{"--approval-policy", "yolo", "hi"}, wantCode: cli.Usage, wantErr: `invalid --approval-policy "yolo": want one of on-risk, never, auto`},
		{name: "empty policy", argv: []string{"--approval-policy", "", "hi"}, wantCode: cli.Usage, wantErr: "invalid --approval-policy"},
		{name: "missing prompt", argv: nil, wantCode: cli.Usage, wantErr: "exec needs one PROMPT argument"},
		{name: "two prompts", argv: []string{"fix", "it"}, wantCode: cli.Usage, wantErr: "quote a prompt of several words"},
		{name: "empty prompt", argv: []string{"  "}, wantCode: cli.Usage, wantErr: "the prompt is empty"},
		{name: "unknown flag", argv: []string{"--model", "x", "hi"}, wantCode: cli.Usage, wantErr: "unknown flag: --model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &cmdutil.Factory{IO: &cmdutil.IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}}
			var got *Options
			cmd := NewCmdExec(f, func(o *Options) error { got = o; return nil })
			cmd.SetFlagErrorFunc(cli.FlagErrorFunc) // as the root does
			cmd.SetArgs(tt.argv)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if tt.wantCode != cli.OK {
				if code := cli.CodeOf(err); code != tt.wantCode {
					t.Fatalf("exit code = %d (%v), want %d", code, err, tt.wantCode)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				if got != nil {
					t.Error("runF ran for a refused command line")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Prompt != tt.want.Prompt || got.JSON != tt.want.JSON || got.Dir != tt.want.Dir || got.ApprovalPolicy != tt.want.ApprovalPolicy || got.Continue != tt.want.Continue {
				t.Errorf("options = {Prompt:%q JSON:%v Dir:%q ApprovalPolicy:%q Continue:%v}, want {Prompt:%q JSON:%v Dir:%q ApprovalPolicy:%q Continue:%v}",
					got.Prompt, got.JSON, got.Dir, got.ApprovalPolicy, got.Continue, tt.want.Prompt, tt.want.JSON, tt.want.Dir, tt.want.ApprovalPolicy, tt.want.Continue)
			}
			if got.ServerPath == nil || got.Signals == nil || got.IO != f.IO {
				t.Error("dependencies not wired from the factory")
			}
		})
	}
}

// syncBuffer is a buffer safe for the child's stderr copier and the run
// writing at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// onWrite, when set, sees every write (under the lock).
	onWrite func(p []byte)
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.onWrite != nil {
		b.onWrite(p)
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRun is the options -> behaviour table. Each case runs the test binary
// as a scripted server over real pipes.
func TestRun(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	workdir := t.TempDir()
	notDir := filepath.Join(workdir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		scenario string
		opts     Options // Prompt, Dir, JSON, ApprovalPolicy, timeouts
		stdin    string
		terminal bool
		// interrupts is how many interrupts arrive once "working" is on
		// stdout.
		interrupts int
		wantCode   cli.Code
		wantOut    string // exact stdout, unless checkJSON
		checkJSON  bool
		wantErr    []string // substrings of stderr or of the returned error
		notErr     []string
		// wantBoth, when set, is stdout and stderr as one stream, in the
		// order written: buffered stdout must not land after stderr that
		// followed it.
		wantBoth string
	}{
		{name: "text reply", scenario: "text", opts: Options{Prompt: "hi"}, wantOut: "Hello, world\n"},
		{name: "reply ending in newline gets no extra one", scenario: "newline-reply", opts: Options{Prompt: "hi"}, wantOut: "line one\nline two\n"},
		{name: "reply without deltas", scenario: "unstreamed", opts: Options{Prompt: "hi"}, wantOut: "all at once\n"},
		{
			name: "prompt, policy and absolute cwd reach the server", scenario: "echo",
			opts:    Options{Prompt: "what is 2+2?", ApprovalPolicy: "never", Dir: workdir},
			wantOut: fmt.Sprintf("prompt=%q args=%q cwd=%s\n", "what is 2+2?", []string{"--stdio", "--approval-policy", "never", "--log-level", "error"}, workdir),
		},
		{
			name: "no policy flag forwarded by default; the server logs only errors", scenario: "echo", opts: Options{Prompt: "x", Dir: workdir},
			wantOut: fmt.Sprintf("prompt=%q args=%q cwd=%s\n", "x", []string{"--stdio", "--log-level", "error"}, workdir),
		},
		{
			name: "-v adds the server's log", scenario: "echo", opts: Options{Prompt: "x", Dir: workdir, Verbose: true},
			wantOut: fmt.Sprintf("prompt=%q args=%q cwd=%s\n", "x", []string{"--stdio", "--log-level", "info"}, workdir),
		},
		{
			name: "prompt from stdin", scenario: "echo", opts: Options{Prompt: "-", Dir: workdir}, stdin: "explain\nthis\n",
			wantOut: fmt.Sprintf("prompt=%q args=%q cwd=%s\n", "explain\nthis", []string{"--stdio", "--log-level", "error"}, workdir),
		},
		{
			name: "prompt typed on the terminal", scenario: "echo", opts: Options{Prompt: "-", Dir: workdir}, stdin: "hi\n", terminal: true,
			wantOut: fmt.Sprintf("prompt=%q args=%q cwd=%s\n", "hi", []string{"--stdio", "--log-level", "error"}, workdir),
			wantErr: []string{"scv: reading the prompt from the terminal; end it with Ctrl-D"},
		},
		{name: "empty stdin prompt", scenario: "text", opts: Options{Prompt: "-"}, stdin: "\n", wantCode: cli.Usage, wantErr: []string{"the prompt read from stdin is empty"}},
		{name: "prompt too large", scenario: "text", opts: Options{Prompt: strings.Repeat("x", protocol.MaxPromptBytes+1)}, wantCode: cli.Usage, wantErr: []string{"over the 256 KiB limit"}},
		{name: "workspace not a directory", scenario: "text", opts: Options{Prompt: "hi", Dir: notDir}, wantCode: cli.Failure, wantErr: []string{"is not a directory"}},
		{
			name: "tool activity on stderr", scenario: "tools", opts: Options{Prompt: "hi"},
			wantOut:  "Let me look.\nDone.\n",
			wantErr:  []string{"• read src/main.go\n  ✓ done\n", "• bash go test ./...\n  ✗ failed: exit status 1\n"},
			wantBoth: "Let me look.\n• read src/main.go\n  ✓ done\n• bash go test ./...\n  ✗ failed: exit status 1\nDone.\n",
		},
		{
			name: "long streamed reply, byte for byte", scenario: "long", opts: Options{Prompt: "hi"},
			wantOut: longReply() + "end\n", wantBoth: longReply() + "• bash true\n  ✓ done\nend\n",
		},
		{name: "turn failed", scenario: "fail", opts: Options{Prompt: "hi"}, wantCode: cli.Failure, wantOut: "partial\n", wantErr: []string{"turn failed (provider_error): upstream said no"}},
		{name: "server crash", scenario: "crash", opts: Options{Prompt: "hi"}, wantCode: cli.Failure, wantOut: "partial\n", wantErr: []string{"scv-server exited before the turn ended (exit status 3)"}},
		{name: "session refused", scenario: "refuse-session", opts: Options{Prompt: "hi"}, wantCode: cli.Failure, wantErr: []string{"scv-server refused session.start (invalid_request): cwd is not a directory"}},
		{name: "unknown event ignored", scenario: "unknown-event", opts: Options{Prompt: "hi"}, wantOut: "still fine\n"},
		{name: "malformed frame", scenario: "malformed", opts: Options{Prompt: "hi"}, wantCode: cli.Failure, wantErr: []string{"scv-server sent a malformed frame"}},
		{
			name: "server writing after a bad frame is drained, not killed", scenario: "malformed-flood", opts: Options{Prompt: "hi", ShutdownTimeout: 5 * time.Second},
			wantCode: cli.Failure, wantErr: []string{"scv-server sent a malformed frame"}, notErr: []string{"killed"},
		},
		{name: "background turn is not ours", scenario: "background", opts: Options{Prompt: "hi"}, wantOut: "mine\n"},
		{
			name: "continue resumes the newest session without printing its replay", scenario: "continue", opts: Options{Prompt: "go on", Continue: true},
			wantOut: "resume=\"s0\" prompt=\"go on\"\n", wantErr: []string{"scv: continuing the session of 2026-12-01T08:05:00Z (2 turns): the old task"}, notErr: []string{"OLD", "no earlier session"},
		},
		{
			name: "continue without an earlier session starts one", scenario: "continue-none", opts: Options{Prompt: "go on", Continue: true},
			wantOut: "resume=\"\" prompt=\"go on\"\n", wantErr: []string{"scv: no earlier session in this workspace; starting a new one"},
		},
		{name: "continue json prints the replay", scenario: "continue", opts: Options{Prompt: "go on", Continue: true, JSON: true}, checkJSON: true, wantOut: `"items":[{"kind":"assistant","text":"OLD REPLY"}],"done":true`},
		{name: "json", scenario: "tools", opts: Options{Prompt: "hi", JSON: true}, checkJSON: true, notErr: []string{"•"}},
		{name: "json keeps unknown events", scenario: "unknown-event", opts: Options{Prompt: "hi", JSON: true}, checkJSON: true, wantOut: `"type":"future.event"`},
		{
			name: "approval denied without a terminal", scenario: "approval", opts: Options{Prompt: "hi"},
			wantOut: "denied\n",
			wantErr: []string{`scv: denied "Read .env": it needs approval and there is no terminal to ask`, "--approval-policy auto", "  ✗ failed: denied by the user"},
		},
		{
			name: "approval asked and approved", scenario: "approval", opts: Options{Prompt: "hi"}, terminal: true, stdin: "y\n",
			wantOut: "approved\n", wantErr: []string{"Allow Read .env? [y/N] ", "  ✓ done"}, notErr: []string{"scv: denied"},
		},
		{
			name: "approval asked and refused", scenario: "approval", opts: Options{Prompt: "hi"}, terminal: true, stdin: "n\n",
			wantOut: "denied\n", wantErr: []string{"Allow Read .env? [y/N] "},
		},
		{
			name: "approval asked, terminal closed", scenario: "approval", opts: Options{Prompt: "hi"}, terminal: true, stdin: "",
			wantOut: "denied\n", wantErr: []string{"Allow Read .env? [y/N] "},
		},
		{
			name: "late error on approval.resolve is a warning", scenario: "approval-late-error", opts: Options{Prompt: "hi"},
			wantOut: "denied\n", wantErr: []string{"scv: warning: scv-server refused approval.resolve (approval_not_found)"},
		},
		{
			name: "interrupt cancels the turn", scenario: "cancel", opts: Options{Prompt: "hi"}, interrupts: 1,
			wantCode: cli.Interrupted, wantOut: "working\n", wantErr: []string{"scv: cancelling the turn", "the turn was cancelled"},
		},
		{
			name: "cancel not confirmed", scenario: "ignore-cancel", opts: Options{Prompt: "hi", CancelTimeout: 200 * time.Millisecond}, interrupts: 1,
			wantCode: cli.Interrupted, wantOut: "working\n", wantErr: []string{"did not confirm the cancel within 200ms; stopped it"},
		},
		{
			name: "second interrupt stops at once", scenario: "ignore-cancel", opts: Options{Prompt: "hi"}, interrupts: 2,
			wantCode: cli.Interrupted, wantOut: "working\n", wantErr: []string{"interrupted again"},
		},
		{
			name: "server that will not exit is killed", scenario: "linger", opts: Options{Prompt: "hi", ShutdownTimeout: 200 * time.Millisecond},
			wantOut: "bye\n", wantErr: []string{"scv: warning: scv-server killed after it did not exit within 200ms"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(fakeServerEnv, tt.scenario)
			// A -race child otherwise sleeps a second at exit.
			t.Setenv("GORACE", "atexit_sleep_ms=0")
			sigs := make(chan os.Signal, 2)
			out, errOut := &syncBuffer{}, &syncBuffer{}
			var both bytes.Buffer // under out's or errOut's lock, never both
			var bothMu sync.Mutex
			errOut.onWrite = func(p []byte) { bothMu.Lock(); both.Write(p); bothMu.Unlock() }
			sent := false
			out.onWrite = func(p []byte) {
				bothMu.Lock()
				both.Write(p)
				bothMu.Unlock()
				if !sent && bytes.Contains(p, []byte("working")) {
					sent = true
					for range tt.interrupts {
						sigs <- os.Interrupt
					}
				}
			}
			opts := tt.opts
			opts.IO = &cmdutil.IOStreams{In: strings.NewReader(tt.stdin), Out: out, ErrOut: errOut}
			opts.ServerPath = func() (string, error) { return self, nil }
			opts.IsTerminal = func() bool { return tt.terminal }
			opts.Signals = func() (<-chan os.Signal, func()) { return sigs, func() {} }

			start := time.Now()
			err := Run(context.Background(), &opts)
			// A guard against a hang, not a timing: generous for -race
			// on a loaded machine.
			if d := time.Since(start); d > time.Minute {
				t.Errorf("run took %s", d)
			}
			if code := cli.CodeOf(err); code != tt.wantCode {
				t.Errorf("exit code = %d (err %v), want %d; stderr:\n%s", code, err, tt.wantCode, errOut)
			}
			stderr := errOut.String()
			if err != nil {
				stderr += "scv: " + err.Error() + "\n" // what Main would print
			}
			switch {
			case tt.checkJSON:
				checkNDJSON(t, out.String(), tt.wantOut)
			case out.String() != tt.wantOut:
				t.Errorf("stdout = %q, want %q", out, tt.wantOut)
			}
			bothMu.Lock()
			if tt.wantBoth != "" && both.String() != tt.wantBoth {
				t.Errorf("stdout and stderr together = %q, want %q", both.String(), tt.wantBoth)
			}
			bothMu.Unlock()
			for _, s := range tt.wantErr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr %q does not contain %q", stderr, s)
				}
			}
			for _, s := range tt.notErr {
				if strings.Contains(stderr, s) {
					t.Errorf("stderr %q contains %q", stderr, s)
				}
			}
		})
	}
}

// checkNDJSON checks that out is one event per line, every line of a known
// type decoding, ending with turn.completed, and containing want.
func checkNDJSON(t *testing.T, out, want string) {
	t.Helper()
	if !strings.HasSuffix(out, "\n") {
		t.Fatalf("stdout does not end with a newline: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines {
		if protocol.NewEvent(protocol.PeekType([]byte(l))) == nil {
			continue
		}
		if _, err := protocol.DecodeEvent([]byte(l)); err != nil {
			t.Errorf("line %q: %v", l, err)
		}
	}
	if first := protocol.PeekType([]byte(lines[0])); first != protocol.TypeInitialized {
		t.Errorf("first event is %q, want initialized", first)
	}
	if last := protocol.PeekType([]byte(lines[len(lines)-1])); last != protocol.TypeTurnCompleted {
		t.Errorf("last event is %q, want turn.completed", last)
	}
	if !strings.Contains(out, want) {
		t.Errorf("stdout %q does not contain %q", out, want)
	}
}

func TestDescribeCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, args, want string
	}{
		{"read", `{"path":"src/main.go","limit":10}`, "read src/main.go"},
		{"bash", `{"command":"go test\n./..."}`, "bash go test ./..."},
		{"web_fetch", `{"url":"https://example.com"}`, "web_fetch https://example.com"},
		{"mystery", `{"n":1}`, "mystery"},
		{"broken", `not json`, "broken"},
		{"bash", `{"command":"` + strings.Repeat("a", 200) + `"}`, "bash " + strings.Repeat("a", 119) + "…"},
	}
	for _, tt := range tests {
		if got := describeCall(tt.name, []byte(tt.args)); got != tt.want {
			t.Errorf("describeCall(%s, %s) = %q, want %q", tt.name, tt.args, got, tt.want)
		}
	}
}

// TestReadLineFileHonoursContext checks that a question waiting on a
// terminal-like file stops when the run ends, leaving no goroutine behind.
func TestReadLineFileHonoursContext(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := readLine(ctx, r)
		done <- err
	}()
	time.Sleep(2 * pollSlice * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("readLine = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("readLine did not return after cancel")
	}

	// And it reads a real line.
	go func() { w.WriteString("yes\r\nmore") }()
	line, err := readLine(context.Background(), r)
	if err != nil || line != "yes" {
		t.Errorf("readLine = %q, %v; want \"yes\"", line, err)
	}
}
