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

	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/proctag"
	"github.com/scv-cli/scv/shared/testkit/bins"
)

// TestE2EOrphanOfKilledServer delegates to a (fake) dsh through
// `scv exec`, SIGKILLs the scv-server while the agent and its setsid
// descendant run, checks that `scv agents ps --all` shows the orphan, and
// that the next `scv-server --stdio` start reconciles it: both processes
// stopped and the record removed.
func TestE2EOrphanOfKilledServer(t *testing.T) {
	t.Parallel()
	orphanOfKilledServer(t, "dsh", false)
}

// TestE2EOrphanOfKilledACPServer is the same for an agent over ACP (a fake
// codex-acp): its server, recorded like any delegation, is reaped after
// its owner is SIGKILLed mid-turn.
func TestE2EOrphanOfKilledACPServer(t *testing.T) {
	t.Parallel()
	orphanOfKilledServer(t, "codex", true)
}

func orphanOfKilledServer(t *testing.T, agent string, overACP bool) {
	scvBin := bins.Need(t, "scv")
	serverBin := bins.Need(t, "scv-server")
	srv := fakeopenai.Start(t)
	srv.Enqueue(fakeopenai.Script(fakeopenai.ToolCall("call_1", "agent", `{"agent":"`+agent+`","prompt":"work for a while"}`)))

	w := newWorld(t)
	// The fake dsh is a CLI, not an ACP server (dsh --profile acp), so
	// it runs one process per turn.
	transport := "[agents.dsh]\ntransport = \"resume\"\n"
	if overACP {
		w.path = fakeACPBin + ":" + w.path
		transport = ""
	}
	w.write("config.toml", `[provider]
active = "fake"
[providers.fake]
base_url = "`+srv.URL()+`"
model = "fake-model-1"
api_key_env = ""
`+transport)
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
	var rec records.Record
	deadline := time.Now().Add(time.Minute)
	for {
		recs, _ := records.List(w.scv)
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
	if rec.Agent != agent || !rec.AgentProcess.Alive() || !rec.Owner.Alive() {
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
	want(t, w.run("", "ps", "--all"), 0, rec.Handle, agent, "orphan")

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
	if _, err := os.Stat(filepath.Join(records.Dir(w.scv), rec.Handle+".json")); !os.IsNotExist(err) {
		t.Fatalf("the orphan's record is still there: %v", err)
	}
	want(t, w.run("", "ps", "--all"), 0, "no delegated runs")
}

// TestE2EKillLiveRun stops a run whose scv-server still runs with
// `scv agents kill`: the agent and its setsid descendant die, the turn
// goes on (the model gets the tool result and answers), and the server
// removes the record. The runner reads kill_requested_unix, so the model
// gets a "cancelled" result, not a failure.
func TestE2EKillLiveRun(t *testing.T) {
	t.Parallel()
	scvBin := bins.Need(t, "scv")
	serverBin := bins.Need(t, "scv-server")
	srv := fakeopenai.Start(t)
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.ToolCall("call_1", "agent", `{"agent":"dsh","prompt":"work for a while"}`)),
		fakeopenai.Script(fakeopenai.Text("the run was stopped")),
	)
	w := newWorld(t)
	w.write("config.toml", "[provider]\nactive = \"fake\"\n[providers.fake]\nbase_url = \""+srv.URL()+"\"\nmodel = \"m\"\napi_key_env = \"\"\n"+
		"[agents.dsh]\ntransport = \"resume\"\n")
	want(t, w.run(secret+"\n", "login", "dsh"), 0, "dsh: key stored")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, scvBin, "exec", "--approval-policy", "auto", "--cd", t.TempDir(), "delegate it")
	c.Env = []string{"HOME=" + w.home, "SCV_HOME=" + w.scv, "SCV_SERVER_BIN=" + serverBin, "PATH=" + w.path}
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	defer func() { _ = c.Process.Kill() }()

	var rec records.Record
	deadline := time.Now().Add(time.Minute)
	for {
		recs, _ := records.List(w.scv)
		if len(recs) == 1 && len(proctag.Find(recs[0].Handle)) == 2 {
			rec = recs[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record with two tagged processes appeared\nstderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { proctag.Kill(rec.Handle) })
	want(t, w.run("", "ps"), 0, rec.Handle, "running")
	want(t, w.run("", "kill", rec.Handle), 0, "stopped "+rec.Handle+" (dsh): its process group and")
	if got := proctag.Find(rec.Handle); len(got) != 0 {
		t.Fatalf("tagged processes left after kill: %v", got)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("scv exec: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the turn did not end after the kill\nstderr:\n%s", stderr.String())
	}
	if !strings.Contains(stdout.String(), "the run was stopped") {
		t.Fatalf("stdout %q, want the model's answer after the tool result", stdout.String())
	}
	if recs, _ := records.List(w.scv); len(recs) != 0 {
		t.Fatalf("records left after the run ended: %+v", recs)
	}
	reqs := srv.Requests()
	var tool string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role == "tool" {
			tool = m.Content
		}
	}
	if !strings.Contains(tool, `"status":"cancelled"`) || !strings.Contains(tool, "scv agents kill") {
		t.Fatalf("tool result %q, want a cancelled run stopped by scv agents kill", tool)
	}
}
