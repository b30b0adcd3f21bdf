package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestClosedStderrDoesNotKill: stderr is a pipe whose reader is gone
// before the server starts, and the server logs from its first moments
// (debug level, and the warning of the auto policy). Logging must not kill
// it with SIGPIPE: it serves a whole session and exits 0 at end of input.
func TestClosedStderrDoesNotKill(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // nobody will ever read stderr
	p := startWith(t, t.TempDir(), nil, func(cmd *exec.Cmd) { cmd.Stderr = w }, "--log-level", "debug", "--approval-policy", "auto")
	w.Close()
	initV3(p)
	p.send(&protocol.SessionStart{RequestID: "s", Cwd: t.TempDir()})
	sid := nextOf[*protocol.SessionStarted](p).SessionID
	p.send(&protocol.TurnStart{RequestID: "t", SessionID: sid, Prompt: "hello"})
	nextOf[*protocol.TurnCompleted](p)
	if code := p.exit(); code != 0 {
		t.Fatalf("exit code %d, want 0 (%v)", code, p.cmd.ProcessState)
	}
}

// TestSIGHUPCleansUp: SIGHUP (the terminal closing) is handled like SIGTERM
// and the end of input: the running turn is cancelled, the bash call's
// process tree is killed and reaped, the turn's end is written to the
// client and to the session's log, and the server exits 1 instead of dying
// with the signal.
func TestSIGHUPCleansUp(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	home, ws := t.TempDir(), t.TempDir()
	writeFakeConfig(t, home, f.URL())
	// Two sleeps, one in the background, with a duration unique to this
	// run so that /proc shows exactly ours.
	marker := strconv.FormatFloat(600+float64(time.Now().UnixNano()%100000)/1000, 'f', 3, 64)
	pids := filepath.Join(ws, "pids")
	cmdline := fmt.Sprintf("sleep %s & echo $$ $! > pids.tmp && mv pids.tmp pids; sleep %s; wait", marker, marker)
	args, _ := json.Marshal(map[string]string{"command": cmdline})
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "bash", string(args))))

	p := startEnv(t, home, []string{"HOME=" + t.TempDir()}, "--approval-policy", "auto")
	initV3(p)
	p.send(&protocol.SessionStart{RequestID: "s", Cwd: ws})
	sid := nextOf[*protocol.SessionStarted](p).SessionID
	p.send(&protocol.TurnStart{RequestID: "t", SessionID: sid, Prompt: "sleep"})
	nextOf[*protocol.ToolStarted](p)
	shell, bg := readPids(t, pids)
	for deadline := time.Now().Add(10 * time.Second); countSleeps(marker) != 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sleeps of the call running, want 2", countSleeps(marker))
		}
	}

	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	done := nextOf[*protocol.ToolCompleted](p)
	if done.Success || !strings.Contains(done.Output, "cancelled") {
		t.Fatalf("tool.completed = %+v", done)
	}
	end := nextOf[*protocol.TurnCancelled](p)
	if end.RequestID != "t" {
		t.Fatalf("turn.cancelled = %+v", end)
	}
	err := waitExit(t, p)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit = %v (%v), want exit code 1 after cleanup; stderr: %s", err, p.cmd.ProcessState, p.stderr.String())
	}
	for _, pid := range []int{shell, bg} {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("process %d of the bash call outlived the server", pid)
		}
	}
	if n := countSleeps(marker); n != 0 {
		t.Fatalf("%d sleeps of the call still run after the server exited", n)
	}
	// The session's log was flushed: it ends with the turn's end.
	log, err := os.ReadFile(filepath.Join(home, "state", "sessions", sid, "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(log), "\n"), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"t":"end"`) || !strings.Contains(last, `"outcome":"cancelled"`) {
		t.Fatalf("the session log ends with %s, not the turn's end", last)
	}
}

// startWith is startEnv with a hook that adjusts the command before it
// starts.
func startWith(t *testing.T, home string, env []string, adjust func(*exec.Cmd), args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--stdio"}, args...)...)
	// An empty HOME: without one, bash -l finds the user's profile
	// through the password file, and a profile that prints or changes
	// the environment would change what the tests see (issue 14, item 16).
	cmd.Env = append([]string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	return startCmd(t, cmd, adjust)
}

// waitExit waits (bounded) for p to exit without closing its stdin.
func waitExit(t *testing.T, p *proc) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("scv-server did not exit")
		return nil
	}
}

// countSleeps counts the running sleep processes whose argument is marker.
func countSleeps(marker string) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"); len(args) == 2 && filepath.Base(args[0]) == "sleep" && args[1] == marker {
			if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !isZombie(string(stat)) {
				n++
			}
		}
	}
	return n
}

func isZombie(stat string) bool {
	i := strings.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

func writeFakeConfig(t testing.TB, home, url string) {
	t.Helper()
	config := fo.Config(url, "")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
}
