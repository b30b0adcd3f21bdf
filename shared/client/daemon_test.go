package client

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/protocol"
)

// scriptedDaemon listens on home's daemon socket and answers like the
// daemon: initialize (refusing anything but protocol 4), daemon.status,
// and session.attach, after which it replays the events of its ring
// numbered after after_seq. It serves until the test ends.
func scriptedDaemon(t *testing.T, home string, ring []uint64) {
	t.Helper()
	// Errors, not Fatal: a test may call it from another goroutine.
	if err := os.MkdirAll(paths.RunDir(home), 0o700); err != nil {
		t.Error(err)
		return
	}
	ln, err := net.Listen("unix", paths.SocketFile(home))
	if err != nil {
		t.Error(err)
		return
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serveScripted(c, ring)
			}()
		}
	}()
}

func serveScripted(c net.Conn, ring []uint64) {
	fr := protocol.NewFrameReader(c, protocol.MaxClientFrameBytes)
	send := func(e protocol.Event) bool {
		b, err := protocol.EncodeEvent(e)
		if err != nil {
			return false
		}
		_, err = c.Write(append(b, '\n'))
		return err == nil
	}
	for {
		line, err := fr.Next()
		if err != nil {
			return
		}
		m, err := protocol.DecodeClientMessage(line)
		if err != nil {
			return
		}
		switch m := m.(type) {
		case *protocol.Initialize:
			if m.ProtocolVersion != protocol.Version4 {
				send(&protocol.Error{RequestID: m.RequestID, Code: "version_mismatch", Message: "want 4", Fatal: true})
				return
			}
			send(&protocol.Initialized{RequestID: m.RequestID, ProtocolVersion: 4})
		case *protocol.DaemonStatus:
			// An event of another request first: Request must skip it.
			send(&protocol.SessionDetached{RequestID: "other", SessionID: "s0"})
			send(&protocol.DaemonStatusReported{RequestID: m.RequestID, Pid: 4242})
		case *protocol.SessionAttach:
			if m.SessionID != "s1" {
				send(&protocol.Error{RequestID: m.RequestID, Code: "session_not_found", Message: "no session " + m.SessionID})
				continue
			}
			var after uint64
			if m.AfterSeq != nil {
				after = *m.AfterSeq
			}
			last := ring[len(ring)-1]
			send(&protocol.SessionAttached{RequestID: m.RequestID, SessionID: m.SessionID, LastSeq: last, ReplayTruncated: after+1 < ring[0]})
			for _, seq := range ring {
				if seq > after {
					send(&protocol.AssistantDelta{TurnHeader: protocol.TurnHeader{SessionID: "s1", TurnID: "t1", Seq: seq}, Content: "x"})
				}
			}
		}
	}
}

// shortHome is a temporary SCV_HOME short enough for a Unix socket path
// (108 bytes), which t.TempDir's long names can exceed.
func shortHome(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "scvc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

// TestDaemonConnRequestsAndAttach: the handshake is protocol 4, a request
// skips frames that answer other requests, an error event for it is an
// error naming the request, and attach with after_seq replays only the
// later events, in order.
func TestDaemonConnRequestsAndAttach(t *testing.T) {
	t.Parallel()
	home := shortHome(t)
	scriptedDaemon(t, home, []uint64{5, 6, 7, 8})

	st, err := QueryDaemonStatus(home, 5*time.Second)
	if err != nil || st.Pid != 4242 {
		t.Fatalf("status: %+v, %v", st, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := DialDaemon(ctx, home, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Attach("nope", nil); err == nil || !strings.Contains(err.Error(), "refused session.attach: no session nope (session_not_found)") {
		t.Fatalf("attach to an unknown session: %v", err)
	}
	after := uint64(6)
	a, err := c.Attach("s1", &after)
	if err != nil || a.LastSeq != 8 || a.ReplayTruncated {
		t.Fatalf("attach: %+v, %v", a, err)
	}
	for _, want := range []uint64{7, 8} {
		f, err := c.Read()
		if err != nil {
			t.Fatal(err)
		}
		d, ok := f.Event.(*protocol.AssistantDelta)
		if !ok || d.Seq != want {
			t.Fatalf("replayed %+v, want seq %d", f.Event, want)
		}
	}
	if _, err := c.Request(&protocol.TurnCancel{}); err == nil {
		t.Fatal("a message that is not a daemon request was sent")
	}
}

// TestReattachWaitsForTheDaemon: with no daemon, dialing says so
// (ErrNoDaemon); Reattach keeps trying until a daemon listens again, as
// after a planned restart, and is replayed what followed its last seq.
func TestReattachWaitsForTheDaemon(t *testing.T) {
	t.Parallel()
	home := shortHome(t)
	if _, err := DialDaemon(context.Background(), home, "test"); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("dial without a daemon: %v", err)
	}
	if _, err := DaemonRunning(home); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("running without a daemon: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	started := make(chan struct{})
	go func() {
		defer close(started)
		time.Sleep(200 * time.Millisecond)
		scriptedDaemon(t, home, []uint64{10, 11})
	}()
	c, a, err := Reattach(ctx, home, "test", "s1", Position{Seq: 10}, 50*time.Millisecond)
	<-started
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if a.ReplayTruncated || a.LastSeq != 11 {
		t.Fatalf("attached: %+v", a)
	}
	if f, err := c.Read(); err != nil || f.Event.(*protocol.AssistantDelta).Seq != 11 {
		t.Fatalf("replayed after seq 10: %+v, %v", f, err)
	}

	// A context that ends first ends the wait with its error.
	gone := shortHome(t)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	if _, _, err := Reattach(ctx2, gone, "test", "s1", Position{}, 50*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "re-attaching to session s1") {
		t.Fatalf("reattach with no daemon: %v", err)
	}
}

// TestPositionAfterRestart: on the same daemon instance a client attaches
// after the last seq it saw; on a new one (a restart numbers events anew)
// from the start of the ring; an unknown instance counts as the same.
func TestPositionAfterRestart(t *testing.T) {
	t.Parallel()
	p := Position{Instance: "a", Seq: 12}
	for inst, want := range map[string]uint64{"a": 12, "b": 0, "": 12} {
		if got := p.after(inst); got != want {
			t.Errorf("after(%q) = %d, want %d", inst, got, want)
		}
	}
	if got := (Position{Seq: 5}).after("b"); got != 5 {
		t.Errorf("unknown old instance: after = %d, want 5", got)
	}
}

// TestRestartUnderway: a restart.json, or a daemon running again, says a
// closed connection is a planned restart to wait out; neither says not.
func TestRestartUnderway(t *testing.T) {
	t.Parallel()
	home := shortHome(t)
	if RestartUnderway(home) {
		t.Fatal("underway with nothing on disk")
	}
	if err := os.MkdirAll(paths.RunDir(home), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.RestartFile(home), []byte(`{"sessions":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if !RestartUnderway(home) {
		t.Fatal("not underway with a restart.json")
	}
}

// TestReattachUnknownSessionFails: a daemon that answers without the
// session (it did not come back with it) ends the wait at once.
func TestReattachUnknownSessionFails(t *testing.T) {
	t.Parallel()
	home := shortHome(t)
	scriptedDaemon(t, home, []uint64{1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, _, err := Reattach(ctx, home, "test", "gone", Position{}, 50*time.Millisecond)
	var re *RefusedError
	if !errors.As(err, &re) || re.Code != protocol.ErrSessionNotFound || time.Since(start) > 5*time.Second {
		t.Fatalf("reattach to an unknown session: %v after %s", err, time.Since(start))
	}
}
