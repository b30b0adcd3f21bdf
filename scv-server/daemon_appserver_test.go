package main_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/dialect/appserver"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit"
)

// TestDaemonAppServer runs `scv-server app-server --listen stdio --daemon`
// against a running daemon (the first line {"dialect":"app-server"} on the
// socket): the thread is a session of the daemon, which an NDJSON client
// sees live, and which outlives the App Server client.
func TestDaemonAppServer(t *testing.T) {
	t.Parallel()
	f, home, ws := acpSetup(t)
	startDaemon(t, home, nil)

	cmd := exec.Command(bin, "app-server", "--listen", "stdio", "--daemon", "--log-level", "info")
	cmd.Env = []string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + home}
	var stderr testkit.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	c := appserver.NewClient(out, stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Call(ctx, "initialize", appserver.InitializeParams{}, nil); err != nil {
		t.Fatal(err)
	}
	var th appserver.Thread
	if err := c.Call(ctx, "thread/start", appserver.ThreadStartParams{Cwd: ws}, &th); err != nil {
		t.Fatal(err)
	}
	f.Enqueue(fo.Script(fo.Text("from the daemon")))
	if err := c.Call(ctx, "turn/start", appserver.TurnStartParams{ThreadID: th.ThreadID, Input: []appserver.InputItem{{Type: "text", Text: "hi"}}}, nil); err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Until(ctx, func(m appserver.Message) bool { return m.Method == "turn/completed" })
	if err != nil || !strings.Contains(string(msgs[len(msgs)-1].Params), "from the daemon") {
		t.Fatalf("turn/completed: %v %s", err, stderr.String())
	}

	nd := dial(t, home, "nd")
	nd.init(4)
	live := func() []protocol.LiveSession {
		nd.send(&protocol.SessionList{RequestID: nd.id()})
		_, listed := until[*protocol.SessionListed](nd)
		return listed.Live
	}
	if l := live(); len(l) != 1 || l[0].SessionID != th.ThreadID {
		t.Fatalf("live sessions while the App Server client is connected: %+v", l)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("scv-server app-server --daemon: %v\n%s", err, stderr.String())
	}
	if l := live(); len(l) != 1 || l[0].SessionID != th.ThreadID {
		t.Fatalf("live sessions after the client left: %+v", l)
	}
}

// TestAppServerCommandLine: flags in any order and as --key=value; a bad
// --listen is a usage error (2); a configuration error exits 78 before
// any input is read (stdin stays open).
func TestAppServerCommandLine(t *testing.T) {
	t.Parallel()
	_, home, _ := acpSetup(t)
	run := func(home string, args ...string) (int, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + home}
		var stderr testkit.Buffer
		cmd.Stderr = &stderr
		in, err := cmd.StdinPipe() // never closed: the command must not wait for input
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("%v waited for input: %s", args, stderr.String())
		}
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	if code, msg := run(home, "app-server", "--listen", "tcp"); code != 2 || !strings.Contains(msg, "stdio") {
		t.Errorf("--listen tcp: exit %d, %s", code, msg)
	}
	if code, msg := run(home, "app-server", "--timeout-seconds=5", "--provider=nope", "--listen=stdio"); code != 78 || !strings.Contains(msg, "nope") {
		t.Errorf("unknown provider: exit %d, %s", code, msg)
	}
	// Any order, --key=value: one request, then the end of input, exit 0.
	cmd := exec.Command(bin, "app-server", "--model=other-model", "--timeout-seconds", "5", "--listen=stdio")
	cmd.Env = []string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + home}
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}` + "\n")
	got, err := cmd.Output()
	if err != nil || !strings.Contains(string(got), `"protocolVersion":"v1"`) {
		t.Errorf("app-server with flags in any order: %v, %s", err, got)
	}
	broken := t.TempDir()
	if err := os.WriteFile(broken+"/config.toml", []byte("[provider\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, msg := run(broken, "app-server", "--listen", "stdio"); code != 78 {
		t.Errorf("broken configuration: exit %d, %s", code, msg)
	}
}

// TestDebugSendMessage: `scv-server debug app-server send-message` runs a
// whole scripted session through the facade and prints both directions.
func TestDebugSendMessage(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	cmd := exec.Command(bin, "debug", "app-server", "send-message", "hello")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + home}
	out, err := cmd.Output()
	s := string(out)
	for _, want := range []string{`<< {"jsonrpc":"2.0","id":1,"method":"initialize"`, `"text":"hello"`, `>> {"jsonrpc":"2.0","method":"approval/requested"`,
		`"decision":"deny"`, `>> {"jsonrpc":"2.0","method":"turn/completed"`, `<< {"jsonrpc":"2.0","id":4,"method":"thread/read"`} {
		if !strings.Contains(s, want) {
			t.Errorf("the debug session lacks %s (err %v):\n%.2000s", want, err, s)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}
