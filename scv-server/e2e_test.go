package main_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit"
	"github.com/scv-cli/scv/shared/testkit/bins"
)

// bin is the scv-server binary built for these tests.
var bin string

func TestMain(m *testing.M) {
	var err error
	if bin, err = bins.Path("scv-server"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	bins.Cleanup()
	os.Exit(code)
}

// proc is a running scv-server --stdio.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr testkit.Buffer // written by os/exec's copier while a test reads it
	lines  []string
}

func start(t *testing.T, home string, args ...string) *proc {
	t.Helper()
	return startEnv(t, home, nil, args...)
}

// startEnv is start with extra environment variables (KEY=value), which
// win over the defaults.
func startEnv(t *testing.T, home string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--stdio"}, args...)...)
	// An empty HOME: without one, bash -l finds the user's profile
	// through the password file, and a profile that prints or changes
	// the environment would change what the tests see (issue 14, item 16).
	cmd.Env = append([]string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	return startCmd(t, cmd, nil)
}

// startCmd starts cmd (an scv-server --stdio) with pipes for stdin and
// stdout; adjust, when not nil, changes the command first (for example
// its stderr, which is captured otherwise).
func startCmd(t *testing.T, cmd *exec.Cmd, adjust func(*exec.Cmd)) *proc {
	t.Helper()
	p := &proc{t: t, cmd: cmd}
	cmd.Stderr = &p.stderr
	if adjust != nil {
		adjust(cmd)
	}
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdout = bufio.NewReaderSize(out, 1<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

func (p *proc) send(m protocol.ClientMessage) {
	p.t.Helper()
	b, err := protocol.EncodeClientMessage(m)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
}

// next reads one stdout line, which must be a protocol event.
func (p *proc) next() protocol.Event {
	p.t.Helper()
	line, err := p.stdout.ReadBytes('\n')
	if err != nil {
		p.t.Fatalf("reading stdout: %v (stderr: %s)", err, p.stderr.String())
	}
	p.lines = append(p.lines, string(line))
	ev, err := protocol.DecodeEvent(bytes.TrimSuffix(line, []byte("\n")))
	if err != nil {
		p.t.Fatalf("stdout line %q is not a protocol frame: %v", line, err)
	}
	return ev
}

func nextOf[T protocol.Event](p *proc) T {
	p.t.Helper()
	for {
		if v, ok := p.next().(T); ok {
			return v
		}
	}
}

// exit closes stdin and waits for the process, returning its exit code.
func (p *proc) exit() int {
	p.t.Helper()
	_ = p.stdin.Close()
	// Everything left on stdout must still be protocol frames.
	rest, _ := io.ReadAll(p.stdout)
	for _, line := range strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n") {
		if line == "" {
			continue
		}
		if _, err := protocol.DecodeEvent([]byte(line)); err != nil {
			p.t.Fatalf("stdout line %q is not a protocol frame: %v", line, err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			p.t.Fatal(err)
		}
		return 0
	case <-time.After(20 * time.Second):
		p.t.Fatal("scv-server did not exit after EOF")
		return -1
	}
}

func TestDemoSessionEndToEnd(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# demo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, t.TempDir())
	p.send(&protocol.Initialize{RequestID: "1", ProtocolVersion: 3, Client: protocol.ClientInfo{Name: "e2e"}})
	if ini := nextOf[*protocol.Initialized](p); ini.ProtocolVersion != 3 || ini.Server.Name != "scv-server" {
		t.Fatalf("initialized = %+v", ini)
	}
	p.send(&protocol.SessionStart{RequestID: "2", Cwd: ws})
	started := nextOf[*protocol.SessionStarted](p)
	nextOf[*protocol.QueueSnapshot](p)
	p.send(&protocol.TurnStart{RequestID: "3", SessionID: started.SessionID, Prompt: "show me around"})
	listing := nextOf[*protocol.ToolCompleted](p)
	if !listing.Success || !strings.Contains(listing.Output, "README.md") {
		t.Fatalf("listing = %+v", listing)
	}
	req := nextOf[*protocol.ApprovalRequested](p)
	p.send(&protocol.ApprovalResolve{RequestID: "4", SessionID: started.SessionID, ApprovalID: req.ApprovalID, Approved: false})
	end := nextOf[*protocol.TurnCompleted](p)
	if end.Steps != 3 || end.Usage == nil {
		t.Fatalf("turn.completed = %+v", end)
	}
	var text strings.Builder
	for _, l := range p.lines {
		if ev, _ := protocol.DecodeEvent([]byte(strings.TrimSpace(l))); ev != nil {
			if d, ok := ev.(*protocol.AssistantDelta); ok {
				text.WriteString(d.Content)
			}
		}
	}
	if !strings.Contains(text.String(), "demo model") || !strings.Contains(text.String(), "config.toml") {
		t.Fatalf("the demo did not explain itself: %q", text.String())
	}
	if code := p.exit(); code != 0 {
		t.Fatalf("exit code %d after EOF, want 0; stderr: %s", code, p.stderr.String())
	}
	if strings.Contains(p.stderr.String(), `"type"`) {
		t.Fatalf("protocol frames on stderr: %s", p.stderr.String())
	}
}

func TestVersionMismatchExitsNonZero(t *testing.T) {
	t.Parallel()
	p := start(t, t.TempDir())
	p.send(&protocol.Initialize{RequestID: "1", ProtocolVersion: 9})
	e := nextOf[*protocol.Error](p)
	if e.Code != protocol.ErrVersionMismatch || !e.Fatal {
		t.Fatalf("error = %+v", e)
	}
	if code := p.exit(); code != 3 {
		t.Fatalf("exit code %d, want 3", code)
	}
}

func TestBadConfigIsReportedBeforeInput(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[tools]\naproval_policy = \"auto\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// No stdin is ever written: the error comes first.
	code, stdout, stderr := runBeforeInput(t, home)
	if code != 78 || stdout != "" || !strings.Contains(stderr, "config.toml:2") || !strings.Contains(stderr, "aproval_policy") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestMissingKeySaysWhatToChange: a provider whose key variable is unset
// stops the server at start with what to change and where it was set, not
// an offer to restart (which inherits the same environment).
func TestMissingKeySaysWhatToChange(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cfg := "[provider]\nactive = \"work\"\n\n[providers.work]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"SCV_TEST_UNSET_KEY\"\nmodel = \"m\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runBeforeInput(t, home)
	for _, want := range []string{`provider "work"`, "SCV_TEST_UNSET_KEY", "config.toml:7", "export SCV_TEST_UNSET_KEY=<your key>", "[providers.work]", "demo model"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != 78 {
		t.Errorf("exit %d, want 78 (a configuration error)", code)
	}
}

func TestBrokenStdoutDoesNotKillWithSIGPIPE(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(bin, "--stdio")
	cmd.Env = []string{"SCV_HOME=" + t.TempDir()}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r.Close() // nobody reads stdout any more
	_, _ = in.Write([]byte(`{"type":"initialize","request_id":"1","protocol_version":3,"client":{"name":"e2e"}}` + "\n"))
	err = cmd.Wait()
	in.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("exit = %v, want a non-zero exit", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("scv-server died of %v instead of cleaning up", ws.Signal())
	}
}

func TestUsageWithoutStdio(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(bin).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "--stdio") {
		t.Fatalf("exit %v, output %q", err, out)
	}
}

func TestSchemaCommandWritesTheCommittedSchema(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	if msg, err := exec.Command(bin, "schema", "--out", out).CombinedOutput(); err != nil {
		t.Fatalf("scv-server schema: %v\n%s", err, msg)
	}
	committed := filepath.Join("..", "docs", "schema")
	var n int
	err := filepath.WalkDir(committed, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(committed, path)
		want, _ := os.ReadFile(path)
		got, err := os.ReadFile(filepath.Join(out, rel))
		if err != nil {
			t.Errorf("%s: not written by scv-server schema: %v", rel, err)
			return nil
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from docs/schema; run `scv-server schema --out docs/schema`", rel)
		}
		n++
		return nil
	})
	if err != nil || n < 30 {
		t.Fatalf("compared %d files: %v", n, err)
	}
}
