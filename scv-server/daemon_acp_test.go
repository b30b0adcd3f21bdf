package main_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/scv-cli/scv/shared/daemonfile"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit"
)

// TestDaemonACP runs `scv-server acp --daemon` against a running daemon:
// the editor's session lives in the daemon, where an NDJSON client on the
// same socket sees it live, during the ACP connection and after the
// editor has gone. Without a daemon the same command serves ACP itself.
func TestDaemonACP(t *testing.T) {
	t.Parallel()
	f, home, ws := acpSetup(t)
	startDaemon(t, home, nil)

	p, stdin := startACPDaemon(t, home)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := p.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	f.Enqueue(fo.Script(fo.Text("from the daemon")))
	r, err := p.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("hi")}})
	if err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}

	nd := dial(t, home, "nd")
	nd.init(4)
	live := func() []protocol.LiveSession {
		nd.send(&protocol.SessionList{RequestID: nd.id()})
		_, listed := until[*protocol.SessionListed](nd)
		return listed.Live
	}
	if l := live(); len(l) != 1 || l[0].SessionID != string(s.SessionId) || l[0].Cwd != ws {
		t.Fatalf("live sessions while the editor is connected: %+v", l)
	}

	// The editor goes; its session stays in the daemon.
	_ = stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("scv-server acp --daemon: %v\n%s", err, p.stderr.String())
	}
	if l := live(); len(l) != 1 || l[0].SessionID != string(s.SessionId) {
		t.Fatalf("live sessions after the editor left: %+v", l)
	}
}

// TestDaemonACPThroughRestart: `scv acp --daemon` does not follow a
// planned restart (a JSON-RPC connection's state ends with the daemon's
// connection): when the daemon restarts, the relay exits 1 saying so on
// stderr, and the editor's session, open in the restarted daemon, is
// taken up by the next `scv acp --daemon` with session/resume. A stop
// says the daemon stopped.
func TestDaemonACPThroughRestart(t *testing.T) {
	t.Parallel()
	f, home, ws := acpSetup(t)
	d := startDaemon(t, home, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	p, _ := startACPDaemon(t, home)
	if _, err := p.conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := p.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	f.Enqueue(fo.Script(fo.Text("before")), fo.Script(fo.Text("after")))
	if r, err := p.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("one")}}); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", r, err)
	}
	before, err := daemonfile.Read(home)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	code, stderr := acpExit(t, p)
	if code != 1 || !strings.Contains(stderr, "the daemon closed the connection for a planned restart") ||
		!strings.Contains(stderr, "start `scv acp --daemon` again and resume them with session/resume") {
		t.Fatalf("scv-server acp --daemon exited %d at the restart:\n%s", code, stderr)
	}

	testkit.Eventually(t, 15*time.Second, "the restarted daemon", func() bool {
		info, err := daemonfile.Running(home)
		return err == nil && info.Instance != before.Instance
	})
	q, qin := startACPDaemon(t, home)
	if _, err := q.conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.conn.ResumeSession(ctx, acpsdk.ResumeSessionRequest{SessionId: s.SessionId, Cwd: ws, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatalf("resuming the session in the restarted daemon: %v\n%s", err, q.stderr.String())
	}
	if r, err := q.conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("two")}}); err != nil || r.StopReason != acpsdk.StopReasonEndTurn {
		t.Fatalf("prompt after the restart = %+v, %v", r, err)
	}
	if reqs := f.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "before") {
		t.Fatalf("the resumed session lost its history: %d requests", len(reqs))
	}

	// A stop is not a restart.
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, stderr = acpExit(t, q)
	_ = qin.Close()
	if code != 1 || !strings.Contains(stderr, "the daemon closed the connection: it stopped or crashed") {
		t.Fatalf("scv-server acp --daemon exited %d at the daemon's stop:\n%s", code, stderr)
	}
}

// acpExit waits for a relaying `scv-server acp` to exit by itself and
// returns its exit code and stderr.
func acpExit(t *testing.T, p *acpProc) (int, string) {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("scv-server acp --daemon did not exit when the daemon closed the connection\n%s", p.stderr.String())
	}
	w := p.cmd.Stderr.(*lockedWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	return p.cmd.ProcessState.ExitCode(), p.stderr.String()
}

// TestACPDaemonFlagWithoutDaemon: with no daemon, --daemon serves ACP in
// the process itself.
func TestACPDaemonFlagWithoutDaemon(t *testing.T) {
	t.Parallel()
	_, home, ws := acpSetup(t)
	p, stdin := startACPDaemon(t, home)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := p.conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: ws, McpServers: []acpsdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	_ = stdin.Close()
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("scv-server acp --daemon: %v\n%s", err, p.stderr.String())
	}
}

// startACPDaemon starts `scv-server acp --daemon` with a Go SDK client on
// its pipes.
func startACPDaemon(t *testing.T, home string) (*acpProc, io.WriteCloser) {
	t.Helper()
	p := &acpProc{c: &goClient{chunk: make(chan struct{}, 1)}}
	p.cmd = exec.Command(bin, "acp", "--daemon", "--log-level", "info")
	p.cmd.Env = []string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + home}
	p.cmd.Stderr = &lockedWriter{b: &p.stderr}
	stdin, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.conn = acpsdk.NewClientSideConnection(p.c, stdin, out)
	p.conn.SetLogger(slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p, stdin
}
