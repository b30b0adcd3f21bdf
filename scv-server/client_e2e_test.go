package main_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit"
)

// startClient starts the built scv-server --stdio through shared/client,
// the way every client does, with its stderr in errOut.
func startClient(t *testing.T, home string, errOut *testkit.Buffer) (*client.Process, *client.Conn) {
	t.Helper()
	p, err := client.Start(client.Command{
		Path:   bin,
		Args:   []string{"--stdio"},
		Env:    []string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH")},
		Stderr: errOut,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background(), 5*time.Second) })
	return p, client.NewConn(p.Stream(), 0)
}

// TestClientWithARealServer drives a real scv-server process through
// shared/client: the handshake, a turn of the demo provider, and the stop
// (stdin closed, exit 0).
func TestClientWithARealServer(t *testing.T) {
	t.Parallel()
	var errOut testkit.Buffer
	p, conn := startClient(t, t.TempDir(), &errOut)
	hello := client.Hello("1", "client-e2e")
	if err := conn.Send(hello, &protocol.SessionStart{RequestID: "2", Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		f, err := conn.Read()
		if err != nil {
			t.Fatalf("reading: %v (stderr %q)", err, errOut.String())
		}
		if f.Err != nil {
			t.Fatalf("frame %s: %v", f.Raw, f.Err)
		}
		switch ev := f.Event.(type) {
		case *protocol.Initialized:
			if _, err := client.Negotiated(hello, ev); err != nil {
				t.Fatal(err)
			}
		case *protocol.SessionStarted:
			if err := conn.Send(&protocol.TurnStart{RequestID: "3", SessionID: ev.SessionID, Prompt: "hello"}); err != nil {
				t.Fatal(err)
			}
		case *protocol.ApprovalRequested:
			// The demo provider proposes a tool call; deny it, which the
			// turn reports and goes on from.
			if err := conn.Send(&protocol.ApprovalResolve{RequestID: "4", SessionID: ev.SessionID, ApprovalID: ev.ApprovalID}); err != nil {
				t.Fatal(err)
			}
		case *protocol.TurnCompleted:
			done = true
		case *protocol.TurnFailed, *protocol.Error:
			t.Fatalf("unexpected %s", f.Raw)
		}
	}
	if err := p.Stop(context.Background(), 5*time.Second); err != nil {
		t.Fatalf("Stop = %v, want a clean exit", err)
	}
}

// TestClientMapsTheServersExitCodes: a version the server does not speak
// ends it with 3, a configuration it refuses with 78, and shared/client
// says which.
func TestClientMapsTheServersExitCodes(t *testing.T) {
	t.Parallel()
	t.Run("version mismatch", func(t *testing.T) {
		t.Parallel()
		var errOut testkit.Buffer
		p, conn := startClient(t, t.TempDir(), &errOut)
		if err := conn.Send(&protocol.Initialize{RequestID: "1", ProtocolVersion: 99, Client: protocol.ClientInfo{Name: "old", Version: "0"}}); err != nil {
			t.Fatal(err)
		}
		f, err := conn.Read()
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := f.Event.(*protocol.Error); !ok || e.Code != protocol.ErrVersionMismatch || !e.Fatal {
			t.Fatalf("got %s, want a fatal version_mismatch", f.Raw)
		}
		<-p.Exited()
		var ee *client.ExitError
		if err := p.Stop(context.Background(), 5*time.Second); !errors.As(err, &ee) || !ee.VersionMismatch() || ee.Code != 3 {
			t.Fatalf("Stop = %v, want exit 3", err)
		}
	})
	t.Run("configuration", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		if err := os.WriteFile(home+"/config.toml", []byte("[provider]\nactve = 1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var errOut testkit.Buffer
		p, _ := startClient(t, home, &errOut)
		<-p.Exited()
		var ee *client.ExitError
		if err := p.Stop(context.Background(), 5*time.Second); !errors.As(err, &ee) || !ee.ConfigError() {
			t.Fatalf("Stop = %v, want exit 78", err)
		}
		if !strings.Contains(errOut.String(), "config.toml") {
			t.Errorf("stderr %q does not name the configuration", errOut.String())
		}
	})
}
