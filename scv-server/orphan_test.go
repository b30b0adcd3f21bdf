package main_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestOrphanReconciledAtStart: a background agent job outlives its server
// when that server is SIGKILLed; the next `scv-server --stdio` of the same
// instance finds the record whose owner is gone, stops the agent's process
// tree (including a descendant that left it with setsid) and removes the
// record.
func TestOrphanReconciledAtStart(t *testing.T) {
	f := fo.Start(t)
	home, dir, userHome := t.TempDir(), t.TempDir(), t.TempDir()
	writeFakeConfig(t, home, f.URL())
	// The fake claude starts a setsid grandchild, writes both pids, and
	// waits forever. The file is complete and closed before any process
	// starts.
	pids := filepath.Join(dir, "pids")
	bin := filepath.Join(userHome, ".local", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/bash\nsetsid sleep 600 </dev/null >/dev/null 2>&1 &\necho \"$$ $!\" > " + pids + ".tmp && mv " + pids + ".tmp " + pids + "\nexec sleep 600\n"
	if err := os.WriteFile(filepath.Join(bin, "claude"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + userHome}

	p := startEnv(t, home, env, "--approval-policy", "auto")
	initV3(p)
	p.send(&protocol.SessionStart{RequestID: "s", Cwd: dir})
	sid := nextOf[*protocol.SessionStarted](p).SessionID
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "agent", `{"agent":"claude","prompt":"work forever","background":true}`)), fo.Script(fo.Text("Started.")))
	p.send(&protocol.TurnStart{RequestID: "t", SessionID: sid, Prompt: "go"})
	nextOf[*protocol.TurnCompleted](p)
	agentPid, childPid := readPids(t, pids)
	// A failure below must not leave the agent's tree behind (it would
	// hold whatever descriptors the test process had, for ten minutes).
	// On success they are gone and their pids may be another's by then.
	t.Cleanup(func() {
		if t.Failed() {
			_ = syscall.Kill(agentPid, syscall.SIGKILL)
			_ = syscall.Kill(childPid, syscall.SIGKILL)
		}
	})
	// The record is written once the agent's leader has started, which
	// the agent's own pids file may precede: wait for it.
	records := filepath.Join(home, "state", "delegations")
	for deadline := time.Now().Add(30 * time.Second); ; {
		recs, _ := filepath.Glob(filepath.Join(records, "*.json"))
		if len(recs) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records after 30 s while the job runs, want 1", len(recs))
		}
		time.Sleep(10 * time.Millisecond)
	}
	kill(t, p)
	for _, pid := range []int{agentPid, childPid} {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("process %d did not outlive the killed server (%v): nothing to reconcile", pid, err)
		}
	}

	q := startEnv(t, home, env)
	initV3(q)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ents, _ := os.ReadDir(records)
		gone := syscall.Kill(agentPid, 0) != nil && syscall.Kill(childPid, 0) != nil
		if gone && len(ents) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d records left, agent alive %v, setsid child alive %v; stderr:\n%s",
				len(ents), syscall.Kill(agentPid, 0) == nil, syscall.Kill(childPid, 0) == nil, q.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readPids(t *testing.T, file string) (int, int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(file); err == nil {
			f := strings.Fields(string(b))
			if len(f) == 2 {
				a, _ := strconv.Atoi(f[0])
				c, _ := strconv.Atoi(f[1])
				return a, c
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStaleTempFilesSweptAtStart: a write a crash interrupted leaves a
// .scv-tmp- file; the next `scv-server --stdio` removes it once it is an
// hour old, and leaves a fresh one (a write that may be in progress).
func TestStaleTempFilesSweptAtStart(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "state", "sessions", "s")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	stale, fresh := filepath.Join(dir, ".scv-tmp-1"), filepath.Join(dir, ".scv-tmp-2")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	p := start(t, home)
	initV3(p)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(stale); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stale temporary file is still there; stderr:\n%s", p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("the fresh temporary file was removed: %v", err)
	}
}
