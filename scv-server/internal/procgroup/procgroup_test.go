//go:build linux

package procgroup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hang bounds every wait of a test; it only guards against a hang.
const hang = 30 * time.Second

// output is a Command.Output that records everything and lets a test wait
// for a substring.
type output struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	cond chan struct{} // closed and replaced on every write
}

func newOutput() *output { return &output{cond: make(chan struct{})} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	close(o.cond)
	o.cond = make(chan struct{})
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor blocks until the output contains s.
func (o *output) waitFor(t *testing.T, s string) {
	t.Helper()
	timer := time.NewTimer(hang)
	defer timer.Stop()
	for {
		o.mu.Lock()
		has, ch := strings.Contains(o.buf.String(), s), o.cond
		o.mu.Unlock()
		if has {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("output never contained %q; got %q", s, o.String())
		}
	}
}

type runResult struct {
	st  Status
	err error
}

// start runs script under bash in the background; the result arrives on
// the channel.
func start(ctx context.Context, t *testing.T, c Command, script string) (<-chan runResult, *output) {
	t.Helper()
	out := newOutput()
	c.Path = "/bin/bash"
	c.Args = []string{"-c", script}
	c.Env = os.Environ()
	c.Output = out
	if c.Dir == "" {
		c.Dir = t.TempDir()
	}
	ch := make(chan runResult, 1)
	go func() {
		st, err := Run(ctx, c)
		ch <- runResult{st, err}
	}()
	return ch, out
}

func await(t *testing.T, ch <-chan runResult) Status {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Run: %v", r.err)
		}
		return r.st
	case <-time.After(hang):
		t.Fatal("Run did not return")
		return Status{}
	}
}

func run(t *testing.T, c Command, script string) (Status, string) {
	t.Helper()
	ch, out := start(context.Background(), t, c, script)
	st := await(t, ch)
	checkClean(t, st.Tag)
	return st, out.String()
}

// checkClean fails if a process of the run is alive or a zombie child of
// the test process is left.
func checkClean(t *testing.T, tag string) {
	t.Helper()
	if pids := FindTagged(tag); len(pids) > 0 {
		t.Errorf("processes of run %s still alive: %v", tag, pids)
	}
	for _, pid := range children() {
		if procState(pid) == 'Z' {
			t.Errorf("zombie child %d left", pid)
		}
	}
}

func gone(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return os.IsNotExist(err)
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		script string
		exited bool
		code   int
		sig    syscall.Signal
		out    string
	}{
		{"true", true, 0, 0, ""},
		{"echo out; echo err >&2; exit 1", true, 1, 0, "out\nerr\n"},
		{"exit 3", true, 3, 0, ""},
		{"kill -KILL $$", false, 0, syscall.SIGKILL, ""},
		{"kill -TERM $$", false, 0, syscall.SIGTERM, ""},
	}
	for _, tc := range tests {
		t.Run(tc.script, func(t *testing.T) {
			st, out := run(t, Command{}, tc.script)
			if st.Exited != tc.exited || st.Code != tc.code || st.Signal != tc.sig || st.TimedOut || st.Cancelled {
				t.Fatalf("status = %+v, want exited %v code %d signal %v", st, tc.exited, tc.code, tc.sig)
			}
			if out != tc.out || st.OutputBytes != int64(len(tc.out)) {
				t.Fatalf("output %q (%d bytes), want %q", out, st.OutputBytes, tc.out)
			}
		})
	}
}

func TestEnvironmentAndDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(TagVar, "outer-tag")
	st, out := run(t, Command{Dir: dir, Tag: "my-tag"}, `echo "$`+TagVar+`"; pwd; read -r x; echo "stdin:$?"`)
	want := "my-tag,outer-tag\n" + dir + "\nstdin:1\n"
	if out != want {
		t.Fatalf("output %q, want %q", out, want)
	}
	if st.Tag != "my-tag" {
		t.Fatalf("tag = %q", st.Tag)
	}
}

func TestWithTag(t *testing.T) {
	got := WithTag([]string{"A=1", TagVar + "=x,y", "B=2"}, "t")
	want := []string{"A=1", "B=2", TagVar + "=t,x,y"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("WithTag = %q, want %q", got, want)
	}
	env := []byte("A=1\x00" + TagVar + "=t,x,y\x00B=2")
	for tag, want := range map[string]bool{"t": true, "x": true, "y": true, "z": false, "t,x": false, "": false} {
		if got := environHasTag(env, tag); got != want {
			t.Errorf("environHasTag(%q) = %v, want %v", tag, got, want)
		}
	}
	if environHasTag([]byte("OTHER=t\x00"), "t") {
		t.Error("a tag in another variable matched")
	}
	if _, err := Run(context.Background(), Command{Path: "/bin/true", Tag: "a,b"}); err == nil {
		t.Error("a tag with a comma was accepted")
	}
}

func TestStartFailure(t *testing.T) {
	_, err := Run(context.Background(), Command{Path: "/bin/true", Dir: filepath.Join(t.TempDir(), "missing")})
	if err == nil {
		t.Fatal("Run in a missing directory succeeded")
	}
	if _, err := Run(context.Background(), Command{Path: "/no/such/program"}); err == nil {
		t.Fatal("Run of a missing program succeeded")
	}
}

func TestDeadlineKillsAtOnce(t *testing.T) {
	st, _ := run(t, Command{Timeout: 300 * time.Millisecond}, "sleep 30")
	if !st.TimedOut || st.Signal != syscall.SIGKILL || st.Cancelled {
		t.Fatalf("status = %+v, want timed out, killed by KILL", st)
	}
	if st.Elapsed < 300*time.Millisecond || st.Elapsed > 10*time.Second {
		t.Fatalf("elapsed %v", st.Elapsed)
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name   string
		script string
		// killed: the TERM is ignored, so KILL ends it after the grace.
		killed bool
	}{
		{"TERM ends it", "echo ready; sleep 30 & wait", false},
		{"TERM ignored", "trap '' TERM; echo ready; sleep 30", true},
		{"TERM ignored by a background child", "(trap '' TERM; echo ready; sleep 30) & wait", true},
	}
	const grace = 300 * time.Millisecond
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch, out := start(ctx, t, Command{TermGrace: grace}, tc.script)
			out.waitFor(t, "ready")
			cancel()
			st := await(t, ch)
			checkClean(t, st.Tag)
			if !st.Cancelled || st.TimedOut {
				t.Fatalf("status = %+v, want cancelled", st)
			}
			if tc.killed {
				// KILL comes only after the grace.
				if st.Elapsed < grace {
					t.Fatalf("ended after %v, before the %v grace", st.Elapsed, grace)
				}
			}
		})
	}
}

func TestEscapeesAreKilledAndReaped(t *testing.T) {
	tests := []struct {
		name   string
		script string
	}{
		{"setsid", `setsid sleep 300 & p=$!`},
		{"double fork", `p=$( (setsid sleep 300 >/dev/null 2>&1 & echo $!) )`},
		{"background in the group", `sleep 300 & p=$!`},
		{"nohup", `nohup sleep 300 >/dev/null 2>&1 & p=$!`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Wait until the sleep runs (its command name is sleep), then
			// report its pid and exit, leaving it behind.
			script := tc.script + `
until [ "$(cat /proc/$p/comm 2>/dev/null)" = sleep ]; do sleep 0.01; done
echo "pid $p"`
			st, out := run(t, Command{}, script)
			pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out, "pid ")))
			if err != nil {
				t.Fatalf("output %q", out)
			}
			if !st.Exited || st.Code != 0 || st.Swept < 1 || st.Survivors != 0 || st.PipeHeld {
				t.Fatalf("status = %+v", st)
			}
			if !gone(pid) {
				t.Fatalf("pid %d still exists", pid)
			}
		})
	}
}

func TestAdoptedZombieIsReaped(t *testing.T) {
	// An escapee that exits on its own while the leader runs becomes a
	// zombie child of the test process (the subreaper); the run reaps it.
	script := `rm -f pid; (setsid sh -c 'echo $$ > pid.tmp; mv pid.tmp pid' &)
until [ -s pid ]; do sleep 0.01; done; p=$(cat pid)
until [ "$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)" = Z ]; do sleep 0.01; done
echo "pid $p"`
	st, out := run(t, Command{}, script)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out, "pid ")))
	if err != nil || !st.Exited || st.Code != 0 {
		t.Fatalf("output %q, status %+v", out, st)
	}
	if !gone(pid) {
		t.Fatalf("zombie %d was not reaped", pid)
	}
}

func TestPipeHolders(t *testing.T) {
	// A background child holding the pipe is killed with the tree.
	st, _ := run(t, Command{}, "sleep 300 & echo bg")
	if st.PipeHeld || st.Swept != 1 {
		t.Fatalf("status = %+v", st)
	}

	// A process out of reach (not of the tree: started before the run,
	// by someone else) that opens the pipe is abandoned after the pipe
	// grace.
	flag := filepath.Join(t.TempDir(), "holding")
	holder := exec.Command("/bin/bash", "-c", `read p; exec 3>"$p"; touch "$1"; exec sleep 300`, "holder", flag)
	in, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	}()
	ch, out := start(context.Background(), t, Command{PipeGrace: 100 * time.Millisecond},
		`echo "pid $$"; until [ -e `+flag+` ]; do sleep 0.01; done`)
	out.waitFor(t, "pid ")
	pid := strings.TrimSpace(strings.TrimPrefix(out.String(), "pid "))
	if _, err := fmt.Fprintf(in, "/proc/%s/fd/1\n", pid); err != nil {
		t.Fatal(err)
	}
	st = await(t, ch)
	if !st.PipeHeld || !st.Exited || st.Code != 0 || st.Swept != 0 {
		t.Fatalf("status = %+v, want the pipe held and nothing swept", st)
	}
}

// TestEscapeWithEnvIAndSetsid: a process that drops the marker (env -i)
// and leaves the session and group (setsid), holding the pipe or not, is
// found by ancestry and killed when the command ends (issue 14, item 2).
func TestEscapeWithEnvIAndSetsid(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{"child", `setsid env -i /bin/sleep 300 & p=$!`},
		// The intermediate exits at once: the sleep is an orphan, adopted
		// by the server as a subreaper.
		{"double fork", `p=$(setsid env -i /bin/bash -c '/bin/sleep 300 >/dev/null 2>&1 & echo $!')`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, out := run(t, Command{PipeGrace: 100 * time.Millisecond}, tc.script+`
until [ "$(cat /proc/$p/comm 2>/dev/null)" = sleep ]; do sleep 0.01; done
echo "pid $p"`)
			pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out, "pid ")))
			if err != nil {
				t.Fatalf("output %q", out)
			}
			if st.Swept != 1 || st.Survivors != 0 || st.PipeHeld || !gone(pid) {
				_ = unix.Kill(pid, unix.SIGKILL)
				t.Fatalf("status = %+v; pid %d gone: %v", st, pid, gone(pid))
			}
		})
	}
}

// TestOrphanAdoptedBeforeTheTreeIsFollowed: a leader that double-forks an
// escapee (env -i, setsid) before Run follows its tree (the caller was
// descheduled after starting it, as on a loaded machine) still has the
// escapee, already adopted by the server, killed as its own: the server's
// children from before the run are listed before the leader starts.
func TestOrphanAdoptedBeforeTheTreeIsFollowed(t *testing.T) {
	testHookStarted = func() { time.Sleep(300 * time.Millisecond) }
	defer func() { testHookStarted = nil }()
	st, out := run(t, Command{PipeGrace: 100 * time.Millisecond}, `p=$(setsid env -i /bin/bash -c '/bin/sleep 300 >/dev/null 2>&1 & echo $!')
echo "pid $p"`)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out, "pid ")))
	if err != nil {
		t.Fatalf("output %q", out)
	}
	if st.Swept != 1 || !gone(pid) {
		_ = unix.Kill(pid, unix.SIGKILL)
		t.Fatalf("status = %+v; the escapee %d gone: %v", st, pid, gone(pid))
	}
}

func TestNestedTagIsFoundByOuterRun(t *testing.T) {
	// A run started inside a run (its environment holds the outer tag)
	// carries both tags; the outer sweep finds it.
	script := `export ` + TagVar + `="inner,$` + TagVar + `"; setsid env sleep 300 & p=$!
until [ "$(cat /proc/$p/comm 2>/dev/null)" = sleep ]; do sleep 0.01; done
echo "pid $p"`
	st, out := run(t, Command{}, script)
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(out, "pid ")))
	if st.Swept != 1 || pid == 0 || !gone(pid) {
		t.Fatalf("status = %+v, output %q", st, out)
	}
}

func TestLargeOutputIsDrained(t *testing.T) {
	var n countWriter
	st, err := Run(context.Background(), Command{Path: "/bin/sh", Args: []string{"-c", "head -c 20000000 /dev/zero"}, Output: &n})
	if err != nil {
		t.Fatal(err)
	}
	if st.OutputBytes != 20000000 || int64(n) != 20000000 || !st.Exited || st.Code != 0 {
		t.Fatalf("status = %+v, writer saw %d", st, n)
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, err := Run(ctx, Command{Path: "/bin/true"})
	if err != nil || !st.Cancelled || st.Pid != 0 {
		t.Fatalf("Run = %+v, %v", st, err)
	}
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

func TestConcurrentRuns(t *testing.T) {
	// Runs at once (as in several sessions): each one's sweep and zombie
	// collection leaves the others' leaders and statuses alone.
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := `(setsid sleep 300 &); sleep 300 & true & exit ` + strconv.Itoa(i)
			st, err := Run(context.Background(), Command{Path: "/bin/bash", Args: []string{"-c", script}, Env: os.Environ()})
			switch {
			case err != nil:
				errs <- err.Error()
			case !st.Exited || st.Code != i:
				errs <- fmt.Sprintf("run %d: status %+v", i, st)
			case len(FindTagged(st.Tag)) > 0:
				errs <- fmt.Sprintf("run %d left processes", i)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	checkClean(t, "none")
}

func TestSeparateStderr(t *testing.T) {
	var stdout, stderr bytes.Buffer
	var started []int
	c := Command{
		Path:    "/bin/bash",
		Args:    []string{"-c", `echo out1; echo err1 >&2; head -c 3000000 /dev/zero >&2; echo out2`},
		Env:     os.Environ(),
		Output:  &stdout,
		Stderr:  &stderr,
		OnStart: func(pid int) { started = append(started, pid) },
	}
	st, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	checkClean(t, st.Tag)
	if got := stdout.String(); got != "out1\nout2\n" {
		t.Errorf("stdout %q", got)
	}
	if !strings.HasPrefix(stderr.String(), "err1\n") || stderr.Len() != 5+3000000 {
		t.Errorf("stderr %d bytes, starting %q", stderr.Len(), stderr.String()[:min(10, stderr.Len())])
	}
	if st.OutputBytes != 10 || st.StderrBytes != 3000005 || !st.Exited || st.Code != 0 {
		t.Errorf("status %+v", st)
	}
	if len(started) != 1 || started[0] != st.Pid || st.Pid == 0 {
		t.Errorf("OnStart calls %v, leader %d", started, st.Pid)
	}
}

func TestOnStartSeesRunningLeader(t *testing.T) {
	// OnStart runs while the leader is alive and unreaped: its /proc entry
	// (and so its start time) can be read.
	var comm string
	st, err := Run(context.Background(), Command{
		Path: "/bin/sleep", Args: []string{"0.2"},
		OnStart: func(pid int) {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
			comm = strings.TrimSpace(string(b))
		},
	})
	if err != nil || !st.Exited {
		t.Fatalf("%+v %v", st, err)
	}
	if comm != "sleep" {
		t.Errorf("comm at OnStart = %q", comm)
	}
	// A command that fails to start never calls OnStart.
	called := false
	if _, err := Run(context.Background(), Command{Path: "/no/such", OnStart: func(int) { called = true }}); err == nil || called {
		t.Errorf("start failure: err %v, OnStart called %v", err, called)
	}
}

func TestStderrPipeHolder(t *testing.T) {
	// A process out of reach holding only the stderr pipe is abandoned
	// after the pipe grace, as for the output pipe.
	flag := filepath.Join(t.TempDir(), "holding")
	holder := exec.Command("/bin/bash", "-c", `read p; exec 3>"$p"; touch "$1"; exec sleep 300`, "holder", flag)
	in, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	}()
	var stderr bytes.Buffer
	stdout := newOutput()
	done := make(chan runResult, 1)
	go func() {
		st, err := Run(context.Background(), Command{
			Path: "/bin/bash",
			Args: []string{"-c", `echo "pid $$"; until [ -e ` + flag + ` ]; do sleep 0.01; done`},
			Env:  os.Environ(), Output: stdout, Stderr: &stderr, PipeGrace: 100 * time.Millisecond,
		})
		done <- runResult{st, err}
	}()
	stdout.waitFor(t, "pid ")
	pid := strings.TrimSpace(strings.TrimPrefix(stdout.String(), "pid "))
	if _, err := fmt.Fprintf(in, "/proc/%s/fd/2\n", pid); err != nil {
		t.Fatal(err)
	}
	st := await(t, done)
	if !st.PipeHeld || !st.Exited {
		t.Fatalf("status %+v, want the stderr pipe held", st)
	}
}

// TestProcessLimitStopsAForkLoop: a loop that keeps starting processes,
// even ones that leave with env -i and setsid, is killed whole once the
// run has more processes alive than its limit allows (issue 14, item 2).
func TestProcessLimitStopsAForkLoop(t *testing.T) {
	limit := NewProcessLimit(40)
	pids := filepath.Join(t.TempDir(), "pids")
	st, _ := run(t, Command{Limit: limit, Timeout: hang},
		`while true; do setsid env -i /bin/sleep 300 & echo $! >> `+pids+`; done`)
	if !st.ProcessLimited || st.TimedOut || st.Survivors != 0 {
		t.Fatalf("status = %+v, want the run stopped by its process limit", st)
	}
	data, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	started := strings.Fields(string(data))
	// The count also holds the shell and children between fork and exec,
	// so the loop's own record can stop a little short of the limit.
	if len(started) < 30 {
		t.Fatalf("only %d processes started before the run was stopped at a limit of 40", len(started))
	}
	for _, p := range started {
		if pid, _ := strconv.Atoi(p); !gone(pid) {
			t.Errorf("process %d of the loop is still alive", pid)
		}
	}
	if n := len(limit.counts); n != 0 {
		t.Fatalf("the limit still counts %d runs", n)
	}
}

// TestProcessLimitIsShared: runs sharing a limit (a session's calls) are
// counted together; one that stays under the limit alone is stopped when
// another holds the rest.
func TestProcessLimitIsShared(t *testing.T) {
	limit := NewProcessLimit(30)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first, out := start(ctx, t, Command{Limit: limit}, `for i in $(seq 20); do sleep 300 & done; echo started; wait`)
	out.waitFor(t, "started")
	second, _ := start(ctx, t, Command{Limit: limit}, `for i in $(seq 20); do sleep 300 & done; wait`)
	// Whichever run's scan sees the total over the limit is stopped; on a
	// loaded machine that may be the first. The other then runs alone,
	// under the limit, until it is cancelled. (The test waited for the
	// second alone, and hung when the first was the one stopped.)
	var stopped, other Status
	select {
	case r := <-first:
		stopped = r.st
		cancel()
		other = await(t, second)
	case r := <-second:
		stopped = r.st
		cancel()
		other = await(t, first)
	case <-time.After(hang):
		t.Fatal("neither run was stopped by the shared limit")
	}
	checkClean(t, stopped.Tag)
	checkClean(t, other.Tag)
	// Both scans may see the total over the limit before either run's
	// count is gone: then both are stopped.
	if !stopped.ProcessLimited || (!other.ProcessLimited && !other.Cancelled) {
		t.Fatalf("the run that ended first: %+v; the other: %+v; want the first stopped by the limit and the other stopped or cancelled", stopped, other)
	}
}

// TestMemoryLimit: the leader, and so every process it starts, has the
// address-space limit.
func TestMemoryLimit(t *testing.T) {
	st, out := run(t, Command{MemoryLimit: 300 << 20}, `cat /proc/self/limits | grep 'Max address space'`)
	if !st.Exited || st.Code != 0 || !strings.Contains(out, strconv.Itoa(300<<20)) {
		t.Fatalf("status %+v, output %q", st, out)
	}
}

// TestSignalName: a status names its signal as people write it, never as
// syscall.Signal's description ("killed by signal killed").
func TestSignalName(t *testing.T) {
	t.Parallel()
	for sig, want := range map[syscall.Signal]string{syscall.SIGKILL: "KILL", syscall.SIGTERM: "TERM", syscall.Signal(77): "77"} {
		if got := (Status{Signal: sig}).SignalName(); got != want {
			t.Errorf("SignalName(%d) = %q, want %q", sig, got, want)
		}
	}
}
