package records

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/proctag"
	"go.uber.org/goleak"
)

// helperEnv makes the test binary act as an SCV "owner" process (see
// runOwner) instead of running tests.
const helperEnv = "DELEGATION_TEST_OWNER_HOME"

func TestMain(m *testing.M) {
	if home := os.Getenv(helperEnv); home != "" {
		runOwner(home)
		return
	}
	goleak.VerifyTestMain(m)
}

// runOwner plays an SCV process: it starts an agent (a shell in its own
// session that also leaves a setsid grandchild behind), both tagged with
// the handle, writes their record naming itself as the owner, prints the
// pids and waits to be killed.
func runOwner(home string) {
	handle := os.Getenv("DELEGATION_TEST_HANDLE")
	c := exec.Command("sh", "-c", `setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!; exec sleep 300`)
	c.Env = append(os.Environ(), proctag.Var+"="+handle)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := c.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	if err := c.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	escapee, _ := strconv.Atoi(strings.TrimSpace(line))
	self, _ := Self()
	agent, _ := ProcessOf(c.Process.Pid)
	r := Record{Handle: handle, Agent: "codex", Session: "s1", Cwd: "/tmp", Depth: 1,
		AgentProcess: agent, Owner: self, StartedUnix: time.Now().Unix()}
	if err := Write(home, r); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	if err := MarkConversation(home, "cli-"+handle, self); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	fmt.Printf("%d %d\n", c.Process.Pid, escapee)
	select {}
}

func linuxOnly(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("process identity is read from /proc")
	}
}

func TestWriteListRemove(t *testing.T) {
	t.Parallel()
	linuxOnly(t)
	home := t.TempDir()
	if recs, err := List(home); err != nil || len(recs) != 0 {
		t.Fatalf("List of an empty home = %v, %v", recs, err)
	}
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	a := Record{Handle: "codex-3f9a2c", Agent: "codex", Session: "s", Owner: self, StartedUnix: 20, Conversation: "codex-2", Turn: 3}
	b := Record{Handle: "pi-000001", Agent: "pi", Owner: self, StartedUnix: 10}
	for _, r := range []Record{a, b} {
		if err := Write(home, r); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{Dir(home), filepath.Join(Dir(home), a.Handle+".json")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		want := fs.FileMode(0o600)
		if fi.IsDir() {
			want = 0o700
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	recs, err := List(home)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0] != b || recs[1] != a {
		t.Fatalf("List = %+v, want [b a]", recs)
	}
	got, err := Read(home, a.Handle)
	if err != nil || got != a {
		t.Fatalf("Read = %+v, %v", got, err)
	}
	if err := Remove(home, a.Handle); err != nil {
		t.Fatal(err)
	}
	if err := Remove(home, a.Handle); err != nil {
		t.Fatalf("removing a missing record: %v", err)
	}
	if _, err := Read(home, a.Handle); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Read of a removed record: %v", err)
	}
}

func TestBadHandles(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, h := range []string{"", ".", "..", ".hidden", "a/b", "a\x00b", "a b", strings.Repeat("x", 201), "../escape"} {
		if err := Write(home, Record{Handle: h, Owner: Process{PID: 1}}); err == nil {
			t.Errorf("Write accepted handle %q", h)
		}
		if err := Remove(home, h); err == nil {
			t.Errorf("Remove accepted handle %q", h)
		}
		if err := MarkConversation(home, h, Process{PID: 1}); err == nil {
			t.Errorf("MarkConversation accepted %q", h)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "escape.json")); err == nil {
		t.Fatal("a handle escaped the directory")
	}
}

func TestListReportsCorruptRecords(t *testing.T) {
	linuxOnly(t)
	home := t.TempDir()
	self, _ := Self()
	good := Record{Handle: "claude-1", Agent: "claude", Owner: self}
	if err := Write(home, good); err != nil {
		t.Fatal(err)
	}
	dir := Dir(home)
	files := map[string]string{
		"broken-1.json":   `{"handle": "broken-1", `,
		"wrongname.json":  `{"handle": "other", "owner": {"pid": 1}}`,
		"noowner.json":    `{"handle": "noowner"}`,
		"empty.json":      ``,
		"bad name!.json":  `{}`,
		".scv-tmp-x.json": `garbage`, // a temporary file: ignored
		"notes.txt":       `ignored`,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "adir.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A FIFO would hang a plain read; a link would be followed out of
	// SCV_HOME.
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo-1.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "linked-1.json")
	if err := os.WriteFile(outside, []byte(`{"handle":"linked-1","owner":{"pid":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linked-1.json")); err != nil {
		t.Fatal(err)
	}
	recs, err := List(home)
	if len(recs) != 1 || recs[0] != good {
		t.Fatalf("List records = %+v, want only the good one", recs)
	}
	var n int
	for _, e := range unjoin(err) {
		var ce *CorruptError
		if !errors.As(e, &ce) {
			t.Errorf("error %v is not a CorruptError", e)
			continue
		}
		n++
		if !strings.Contains(e.Error(), "scv agents kill "+ce.Handle) {
			t.Errorf("error %q does not say how to remove it", e)
		}
	}
	if n != 8 || !strings.Contains(err.Error(), "named pipe") || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("List reported %d corrupt files, want 8 (the FIFO and the link among them): %v", n, err)
	}
	// Reconcile leaves them in place.
	if _, err := Reconcile(context.Background(), home, nil); err == nil {
		t.Fatal("Reconcile did not report the corrupt records")
	}
	for name := range files {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add([]byte(`{"handle":"codex-1","owner":{"pid":5,"start_time":9},"agent_process":{"pid":6}}`))
	f.Add([]byte(`{"handle":"../x","owner":{"pid":5}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRecord(data)
		if err != nil {
			return
		}
		if CheckName("handle", r.Handle) != nil || r.Owner.PID <= 0 {
			t.Fatalf("ParseRecord accepted %+v", r)
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if r2, err := ParseRecord(out); err != nil || r2 != r {
			t.Fatalf("round trip: %+v, %v", r2, err)
		}
	})
}

func TestProcessIdentity(t *testing.T) {
	t.Parallel()
	linuxOnly(t)
	self, err := Self()
	if err != nil || self.PID != os.Getpid() || self.StartTime == 0 {
		t.Fatalf("Self = %+v, %v", self, err)
	}
	if !self.Alive() {
		t.Fatal("this process is not Alive")
	}
	reused := Process{PID: self.PID, StartTime: self.StartTime + 1}
	if reused.Alive() {
		t.Fatal("a process with another start time counts as alive")
	}
	if (Process{}).Alive() || (Process{PID: -1}).Alive() {
		t.Fatal("a zero process counts as alive")
	}
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := ProcessOf(c.Process.Pid); err == nil {
		// The pid may have been reused already; then it must differ.
		t.Logf("pid %d reused already", c.Process.Pid)
	}
}

func TestConversationMarkers(t *testing.T) {
	t.Parallel()
	linuxOnly(t)
	home := t.TempDir()
	self, _ := Self()
	gone := deadProcess(t)
	if err := MarkConversation(home, "0199-live", self); err != nil {
		t.Fatal(err)
	}
	if err := MarkConversation(home, "0199-gone", gone); err != nil {
		t.Fatal(err)
	}
	live, err := LiveConversations(home)
	if err != nil || len(live) != 1 || !live["0199-live"] {
		t.Fatalf("LiveConversations = %v, %v", live, err)
	}
	if _, err := Reconcile(context.Background(), home, nil); err != nil {
		t.Fatal(err)
	}
	ms, err := Markers(home)
	if err != nil || len(ms) != 1 || ms[0].CLISession != "0199-live" {
		t.Fatalf("after Reconcile, markers = %+v, %v", ms, err)
	}
	if err := UnmarkConversation(home, "0199-live"); err != nil {
		t.Fatal(err)
	}
	if err := UnmarkConversation(home, "0199-live"); err != nil {
		t.Fatalf("second unmark: %v", err)
	}
	// A corrupt marker is reported and its name kept alive, to be safe.
	if err := os.WriteFile(filepath.Join(ConversationsDir(home), "0199-bad"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	live, err = LiveConversations(home)
	if err == nil || !live["0199-bad"] {
		t.Fatalf("LiveConversations with a corrupt marker = %v, %v", live, err)
	}
}

// deadProcess returns the identity a process had before it exited.
func deadProcess(t *testing.T) Process {
	t.Helper()
	c := exec.Command("sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p, err := ProcessOf(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Process.Kill()
	_ = c.Wait()
	if p.Alive() {
		t.Fatal("a reaped process is alive")
	}
	return p
}

func processGone(pid int) bool {
	st, ok := proctag.ReadStat(pid)
	return !ok || st.State == 'Z' || st.State == 'X'
}

// waitGone waits, bounded, for pid to exit (it may still be reparenting
// after a kill).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestReconcileStopsOrphanOfKilledOwner(t *testing.T) {
	linuxOnly(t)
	home := t.TempDir()
	handle := "codex-" + strconv.Itoa(os.Getpid())
	owner := exec.Command(os.Args[0], "-test.run=^$")
	owner.Env = append(os.Environ(), helperEnv+"="+home, "DELEGATION_TEST_HANDLE="+handle)
	owner.Stderr = os.Stderr
	out, err := owner.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	var agentPID, escapeePID int
	line, err := bufio.NewReader(out).ReadString('\n')
	if _, serr := fmt.Sscan(line, &agentPID, &escapeePID); err != nil || serr != nil {
		_ = owner.Process.Kill()
		_ = owner.Wait()
		t.Fatalf("owner printed %q: %v %v", line, err, serr)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(agentPID, syscall.SIGKILL)
		_ = syscall.Kill(escapeePID, syscall.SIGKILL)
	})

	// While the owner runs, nothing is an orphan.
	if n, err := Reconcile(context.Background(), home, nil); n != 0 || err != nil {
		t.Fatalf("Reconcile with a live owner = %d, %v", n, err)
	}
	if processGone(agentPID) || processGone(escapeePID) {
		t.Fatal("Reconcile stopped a live owner's run")
	}

	if err := owner.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = owner.Wait()

	n, err := Reconcile(context.Background(), home, nil)
	if err != nil || n != 1 {
		t.Fatalf("Reconcile = %d, %v; want 1 orphan stopped", n, err)
	}
	waitGone(t, agentPID)
	waitGone(t, escapeePID)
	if recs, err := List(home); err != nil || len(recs) != 0 {
		t.Fatalf("records after Reconcile: %+v, %v", recs, err)
	}
	if ms, err := Markers(home); err != nil || len(ms) != 0 {
		t.Fatalf("markers after Reconcile: %+v, %v", ms, err)
	}
}

func TestReconcileNeverSignalsReusedPID(t *testing.T) {
	t.Parallel()
	linuxOnly(t)
	home := t.TempDir()
	// An untagged process in its own group stands for the process that
	// got the agent's pid after the agent exited.
	c := exec.Command("sleep", "300")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	now, err := ProcessOf(c.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	r := Record{Handle: "pi-reused", Agent: "pi",
		AgentProcess: Process{PID: now.PID, StartTime: now.StartTime - 1},
		Owner:        deadProcess(t)}
	if err := Write(home, r); err != nil {
		t.Fatal(err)
	}
	n, err := Reconcile(context.Background(), home, nil)
	if err != nil || n != 1 {
		t.Fatalf("Reconcile = %d, %v", n, err)
	}
	if !now.Alive() {
		t.Fatal("Reconcile signalled a process whose start time differs from the record's")
	}
	if _, err := Read(home, r.Handle); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the orphan's record was not removed: %v", err)
	}
}

func TestReconcileHonoursContext(t *testing.T) {
	t.Parallel()
	linuxOnly(t)
	home := t.TempDir()
	if err := Write(home, Record{Handle: "grok-1", Owner: deadProcess(t)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := Reconcile(ctx, home, nil); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Reconcile with a cancelled context = %d, %v", n, err)
	}
	if _, err := Read(home, "grok-1"); err != nil {
		t.Fatalf("record gone after a cancelled Reconcile: %v", err)
	}
}

func TestStopRunUntaggedGroup(t *testing.T) {
	linuxOnly(t)
	for _, tc := range []struct {
		name   string
		script string
	}{
		{"exits on TERM", "exec sleep 300"},
		{"ignores TERM", `trap "" TERM; sleep 300 & wait`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No tag: only the group signal can reach it.
			c := exec.Command("sh", "-c", tc.script)
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			go func() { _ = c.Wait(); close(exited) }()
			t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); <-exited })
			p, err := ProcessOf(c.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			// Wait until the shell has installed its trap (it has forked
			// the sleep then).
			deadline := time.Now().Add(10 * time.Second)
			for {
				data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p.PID, p.PID))
				cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
				if len(strings.TrimSpace(string(data))) > 0 || strings.HasPrefix(string(cmd), "sleep") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the agent never started its sleep")
				}
				time.Sleep(10 * time.Millisecond)
			}
			res := StopRun(Record{Handle: "untagged-" + strconv.Itoa(p.PID), AgentProcess: p}, 300*time.Millisecond)
			if !res.Group {
				t.Fatalf("StopRun = %+v, want the group signalled", res)
			}
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				t.Fatal("the untagged agent survived StopRun")
			}
		})
	}
}
