package relay

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeDaemon is one scripted daemon connection.
type fakeDaemon struct {
	t  *testing.T
	c  net.Conn
	sc *bufio.Scanner
}

func (d *fakeDaemon) read() protocol.ClientMessage {
	d.t.Helper()
	if !d.sc.Scan() {
		d.t.Fatalf("the relay sent nothing more: %v", d.sc.Err())
	}
	m, err := protocol.DecodeClientMessage(d.sc.Bytes())
	if err != nil {
		d.t.Fatal(err)
	}
	return m
}

func (d *fakeDaemon) send(evs ...protocol.Event) {
	d.t.Helper()
	for _, e := range evs {
		b, err := protocol.EncodeEvent(e)
		if err != nil {
			d.t.Fatal(err)
		}
		if _, err := d.c.Write(append(b, '\n')); err != nil {
			d.t.Fatal(err)
		}
	}
}

// listen makes an SCV_HOME short enough for a socket path and listens
// on its daemon socket, as a daemon would.
func listen(t *testing.T) (string, net.Listener) {
	t.Helper()
	home, err := os.MkdirTemp("", "scvr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(home) })
	if err := os.MkdirAll(paths.RunDir(home), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", paths.SocketFile(home))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return home, ln
}

func delta(seq uint64, text string) *protocol.AssistantDelta {
	return &protocol.AssistantDelta{TurnHeader: protocol.TurnHeader{SessionID: "s1", TurnID: "t", Seq: seq}, Content: text}
}

// TestRelayFollowsRestart: the daemon ends the connection for a planned
// restart; the relay dials the new instance, initializes it with the
// client's name, attaches the client's session from seq 0, drops that
// answer, and renumbers the session's events after the last the client
// saw; the client's end of input ends the relay with nil, and no
// goroutine is left.
func TestRelayFollowsRestart(t *testing.T) {
	home, ln := listen(t)
	info := daemonfile.Info{Pid: os.Getpid(), Instance: "A"}
	if err := daemonfile.Write(home, info); err != nil {
		t.Fatal(err)
	}
	accept := func() *fakeDaemon {
		t.Helper()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return &fakeDaemon{t: t, c: c, sc: bufio.NewScanner(c)}
	}

	uc, err := net.Dial("unix", paths.SocketFile(home))
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := New(Options{Home: home, In: inR, Out: outW, ReattachTimeout: 10 * time.Second}, uc.(*net.UnixConn))
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()); _ = outW.Close() }()
	out := bufio.NewScanner(outR)
	next := func() protocol.Event {
		t.Helper()
		if !out.Scan() {
			t.Fatalf("the client got nothing more: %v", out.Err())
		}
		ev, err := protocol.DecodeEvent(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		return ev
	}
	send := func(m protocol.ClientMessage) {
		t.Helper()
		b, _ := protocol.EncodeClientMessage(m)
		if _, err := inW.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}

	d1 := accept()
	send(&protocol.Initialize{RequestID: "i", ProtocolVersion: 4, Client: protocol.ClientInfo{Name: "tui"}})
	d1.read()
	d1.send(&protocol.Initialized{RequestID: "i", ProtocolVersion: 4})
	if _, ok := next().(*protocol.Initialized); !ok {
		t.Fatal("initialized not relayed")
	}
	send(&protocol.SessionStart{RequestID: "s", Cwd: "/w"})
	d1.read()
	d1.send(&protocol.SessionStarted{RequestID: "s", SessionID: "s1"}, delta(1, "a"), delta(2, "b"))
	for range 3 {
		next()
	}
	// The restart: restart.json, a new instance, the connection closed.
	if err := os.WriteFile(paths.RestartFile(home), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	info.Instance = "B"
	if err := daemonfile.Write(home, info); err != nil {
		t.Fatal(err)
	}
	_ = d1.c.Close()

	d2 := accept()
	if in, ok := d2.read().(*protocol.Initialize); !ok || in.Client.Name != "tui" || in.ProtocolVersion != 4 {
		t.Fatalf("the relay's initialize: %+v", in)
	} else {
		d2.send(&protocol.Initialized{RequestID: in.RequestID, ProtocolVersion: 4})
	}
	at, ok := d2.read().(*protocol.SessionAttach)
	if !ok || at.SessionID != "s1" || at.AfterSeq == nil || *at.AfterSeq != 0 {
		t.Fatalf("the relay's attach: %+v", at)
	}
	d2.send(&protocol.SessionAttached{RequestID: at.RequestID, SessionID: "s1", LastSeq: 1, Replayed: 1}, delta(1, "c"), delta(2, "d"))
	for _, want := range []uint64{3, 4} {
		ev := next()
		if d, ok := ev.(*protocol.AssistantDelta); !ok || d.Seq != want {
			t.Fatalf("after the restart the client got %+v, want a delta with seq %d", ev, want)
		}
	}
	// The client goes on over the new connection, then ends its input.
	send(&protocol.TurnStart{RequestID: "t2", SessionID: "s1", Prompt: "more"})
	if m, ok := d2.read().(*protocol.TurnStart); !ok || m.RequestID != "t2" {
		t.Fatalf("relayed after the restart: %+v", m)
	}
	_ = inW.Close()
	if d2.sc.Scan() {
		t.Fatalf("more after the end of input: %s", d2.sc.Bytes())
	}
	_ = d2.c.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not end")
	}
}

// TestRelayEndsWithoutRestart: a v3 client, or a daemon that stops
// (no restart.json), ends the relay with nil as before.
func TestRelayEndsWithoutRestart(t *testing.T) {
	home, ln := listen(t)
	uc, err := net.Dial("unix", paths.SocketFile(home))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	defer inW.Close()
	r := New(Options{Home: home, In: inR, Out: io.Discard}, uc.(*net.UnixConn))
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	b, _ := protocol.EncodeClientMessage(&protocol.Initialize{RequestID: "i", ProtocolVersion: 4, Client: protocol.ClientInfo{Name: "tui"}})
	if _, err := inW.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(c).ReadBytes('\n'); err != nil {
		t.Fatal(err)
	}
	_ = c.Close() // a stop: no restart.json, no daemon.json
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay waited for a daemon that stopped")
	}
	_ = inW.Close()
}
