package main_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/delegate/records"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/proctag"
	"github.com/scv-cli/scv/shared/protocol"
)

// daemonProc is a running `scv-server daemon`.
type daemonProc struct {
	t      testing.TB
	home   string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan struct{}
}

// daemonFixture starts the scripted model and a daemon (with args) on a
// fresh SCV_HOME configured for it, and gives a workspace.
func daemonFixture(t *testing.T, args ...string) (f *fo.Server, home, ws string, d *daemonProc) {
	t.Helper()
	f = fo.Start(t)
	home, ws = t.TempDir(), t.TempDir()
	writeFakeConfig(t, home, f.URL())
	return f, home, ws, startDaemon(t, home, nil, args...)
}

// startDaemon starts a daemon on home and waits until it listens; a
// failed test logs its output.
func startDaemon(t testing.TB, home string, env []string, args ...string) *daemonProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"daemon", "--log-level", "info"}, args...)...)
	cmd.Env = append([]string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + home}, env...)
	d := &daemonProc{t: t, home: home, cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{b: d.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-d.done
		if t.Failed() {
			t.Log(d.log())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if info, err := daemonfile.Read(home); err == nil && info.Pid == cmd.Process.Pid {
			return d
		}
		select {
		case <-d.done:
			t.Fatalf("the daemon exited before listening: %v\n%s", cmd.ProcessState, d.log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not write daemon.json within 10 s\n%s", d.log())
		}
	}
}

func (d *daemonProc) log() string {
	w := d.cmd.Stderr.(*lockedWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	return d.stderr.String()
}

// exitCode waits for the daemon to exit and returns its code.
func (d *daemonProc) exitCode() int {
	d.t.Helper()
	select {
	case <-d.done:
	case <-time.After(20 * time.Second):
		d.t.Fatalf("the daemon did not exit\n%s", d.log())
	}
	return d.cmd.ProcessState.ExitCode()
}

// dclient is one connection to a daemon.
type dclient struct {
	t      testing.TB
	name   string
	c      net.Conn
	frames chan []byte
	n      int
}

func dial(t testing.TB, home, name string) *dclient {
	t.Helper()
	c, err := net.Dial("unix", paths.SocketFile(home))
	if err != nil {
		t.Fatal(err)
	}
	dc := &dclient{t: t, name: name, c: c, frames: make(chan []byte, 1<<14)}
	go func() {
		defer close(dc.frames)
		r := bufio.NewReaderSize(c, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			dc.frames <- bytes.TrimSuffix(line, []byte("\n"))
		}
	}()
	t.Cleanup(func() { c.Close() })
	return dc
}

func (dc *dclient) send(m protocol.ClientMessage) {
	dc.t.Helper()
	b, err := protocol.EncodeClientMessage(m)
	if err != nil {
		dc.t.Fatal(err)
	}
	if _, err := dc.c.Write(append(b, '\n')); err != nil {
		dc.t.Fatalf("%s: %v", dc.name, err)
	}
}

func (dc *dclient) id() string { dc.n++; return fmt.Sprintf("%s-%d", dc.name, dc.n) }

// next returns the next frame and its event.
func (dc *dclient) next() ([]byte, protocol.Event) {
	dc.t.Helper()
	select {
	case f, ok := <-dc.frames:
		if !ok {
			dc.t.Fatalf("%s: the daemon closed the connection", dc.name)
		}
		ev, err := protocol.DecodeEvent(f)
		if err != nil {
			dc.t.Fatalf("%s: %s is not an event: %v", dc.name, f, err)
		}
		return f, ev
	case <-time.After(15 * time.Second):
		dc.t.Fatalf("%s: no event within 15 s", dc.name)
		return nil, nil
	}
}

// until reads up to and including the first T, returning the sequenced
// frames read on the way (the T included when it is sequenced).
func until[T protocol.Event](dc *dclient) ([]string, T) {
	dc.t.Helper()
	var seqd []string
	for {
		f, ev := dc.next()
		if _, ok := ev.(protocol.Sequenced); ok {
			seqd = append(seqd, string(f))
		}
		if v, ok := ev.(T); ok {
			return seqd, v
		}
		var zero T
		if e, ok := ev.(*protocol.Error); ok {
			dc.t.Fatalf("%s: waiting for %T, got error %s: %s", dc.name, zero, e.Code, e.Message)
		}
		if protocol.IsTerminal(ev) && protocol.IsTerminal(zero) {
			dc.t.Fatalf("%s: waiting for %T, the turn ended with %s", dc.name, zero, f)
		}
	}
}

func (dc *dclient) init(version int) {
	dc.t.Helper()
	dc.send(&protocol.Initialize{RequestID: dc.id(), ProtocolVersion: version, Client: protocol.ClientInfo{Name: dc.name, Version: "1"}})
	until[*protocol.Initialized](dc)
}

// closed reports whether the daemon closed the connection within d.
func (dc *dclient) closed(d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case _, ok := <-dc.frames:
			if !ok {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// TestDaemonTwoClientsOneSession: client A starts a session and a turn
// whose bash call needs approval; client B attaches; both see the same
// events with the same seq; B approves, A is told by approval.resolved,
// and A's late answer is refused.
func TestDaemonTwoClientsOneSession(t *testing.T) {
	t.Parallel()
	f, home, ws, _ := daemonFixture(t)
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "bash", `{"command":"echo shared-$((6*7))"}`)), fo.Script(fo.Text("Done: ", "42.")))

	a := dial(t, home, "client-a")
	a.init(protocol.Version4)
	a.send(&protocol.SessionStart{RequestID: a.id(), Cwd: ws})
	_, started := until[*protocol.SessionStarted](a)
	sid := started.SessionID
	until[*protocol.QueueSnapshot](a)

	b := dial(t, home, "client-b")
	b.init(protocol.Version4)
	zero := uint64(0)
	b.send(&protocol.SessionAttach{RequestID: b.id(), SessionID: sid, AfterSeq: &zero})
	_, att := until[*protocol.SessionAttached](b)
	if att.Clients != 2 || att.LastSeq != 1 || att.Replayed != 1 || att.ReplayTruncated || att.TurnID != "" {
		t.Fatalf("session.attached = %+v", att)
	}
	replayed, _ := until[*protocol.QueueSnapshot](b)
	if len(replayed) != 1 {
		t.Fatalf("replay = %v", replayed)
	}

	a.send(&protocol.TurnStart{RequestID: a.id(), SessionID: sid, Prompt: "run it"})
	aEvents, reqA := until[*protocol.ApprovalRequested](a)
	bEvents, reqB := until[*protocol.ApprovalRequested](b)
	if reqA.ApprovalID != reqB.ApprovalID {
		t.Fatalf("different approvals: %s, %s", reqA.ApprovalID, reqB.ApprovalID)
	}
	b.send(&protocol.ApprovalResolve{RequestID: b.id(), SessionID: sid, ApprovalID: reqB.ApprovalID, Approved: true})
	moreA, resolvedA := until[*protocol.ApprovalResolved](a)
	if !resolvedA.Approved || resolvedA.By != "client-b" || resolvedA.ApprovalID != reqA.ApprovalID || resolvedA.TurnID != reqA.TurnID {
		t.Fatalf("approval.resolved = %+v", resolvedA)
	}
	a.send(&protocol.ApprovalResolve{RequestID: a.id(), SessionID: sid, ApprovalID: reqA.ApprovalID, Approved: false})
	// A's late answer is refused; the refusal may come anywhere among the
	// turn's events.
	aEvents = append(aEvents, moreA...)
	var refused *protocol.Error
	for {
		f, ev := a.next()
		if e, ok := ev.(*protocol.Error); ok {
			refused = e
			continue
		}
		aEvents = append(aEvents, string(f))
		if _, ok := ev.(*protocol.TurnCompleted); ok {
			break
		}
	}
	if refused == nil {
		_, refused = until[*protocol.Error](a)
	}
	if refused.Code != protocol.ErrApprovalNotFound {
		t.Fatalf("late answer: %s %s", refused.Code, refused.Message)
	}
	restB, _ := until[*protocol.TurnCompleted](b)
	bEvents = append(bEvents, restB...)
	if strings.Join(aEvents, "\n") != strings.Join(bEvents, "\n") {
		t.Fatalf("the two clients saw different events:\nA:\n%s\nB:\n%s", strings.Join(aEvents, "\n"), strings.Join(bEvents, "\n"))
	}
	if !strings.Contains(strings.Join(aEvents, "\n"), "shared-42") {
		t.Fatalf("the approved call did not run:\n%s", strings.Join(aEvents, "\n"))
	}

	// session.list (v4, no cwd) lists the live session with both clients;
	// after B detaches, one.
	a.send(&protocol.SessionList{RequestID: a.id()})
	_, listed := until[*protocol.SessionListed](a)
	if len(listed.Live) != 1 || listed.Live[0].SessionID != sid || listed.Live[0].Clients != 2 {
		t.Fatalf("session.listed = %+v", listed)
	}
	b.send(&protocol.SessionDetach{RequestID: b.id(), SessionID: sid})
	until[*protocol.SessionDetached](b)
	a.send(&protocol.DaemonStatus{RequestID: a.id()})
	_, st := until[*protocol.DaemonStatusReported](a)
	if st.Clients != 2 || len(st.Sessions) != 1 || st.Sessions[0].Clients != 1 || st.Pid == 0 {
		t.Fatalf("daemon.status_reported = %+v", st)
	}
}

// TestDaemonClientKilledTurnGoesOn: the client that started a turn is a
// separate process killed with SIGKILL mid-turn; the turn goes on and the
// other client sees it complete. A re-attach with after_seq replays what
// the second client missed.
func TestDaemonClientKilledTurnGoesOn(t *testing.T) {
	t.Parallel()
	f, home, ws, _ := daemonFixture(t)
	f.Enqueue(fo.Script(fo.Text("slow "), fo.Delay(1500*time.Millisecond), fo.Text("but finished")))

	watcher := dial(t, home, "watcher")
	watcher.init(protocol.Version4)
	watcher.send(&protocol.SessionStart{RequestID: watcher.id(), Cwd: ws})
	_, started := until[*protocol.SessionStarted](watcher)
	sid := started.SessionID
	until[*protocol.QueueSnapshot](watcher)

	// The killed client: a python process on the socket that attaches and
	// starts the turn, then waits to be killed.
	script := fmt.Sprintf(`
import socket, json, time, sys
s = socket.socket(socket.AF_UNIX)
s.connect(%q)
def send(m): s.sendall((json.dumps(m) + "\n").encode())
send({"type":"initialize","request_id":"1","protocol_version":4,"client":{"name":"doomed"}})
send({"type":"session.attach","request_id":"2","session_id":%q})
send({"type":"turn.start","request_id":"3","session_id":%q,"prompt":"go"})
buf = b""
while b"turn.started" not in buf:
    buf += s.recv(65536)
print("started", flush=True)
time.sleep(600)
`, paths.SocketFile(home), sid, sid)
	doomed := exec.Command("python3", "-c", script)
	out, err := doomed.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := doomed.Start(); err != nil {
		t.Skipf("python3: %v", err)
	}
	t.Cleanup(func() { _ = doomed.Process.Kill(); _ = doomed.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "started\n" {
		t.Fatalf("the python client said %q", line)
	}
	_, ts := until[*protocol.TurnStarted](watcher)
	if err := doomed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = doomed.Wait()
	evs, done := until[*protocol.TurnCompleted](watcher)
	if done.TurnID != ts.TurnID {
		t.Fatalf("turn %s completed, want %s", done.TurnID, ts.TurnID)
	}
	if !strings.Contains(strings.Join(evs, ""), "but finished") {
		t.Fatalf("the turn's text is missing:\n%s", strings.Join(evs, "\n"))
	}

	// A second connection re-attaches from the turn's start and gets the
	// same frames again, byte for byte.
	again := dial(t, home, "again")
	again.init(protocol.Version4)
	after := ts.Seq - 1
	again.send(&protocol.SessionAttach{RequestID: again.id(), SessionID: sid, AfterSeq: &after})
	_, att := until[*protocol.SessionAttached](again)
	if att.ReplayTruncated || att.LastSeq != done.Seq {
		t.Fatalf("session.attached = %+v", att)
	}
	var replay []string
	for range att.Replayed {
		f, _ := again.next()
		replay = append(replay, string(f))
	}
	want := append([]string{}, evs...)
	// evs lacks turn.started, which the watcher read before.
	tsFrame, _ := protocol.EncodeEvent(ts)
	want = append([]string{string(tsFrame)}, want...)
	if strings.Join(replay, "\n") != strings.Join(want, "\n") {
		t.Fatalf("replay differs:\n%s\nwant:\n%s", strings.Join(replay, "\n"), strings.Join(want, "\n"))
	}
}

// TestDaemonSlowClientDetached: a client that stops reading is detached
// when its queue stays full; the turn and the other client go on.
func TestDaemonSlowClientDetached(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	home, ws := t.TempDir(), t.TempDir()
	config := fmt.Sprintf("[provider]\nactive = \"fake\"\n\n[providers.fake]\nkind = \"openai\"\nbase_url = %q\napi_key = \"sk-test\"\nmodel = \"fake-model\"\nmax_retries = 0\ncontext_max_tokens = 4000000\n\n[agent]\nmax_steps = 100\n", f.URL())
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, home, nil, "--detach-wait", "200ms", "--approval-policy", "auto")
	// 480 tool calls' worth of events (about 2 MB): far more than a
	// socket buffer and a queue of 256 frames that nobody reads (the
	// non-streamed events wait for room).
	var steps []fo.Reply
	for i := range 16 {
		var calls []fo.Step
		for j := range 30 {
			calls = append(calls, fo.ToolCall(fmt.Sprintf("call_%d_%d", i, j), "read", `{"path":"big.txt"}`))
		}
		steps = append(steps, fo.Script(calls...))
	}
	steps = append(steps, fo.Script(fo.Text("read it all")))
	f.Enqueue(steps...)
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), bytes.Repeat([]byte("x"), 4000), 0o600); err != nil {
		t.Fatal(err)
	}

	fast := dial(t, home, "fast")
	fast.init(protocol.Version4)
	fast.send(&protocol.SessionStart{RequestID: fast.id(), Cwd: ws})
	_, started := until[*protocol.SessionStarted](fast)
	sid := started.SessionID
	until[*protocol.QueueSnapshot](fast)

	// The slow client: attaches, then never reads again. Its socket
	// buffer fills, then its queue.
	slow, err := net.Dial("unix", paths.SocketFile(home))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	for _, m := range []protocol.ClientMessage{
		&protocol.Initialize{RequestID: "1", ProtocolVersion: 4, Client: protocol.ClientInfo{Name: "slow"}},
		&protocol.SessionAttach{RequestID: "2", SessionID: sid},
	} {
		b, _ := protocol.EncodeClientMessage(m)
		if _, err := slow.Write(append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the slow client is attached.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		fast.send(&protocol.SessionList{RequestID: fast.id()})
		_, l := until[*protocol.SessionListed](fast)
		if len(l.Live) == 1 && l.Live[0].Clients == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow client never attached")
		}
	}
	fast.send(&protocol.TurnStart{RequestID: fast.id(), SessionID: sid, Prompt: "read a lot"})
	evs, done := until[*protocol.TurnCompleted](fast)
	if len(evs) < 1200 {
		t.Fatalf("only %d events: not enough to fill the slow client's socket and queue", len(evs))
	}
	if done.Steps != 17 {
		t.Fatalf("turn.completed = %+v", done)
	}
	if !strings.Contains(d.log(), "detaching it from its sessions") {
		t.Fatalf("the slow client was not detached:\n%s", d.log())
	}
	fast.send(&protocol.SessionList{RequestID: fast.id()})
	_, l := until[*protocol.SessionListed](fast)
	if len(l.Live) != 1 || l.Live[0].Clients != 1 {
		t.Fatalf("after the detach: %+v", l.Live)
	}
}

// TestDaemonSecondRefusedAndCleanExit: modes of the run directory and
// socket; a second daemon on the same SCV_HOME exits 4 naming the first's
// pid; SIGTERM ends the first cleanly (exit 0), removing its socket and
// daemon.json; a socket left by a daemon killed with SIGKILL does not stop
// the next one.
func TestDaemonSecondRefusedAndCleanExit(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	first := startDaemon(t, home, nil)
	for p, want := range map[string]os.FileMode{paths.RunDir(home): 0o700, paths.SocketFile(home): 0o600, paths.DaemonInfoFile(home): 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
	if fi, _ := os.Stat(paths.SocketFile(home)); fi.Mode().Type() != os.ModeSocket {
		t.Errorf("scv.sock is %v, not a socket", fi.Mode().Type())
	}
	second := exec.Command(bin, "daemon")
	second.Env = []string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH")}
	out, err := second.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Fatalf("second daemon: %v, want exit 4\n%s", err, out)
	}
	if want := fmt.Sprintf("another daemon (pid %d) already runs", first.cmd.Process.Pid); !strings.Contains(string(out), want) {
		t.Fatalf("second daemon said %q, want %q", out, want)
	}

	// A delegated run may not run a daemon.
	nested := exec.Command(bin, "daemon")
	nested.Env = []string{"SCV_HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "SCV_DELEGATION_DEPTH=1"}
	out, err = nested.CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "delegated run may not run a daemon") {
		t.Fatalf("delegated daemon: %v\n%s", err, out)
	}

	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := first.exitCode(); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, first.log())
	}
	for _, p := range []string{paths.SocketFile(home), paths.DaemonInfoFile(home)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after a clean exit: %v", p, err)
		}
	}

	killed := startDaemon(t, home, nil)
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.exitCode()
	if _, err := os.Stat(paths.SocketFile(home)); err != nil {
		t.Fatalf("SIGKILL left no socket to test with: %v", err)
	}
	third := startDaemon(t, home, nil)
	c := dial(t, home, "after-kill")
	c.init(protocol.Version4)
	_ = third
}

// TestDaemonReconcileTick: an orphaned delegated run that appears while
// the daemon runs is stopped by the next reconcile pass, without any
// client.
func TestDaemonReconcileTick(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	d := startDaemon(t, home, nil, "--reconcile-every", "300ms")
	stopped := orphanRun(t, home)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatalf("the orphan still runs after 10 s of 300 ms reconcile ticks\n%s", d.log())
	}
	// The count goes up once the pass that stopped it returns.
	c := dial(t, home, "status")
	c.init(protocol.Version4)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c.send(&protocol.DaemonStatus{RequestID: c.id()})
		_, st := until[*protocol.DaemonStatusReported](c)
		if st.OrphansStopped == 1 {
			break
		}
		if st.OrphansStopped > 1 || time.Now().After(deadline) {
			t.Fatalf("orphans_stopped = %d, want 1", st.OrphansStopped)
		}
	}
}

// TestDaemonIdleSessionEnds: a session nobody is attached to ends after
// the idle time; one with a client stays.
func TestDaemonIdleSessionEnds(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	startDaemon(t, home, nil, "--idle-every", "100ms", "--session-idle", "300ms")
	a := dial(t, home, "a")
	a.init(protocol.Version4)
	a.send(&protocol.SessionStart{RequestID: a.id(), Cwd: ws})
	_, kept := until[*protocol.SessionStarted](a)
	b := dial(t, home, "b")
	b.init(protocol.Version4)
	b.send(&protocol.SessionStart{RequestID: b.id(), Cwd: ws})
	_, gone := until[*protocol.SessionStarted](b)
	b.send(&protocol.SessionDetach{RequestID: b.id(), SessionID: gone.SessionID})
	until[*protocol.SessionDetached](b)
	time.Sleep(time.Second)
	a.send(&protocol.SessionList{RequestID: a.id()})
	_, l := until[*protocol.SessionListed](a)
	if len(l.Live) != 1 || l.Live[0].SessionID != kept.SessionID {
		t.Fatalf("live sessions after the idle time: %+v (kept %s, idle %s)", l.Live, kept.SessionID, gone.SessionID)
	}
	b.send(&protocol.SessionAttach{RequestID: b.id(), SessionID: gone.SessionID})
	_, e := until[*protocol.Error](b)
	if e.Code != protocol.ErrSessionNotFound {
		t.Fatalf("attach to the ended session: %+v", e)
	}
}

// lockedWriter is a bytes.Buffer safe for the process's stderr copier and
// the test.
type lockedWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// orphanRun records a tagged sleep as the delegated run of an owner that
// has exited, as a killed server leaves it; the channel closes when the
// sleep has exited.
func orphanRun(t *testing.T, home string) <-chan struct{} {
	t.Helper()
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
	handle := fmt.Sprintf("pi-orphan%d", time.Now().UnixNano()%1000000)
	agent := exec.Command("sleep", "300")
	agent.Env = append(os.Environ(), proctag.Var+"="+handle)
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
	r := records.Record{Handle: handle, Agent: "pi", AgentProcess: agentProc, Owner: ownerProc, StartedUnix: time.Now().Unix()}
	if err := records.Write(home, r); err != nil {
		t.Fatal(err)
	}
	return exited
}

// TestDaemonPlannedRestart: SIGUSR2 during a turn waits for it, keeps the
// queued prompt queued, saves the session in restart.json, re-executes
// (same pid, new instance), resumes the session and runs the queued
// prompt; a client re-attaching by id sees it.
func TestDaemonPlannedRestart(t *testing.T) {
	t.Parallel()
	f, home, ws, d := daemonFixture(t)
	before, err := daemonfile.Read(home)
	if err != nil {
		t.Fatal(err)
	}
	f.Enqueue(fo.Script(fo.Text("first "), fo.Delay(1500*time.Millisecond), fo.Text("done")), fo.Script(fo.Text("second done")))

	a := dial(t, home, "a")
	a.init(protocol.Version4)
	a.send(&protocol.SessionStart{RequestID: a.id(), Cwd: ws})
	_, started := until[*protocol.SessionStarted](a)
	sid := started.SessionID
	a.send(&protocol.TurnStart{RequestID: a.id(), SessionID: sid, Prompt: "one"})
	until[*protocol.TurnStarted](a)
	a.send(&protocol.TurnStart{RequestID: a.id(), SessionID: sid, Prompt: "two"})
	until[*protocol.QueueEnqueued](a)
	if err := d.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	evs, _ := until[*protocol.TurnCompleted](a)
	if !strings.Contains(strings.Join(evs, ""), "done") {
		t.Fatalf("the first turn did not finish:\n%s", strings.Join(evs, "\n"))
	}
	if !a.closed(15 * time.Second) {
		t.Fatal("the daemon did not close the connection for the restart")
	}
	var after daemonfile.Info
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if after, err = daemonfile.Read(home); err == nil && after.Instance != before.Instance {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not come back")
		}
	}
	if after.Pid != before.Pid {
		t.Fatalf("pid %d after the restart, want %d (a re-exec)", after.Pid, before.Pid)
	}
	if _, err := os.Stat(paths.RestartFile(home)); !os.IsNotExist(err) {
		t.Fatalf("restart.json left: %v", err)
	}
	b := dial(t, home, "b")
	b.init(protocol.Version4)
	zero := uint64(0)
	b.send(&protocol.SessionAttach{RequestID: b.id(), SessionID: sid, AfterSeq: &zero})
	_, att := until[*protocol.SessionAttached](b)
	if att.SessionID != sid {
		t.Fatalf("attached = %+v", att)
	}
	var seen []string
	if att.TurnID != "" || att.Replayed > 0 {
		more, _ := until[*protocol.TurnCompleted](b)
		seen = more
	} else {
		t.Fatalf("the queued prompt did not run after the restart: %+v", att)
	}
	if !strings.Contains(strings.Join(seen, ""), "second done") {
		t.Fatalf("the queued turn's events:\n%s", strings.Join(seen, "\n"))
	}
	if n := f.Requests(); len(n) != 2 {
		t.Fatalf("%d model requests, want 2", len(n))
	}
	last := f.Requests()[1]
	if !strings.Contains(string(last.Body), "first done") || !strings.Contains(string(last.Body), "two") {
		t.Fatalf("the resumed session lost its history: %s", last.Body)
	}
}

// TestConnectRelay: `scv-server connect` relays a client's stdio to the
// daemon; its end of input detaches the client, the session goes on, and
// the relay exits 0. Without a daemon it fails with a message.
func TestConnectRelay(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	none := exec.Command(bin, "connect")
	none.Env = []string{"SCV_HOME=" + home}
	if out, err := none.CombinedOutput(); err == nil || !strings.Contains(string(out), "scv daemon start") {
		t.Fatalf("connect without a daemon: %v\n%s", err, out)
	}
	startDaemon(t, home, nil)
	p, sid := relayedSession(t, home, ws, 3)
	if code := p.exit(); code != 0 {
		t.Fatalf("connect exited %d", code)
	}
	c := dial(t, home, "check")
	c.init(protocol.Version4)
	c.send(&protocol.SessionList{RequestID: c.id()})
	_, l := until[*protocol.SessionListed](c)
	if len(l.Live) != 1 || l.Live[0].SessionID != sid || l.Live[0].Clients != 0 {
		t.Fatalf("after the relay ended: %+v", l.Live)
	}
}

// relayedSession runs `scv-server connect` on home's daemon (logging at
// info) and starts a session in ws through it, speaking protocol version.
func relayedSession(t *testing.T, home, ws string, version int) (*proc, string) {
	t.Helper()
	p := startCmd(t, func() *exec.Cmd {
		c := exec.Command(bin, "connect")
		c.Env = []string{"SCV_HOME=" + home, "SCV_LOG_LEVEL=info"}
		return c
	}(), nil)
	p.send(&protocol.Initialize{RequestID: "i", ProtocolVersion: version, Client: protocol.ClientInfo{Name: "relayed"}})
	nextOf[*protocol.Initialized](p)
	p.send(&protocol.SessionStart{RequestID: "s", Cwd: ws})
	return p, nextOf[*protocol.SessionStarted](p).SessionID
}

// TestDaemonQueueEditsFromTwoClients: two clients edit one queued prompt
// at the same revision; the first wins, the second gets queue_conflict
// with the entry as it is now, and both see queue.updated.
func TestDaemonQueueEditsFromTwoClients(t *testing.T) {
	t.Parallel()
	f, home, ws, _ := daemonFixture(t)
	f.Enqueue(fo.Script(fo.Hang()))
	a := dial(t, home, "a")
	a.init(protocol.Version4)
	a.send(&protocol.SessionStart{RequestID: a.id(), Cwd: ws})
	_, started := until[*protocol.SessionStarted](a)
	sid := started.SessionID
	b := dial(t, home, "b")
	b.init(protocol.Version4)
	b.send(&protocol.SessionAttach{RequestID: b.id(), SessionID: sid})
	until[*protocol.SessionAttached](b)
	a.send(&protocol.TurnStart{RequestID: a.id(), SessionID: sid, Prompt: "hang"})
	_, ts := until[*protocol.TurnStarted](a)
	a.send(&protocol.TurnStart{RequestID: a.id(), SessionID: sid, Prompt: "later"})
	_, enq := until[*protocol.QueueEnqueued](a)
	until[*protocol.QueueEnqueued](b)
	a.send(&protocol.QueueUpdate{RequestID: a.id(), SessionID: sid, QueueID: enq.Entry.QueueID, Revision: enq.Entry.Revision, Prompt: "from a"})
	_, upA := until[*protocol.QueueUpdated](a)
	_, upB := until[*protocol.QueueUpdated](b)
	if upA.Seq != upB.Seq || upB.Entry.Prompt != "from a" {
		t.Fatalf("queue.updated: a %+v, b %+v", upA, upB)
	}
	b.send(&protocol.QueueUpdate{RequestID: b.id(), SessionID: sid, QueueID: enq.Entry.QueueID, Revision: enq.Entry.Revision, Prompt: "from b"})
	f2, ev := b.next()
	conflict, ok := ev.(*protocol.Error)
	if !ok || conflict.Code != protocol.ErrQueueConflict || conflict.Entry == nil || conflict.Entry.Prompt != "from a" {
		t.Fatalf("b's stale edit: %s", f2)
	}
	a.send(&protocol.TurnCancel{RequestID: a.id(), SessionID: sid, TurnID: ts.TurnID})
	until[*protocol.TurnCancelled](b)
}

// TestDaemonKilledThenNew: after a daemon is killed with SIGKILL, a new
// one starts on the same SCV_HOME (the stale socket and daemon.json do not
// stop it) and a session of the dead one resumes there.
func TestDaemonKilledThenNew(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	home, ws := t.TempDir(), t.TempDir()
	writeFakeConfig(t, home, f.URL())
	first := startDaemon(t, home, nil)
	f.Enqueue(fo.Script(fo.Text("remember 7")))
	a := dial(t, home, "a")
	a.init(protocol.Version4)
	a.send(&protocol.SessionStart{RequestID: a.id(), Cwd: ws})
	_, started := until[*protocol.SessionStarted](a)
	a.send(&protocol.TurnStart{RequestID: a.id(), SessionID: started.SessionID, Prompt: "keep this"})
	until[*protocol.TurnCompleted](a)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.exitCode()
	if _, err := os.Stat(paths.DaemonInfoFile(home)); err != nil {
		t.Fatalf("SIGKILL left no daemon.json to test with: %v", err)
	}
	startDaemon(t, home, nil)
	b := dial(t, home, "b")
	b.init(protocol.Version4)
	b.send(&protocol.SessionStart{RequestID: b.id(), Cwd: ws, Resume: started.SessionID})
	_, resumed := until[*protocol.SessionStarted](b)
	if !resumed.Resumed || resumed.SessionID != started.SessionID {
		t.Fatalf("session.started = %+v", resumed)
	}
	f.Enqueue(fo.Script(fo.Text("yes")))
	b.send(&protocol.TurnStart{RequestID: b.id(), SessionID: started.SessionID, Prompt: "what was it?"})
	until[*protocol.TurnCompleted](b)
	if reqs := f.Requests(); !strings.Contains(string(reqs[len(reqs)-1].Body), "remember 7") {
		t.Fatalf("the resumed session lost its history: %s", reqs[len(reqs)-1].Body)
	}
}

// TestDaemonKilledBashTreeReaped: a bash command of a daemon killed with
// SIGKILL keeps running (it is in a process group of its own); the next
// daemon, in its first reconcile pass at start, stops every process of
// that tree and removes its record, and counts it among the orphans.
func TestDaemonKilledBashTreeReaped(t *testing.T) {
	t.Parallel()
	f := fo.Start(t)
	home, ws := t.TempDir(), t.TempDir()
	writeFakeConfig(t, home, f.URL())
	first := startDaemon(t, home, nil, "--approval-policy", "auto")
	tagFile := filepath.Join(ws, "tag")
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "bash", `{"command":"sleep 300 & echo \"$SCV_RUN_TAG\" > tag; wait"}`)))
	a := dial(t, home, "a")
	a.init(protocol.Version4)
	a.send(&protocol.SessionStart{RequestID: a.id(), Cwd: ws})
	_, started := until[*protocol.SessionStarted](a)
	a.send(&protocol.TurnStart{RequestID: a.id(), SessionID: started.SessionID, Prompt: "run it"})
	var tag string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(tagFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			tag = string(bytes.TrimSpace(b))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bash command did not start\n%s", first.log())
		}
	}
	t.Cleanup(func() { proctag.Kill(tag) })
	trees, err := records.Trees(records.TreesDir(home))
	if err != nil || len(trees) != 1 || trees[0].Tag != tag || trees[0].Owner.PID != first.cmd.Process.Pid {
		t.Fatalf("tree records while the command runs: %+v, %v", trees, err)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.exitCode()
	if n := len(proctag.Find(tag)); n < 2 {
		t.Fatalf("the SIGKILL already ended the tree (%d processes): nothing to reap", n)
	}
	second := startDaemon(t, home, nil)
	// The reconcile kills the tree first and removes its record after, so
	// wait for both rather than reading the records the moment the
	// processes are gone.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := len(proctag.Find(tag))
		trees, err := records.Trees(records.TreesDir(home))
		if left == 0 && err == nil && len(trees) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new daemon left %d processes of the dead one's bash tree and tree records %+v (%v)\n%s", left, trees, err, second.log())
		}
	}
}

// TestConnectRelaySurvivesRestart: a v4 client on `scv-server connect`
// runs a turn and queues a prompt; a planned restart (SIGUSR2) ends the
// daemon connection, and the relay reconnects and re-attaches the session:
// the client sees the first turn end, the queued prompt run in the
// restarted daemon, with seq continuing without a gap or repeat, and can
// go on with the session; its end of input still ends the relay with 0.
func TestConnectRelaySurvivesRestart(t *testing.T) {
	t.Parallel()
	f, home, ws, d := daemonFixture(t)
	f.Enqueue(fo.Script(fo.Text("first "), fo.Delay(1500*time.Millisecond), fo.Text("done")),
		fo.Script(fo.Text("second done")), fo.Script(fo.Text("third done")))
	before, err := daemonfile.Read(home)
	if err != nil {
		t.Fatal(err)
	}
	p, sid := relayedSession(t, home, ws, 4)

	var seqs []uint64
	var text strings.Builder
	// upTo reads events to the n-th turn.completed, checking each seq.
	completed := 0
	upTo := func(n int) {
		t.Helper()
		for completed < n {
			ev := p.next()
			if s, ok := ev.(protocol.Sequenced); ok {
				if want := uint64(len(seqs) + 1); s.SeqNum() != want {
					t.Fatalf("seq %d after %v, want %d (%T)", s.SeqNum(), seqs, want, ev)
				}
				seqs = append(seqs, s.SeqNum())
			}
			switch ev := ev.(type) {
			case *protocol.AssistantCompleted:
				text.WriteString(ev.Content + "|")
			case *protocol.TurnCompleted:
				completed++
			case *protocol.Error, *protocol.TurnFailed, *protocol.TurnCancelled:
				t.Fatalf("relayed %+v", ev)
			}
		}
	}
	p.send(&protocol.TurnStart{RequestID: "t1", SessionID: sid, Prompt: "one"})
	p.send(&protocol.TurnStart{RequestID: "t2", SessionID: sid, Prompt: "two"})
	for len(seqs) < 3 { // the snapshot, turn.started, and the queued prompt
		if s, ok := p.next().(protocol.Sequenced); ok {
			seqs = append(seqs, s.SeqNum())
		}
	}
	if err := d.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	upTo(2)
	after, err := daemonfile.Read(home)
	if err != nil || after.Instance == before.Instance {
		t.Fatalf("the second turn ran without a restart: %+v %v", after, err)
	}
	// The session is attached on the relay's new connection.
	p.send(&protocol.TurnStart{RequestID: "t3", SessionID: sid, Prompt: "three"})
	upTo(3)
	if got := text.String(); got != "first done|second done|third done|" {
		t.Fatalf("replies %q", got)
	}
	if code := p.exit(); code != 0 {
		t.Fatalf("connect exited %d", code)
	}
	if !strings.Contains(p.stderr.String(), "Reconnected to the daemon") {
		t.Fatalf("the relay did not say it reconnected:\n%s", p.stderr.String())
	}
}
