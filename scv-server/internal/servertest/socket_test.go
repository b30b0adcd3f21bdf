package servertest_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/server"
	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
)

// socketPair returns the two ends of a connected Unix stream socket pair.
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ends [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		_ = f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ends[i] = c
	}
	return ends[0], ends[1]
}

// TestClientConnOverAUnixSocket runs the real server runtime on one end of
// a Unix socket pair and shared/client's Conn on the other: the transport
// a daemon will offer, under the connection every client uses. The
// handshake, a session and a turn of the demo provider go through, and the
// client's end of input ends the connection cleanly.
func TestClientConnOverAUnixSocket(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	rt, err := server.New(server.Options{Env: paths.MapEnv(map[string]string{"SCV_HOME": home})})
	if err != nil {
		t.Fatal(err)
	}
	cliEnd, srvEnd := socketPair(t)
	served := make(chan error, 1)
	go func() { served <- rt.Serve(context.Background(), srvEnd) }()

	// A hang fails the test rather than the package's timeout.
	if err := cliEnd.SetDeadline(time.Now().Add(st.Wait)); err != nil {
		t.Fatal(err)
	}
	conn := client.NewConn(cliEnd, 0)
	hello := client.Hello("1", "socket-test")
	if err := conn.Send(hello, &protocol.SessionStart{RequestID: "2", Cwd: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	var sessionID string
	for done := false; !done; {
		f, err := conn.Read()
		if err != nil {
			t.Fatalf("reading: %v", err)
		}
		if f.Err != nil {
			t.Fatalf("frame %s: %v", f.Raw, f.Err)
		}
		switch ev := f.Event.(type) {
		case *protocol.Initialized:
			if v, err := client.Negotiated(hello, ev); err != nil || v != client.HelloVersion {
				t.Fatalf("Negotiated = %d, %v", v, err)
			}
		case *protocol.SessionStarted:
			sessionID = ev.SessionID
			if err := conn.Send(&protocol.TurnStart{RequestID: "3", SessionID: sessionID, Prompt: "hello"}); err != nil {
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
		case *protocol.TurnFailed:
			t.Fatalf("turn failed: %s", f.Raw)
		case *protocol.Error:
			t.Fatalf("error: %s", f.Raw)
		}
	}
	if sessionID == "" {
		t.Fatal("no session.started before the turn ended")
	}
	// End of input: the half-close a socket allows.
	if err := cliEnd.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := conn.Read(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Errorf("after end of input: %v, want io.EOF", err)
			}
			break
		}
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want a clean end", err)
	}
	_ = conn.Close()
}
