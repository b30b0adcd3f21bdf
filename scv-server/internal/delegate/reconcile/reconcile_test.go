package reconcile

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/proctag"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRunStopsOrphan records a real tagged process as the run of an owner
// that has exited and checks that Run stops it and logs it.
func TestRunStopsOrphan(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process identity is read from /proc")
	}
	home := t.TempDir()
	owner := exec.Command("true")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	ownerProc, err := records.ProcessOf(owner.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Wait(); err != nil {
		t.Fatal(err)
	}
	agent := exec.Command("sleep", "300")
	agent.Env = append(os.Environ(), proctag.Var+"=pi-orphan1")
	agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = agent.Wait(); close(exited) }()
	t.Cleanup(func() { _ = agent.Process.Kill(); <-exited })
	agentProc, err := records.ProcessOf(agent.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	r := records.Record{Handle: "pi-orphan1", Agent: "pi", AgentProcess: agentProc, Owner: ownerProc, StartedUnix: time.Now().Unix()}
	if err := records.Write(home, r); err != nil {
		t.Fatal(err)
	}
	// A corrupt record is logged, not removed, and does not stop the pass.
	if err := os.WriteFile(records.Dir(home)+"/broken.json", []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if n := Run(context.Background(), home, log); n != 1 {
		t.Fatalf("Run stopped %d, want 1; log:\n%s", n, logs.String())
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the orphan's agent is still running")
	}
	if recs, _ := records.List(home); len(recs) != 0 {
		t.Fatalf("records left: %+v", recs)
	}
	for _, want := range []string{"stopped orphaned delegation", "handle=pi-orphan1", "corrupt delegation record", "scv agents kill broken"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if _, err := os.Stat(records.Dir(home) + "/broken.json"); err != nil {
		t.Fatal("the corrupt record was removed")
	}
	if n := Run(context.Background(), home, nil); n != 0 {
		t.Fatalf("second Run stopped %d", n)
	}
}
