package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/delegation"
	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/proctag"
)

// TestE2EOrphanOfKilledServer delegates to a (fake) dsh through
// `scv exec`, SIGKILLs the scv-server while the agent and its setsid
// descendant run, checks that `scv agents ps --all` shows the orphan, and
// that the next `scv-server --stdio` start reconciles it: both processes
// stopped and the record removed.
func TestE2EOrphanOfKilledServer(t *testing.T) {
	scvBin := buildSibling(t, "scv")
	serverBin := buildSibling(t, "scv-server")
	srv := fakeopenai.NewServer()
	defer srv.Close()
	srv.Enqueue(fakeopenai.Script(fakeopenai.ToolCall("call_1", "agent", `{"agent":"dsh","prompt":"work for a while"}`)))

	w := newWorld(t)
	w.write("config.toml", `[provider]
active = "fake"
[providers.fake]
base_url = "`+srv.URL()+`"
model = "fake-model-1"
api_key_env = ""
`)
	want(t, w.run(secret+"\n", "login", "dsh"), 0, "dsh: key stored")
	env := []string{"HOME=" + w.home, "SCV_HOME=" + w.scv, "SCV_SERVER_BIN=" + serverBin, "PATH=" + w.path}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, scvBin, "exec", "--approval-policy", "auto", "--cd", t.TempDir(), "delegate it")
	c.Env = env
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = c.Wait(); close(exited) }()
	defer func() { _ = c.Process.Kill(); <-exited }()

	// Wait for the run's record and both tagged processes.
	var rec delegation.Record
	deadline := time.Now().Add(time.Minute)
	for {
		recs, _ := delegation.List(w.scv)
		if len(recs) == 1 && len(proctag.Find(recs[0].Handle)) == 2 {
			rec = recs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delegation record with two tagged processes appeared (records %+v)\nstderr:\n%s", recs, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { proctag.Kill(rec.Handle) })
	if rec.Agent != "dsh" || !rec.AgentProcess.Alive() || !rec.Owner.Alive() {
		t.Fatalf("record %+v", rec)
	}
	if err := syscall.Kill(rec.Owner.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL the server %d: %v", rec.Owner.PID, err)
	}
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatal("scv exec did not exit after its server was killed")
	}
	if got := proctag.Find(rec.Handle); len(got) != 2 {
		t.Fatalf("tagged processes after the SIGKILL: %v, want the agent and its descendant", got)
	}
	want(t, w.run("", "ps"), 0, "1 orphans await cleanup")
	want(t, w.run("", "ps", "--all"), 0, rec.Handle, "dsh", "orphan")

	// A server start reconciles before it serves; empty stdin ends it.
	s := exec.CommandContext(ctx, serverBin, "--stdio")
	s.Env = env
	s.Stdin = strings.NewReader("")
	if out, err := s.CombinedOutput(); err != nil {
		t.Logf("scv-server --stdio with empty stdin: %v\n%s", err, out)
	}
	deadline = time.Now().Add(15 * time.Second)
	for len(proctag.Find(rec.Handle)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the orphan's processes %v survived the reconcile", proctag.Find(rec.Handle))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(filepath.Join(delegation.Dir(w.scv), rec.Handle+".json")); !os.IsNotExist(err) {
		t.Fatalf("the orphan's record is still there: %v", err)
	}
	want(t, w.run("", "ps", "--all"), 0, "no delegated runs")
}
