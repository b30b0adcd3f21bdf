package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/fakeopenai"
)

// TestE2EAttachToDaemonSession: scv exec runs a turn in the daemon, whose
// session stays open there; `scv --attach ID` joins that session: the
// TUI shows the earlier turn from the daemon's replay, its own next turn
// runs in the same session (the model sees the whole conversation), and
// a turn scv exec --continue runs there while the TUI is attached shows
// in the TUI too.
func TestE2EAttachToDaemonSession(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.Text("Hello from exec.")),
		fakeopenai.Script(fakeopenai.Text("Second turn, from the TUI.")),
		fakeopenai.Script(fakeopenai.Text("Third, from exec.")),
	)
	home, ws := fakeHome(t, srv), t.TempDir()
	scv := daemonCLI(t, bin, home)
	if out := scv("exec", "--cd", ws, "first prompt"); !strings.Contains(out, "Hello from exec.") {
		t.Fatalf("exec in the daemon: %s", out)
	}
	st, err := client.QueryDaemonStatus(home, 5*time.Second)
	if err != nil || len(st.Sessions) != 1 {
		t.Fatalf("daemon status: %+v, %v", st, err)
	}
	sid := st.Sessions[0].SessionID
	// The pane runs one program without arguments: a script passes them.
	wrapper := filepath.Join(t.TempDir(), "scv-attach")
	script := "#!/bin/sh\nexec " + filepath.Join(bin, "scv") + " --attach " + sid + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, ws, home, nil, wrapper)
	tm.waitText("Attached to session "+sid, "Hello from exec.")
	tm.waitIdle()
	tm.submit("and now from the TUI")
	tm.waitText("Second turn, from the TUI.")
	tm.waitIdle()
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "Hello from exec.") || !strings.Contains(string(reqs[1].Body), "and now from the TUI") {
		t.Fatalf("the TUI's turn did not run in the exec's session: %d requests", len(reqs))
	}
	// Two clients on the session: a turn of scv exec shows in the TUI.
	if out := scv("exec", "--continue", "--cd", ws, "from exec again"); !strings.Contains(out, "Third, from exec.") || !strings.Contains(out, "open in the daemon") {
		t.Fatalf("exec --continue on the attached session: %s", out)
	}
	tm.waitText("Third, from exec.")
	tm.quit()
	// Quitting detached the TUI; the session stays open in the daemon.
	if st, err := client.QueryDaemonStatus(home, 5*time.Second); err != nil || len(st.Sessions) != 1 || st.Sessions[0].SessionID != sid {
		t.Fatalf("after quitting: %+v, %v", st, err)
	}
	scv("stop")
}

// TestE2ETUIThroughRestart: the TUI on the daemon (through `scv-server
// connect`) runs a slow turn with a prompt queued behind it; `scv restart`
// waits for the turn, restarts the daemon, and the TUI goes on without a
// problem shown: the queued prompt's reply arrives from the restarted
// daemon, and the next prompt runs in the same session.
func TestE2ETUIThroughRestart(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.Text("Slow start,"), fakeopenai.Delay(2*time.Second), fakeopenai.Text(" slow end.")),
		fakeopenai.Script(fakeopenai.Text("The queued one ran.")),
		fakeopenai.Script(fakeopenai.Text("After the restart too.")),
	)
	home, ws := fakeHome(t, srv), t.TempDir()
	scv := daemonCLI(t, bin, home)
	before, err := daemonfile.Read(home)
	if err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	tm.waitText("fake-model", "Ask anything")
	tm.submit("the slow one")
	tm.waitText("Slow start,")
	tm.submit("the queued one")
	tm.waitText("Queued (1")
	scv("restart")
	tm.waitText("Slow start, slow end.", "The queued one ran.")
	tm.waitIdle()
	if after, err := daemonfile.Read(home); err != nil || after.Instance == before.Instance {
		t.Fatalf("the daemon did not restart: %+v %v", after, err)
	}
	tm.submit("one more")
	s := tm.waitText("After the restart too.")
	for _, bad := range []string{"The server stopped", "Events were lost", "twice"} {
		if strings.Contains(s, bad) {
			t.Errorf("the restart showed %q:\n%s", bad, s)
		}
	}
	tm.waitIdle()
	reqs := srv.Requests()
	if len(reqs) != 3 || !strings.Contains(string(reqs[2].Body), "The queued one ran.") {
		t.Fatalf("the last turn did not run in the same session: %d requests", len(reqs))
	}
	tm.quit()
	scv("stop")
}

// daemonCLI starts a daemon on home with `scv start` (killed at the end
// of the test) and returns a runner of scv commands on that home.
func daemonCLI(t *testing.T, bin, home string) func(args ...string) string {
	t.Helper()
	t.Cleanup(func() {
		if info, err := daemonfile.Read(home); err == nil {
			_ = syscall.Kill(info.Pid, syscall.SIGKILL)
		}
	})
	scv := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(bin, "scv"), args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "SCV_HOME=" + home}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("scv %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	scv("start")
	return scv
}
