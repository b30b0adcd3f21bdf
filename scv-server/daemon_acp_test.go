package main_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
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
