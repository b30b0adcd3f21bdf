package main_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// BenchmarkDaemonAttach measures one attach round trip on an open
// connection: session.attach to session.attached, then session.detach.
func BenchmarkDaemonAttach(b *testing.B) {
	home, ws := b.TempDir(), b.TempDir()
	startDaemon(b, home, nil)
	owner := dial(b, home, "owner")
	owner.init(protocol.Version4)
	owner.send(&protocol.SessionStart{RequestID: owner.id(), Cwd: ws})
	_, st := until[*protocol.SessionStarted](owner)
	c := dial(b, home, "bench")
	c.init(protocol.Version4)
	zero := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		c.send(&protocol.SessionAttach{RequestID: c.id(), SessionID: st.SessionID, AfterSeq: &zero})
		until[*protocol.SessionAttached](c)
		c.send(&protocol.SessionDetach{RequestID: c.id(), SessionID: st.SessionID})
		until[*protocol.SessionDetached](c)
	}
}

// BenchmarkDaemonFanout10 streams a turn of 2000 deltas to 10 attached
// clients and reports the events every client received per second.
func BenchmarkDaemonFanout10(b *testing.B) {
	f := fo.Start(b)
	home, ws := b.TempDir(), b.TempDir()
	writeFakeConfig(b, home, f.URL())
	startDaemon(b, home, nil)
	owner := dial(b, home, "owner")
	owner.init(protocol.Version4)
	owner.send(&protocol.SessionStart{RequestID: owner.id(), Cwd: ws})
	_, st := until[*protocol.SessionStarted](owner)
	clients := []*dclient{owner}
	for i := range 9 {
		c := dial(b, home, "c"+strconv.Itoa(i))
		c.init(protocol.Version4)
		c.send(&protocol.SessionAttach{RequestID: c.id(), SessionID: st.SessionID})
		until[*protocol.SessionAttached](c)
		clients = append(clients, c)
	}
	var events int
	start := time.Now()
	for b.Loop() {
		f.Enqueue(fo.Script(fo.Repeat(2000, "token ")))
		owner.send(&protocol.TurnStart{RequestID: owner.id(), SessionID: st.SessionID, Prompt: "stream"})
		for _, c := range clients {
			evs, _ := until[*protocol.TurnCompleted](c)
			events += len(evs)
		}
	}
	b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
}

// TestDaemonIdleRSS reports the resident memory of an idle daemon (the
// issue's target is 20 MiB); it fails only far above it.
func TestDaemonIdleRSS(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	d := startDaemon(t, home, nil)
	c := dial(t, home, "rss")
	c.init(protocol.Version4)
	time.Sleep(200 * time.Millisecond)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		t.Skip(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			t.Logf("idle daemon RSS: %.1f MiB", float64(kb)/1024)
			if kb > 64<<10 {
				t.Fatalf("an idle daemon holds %d kB", kb)
			}
			return
		}
	}
	t.Fatal("no VmRSS line")
}
