package main_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/daemonfile"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit"
)

// TestDaemonCommands drives scv daemon start, status, restart, stop and
// install against the real scv-server daemon on a temporary SCV_HOME.
func TestDaemonCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	killDaemonAtEnd(t, home)
	r := runSCV(t, home, "daemon", "status")
	if r.code != 4 || !strings.Contains(r.stdout, "No daemon is running") {
		t.Fatalf("status without a daemon: %+v", r)
	}
	r = runSCV(t, home, "daemon", "start")
	if r.code != 0 || !strings.Contains(r.stdout, "Started the daemon (pid ") {
		t.Fatalf("start: %+v", r)
	}
	info, err := daemonfile.Read(home)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.stdout, fmt.Sprintf("pid %d", info.Pid)) {
		t.Fatalf("start named another pid than daemon.json's %d: %s", info.Pid, r.stdout)
	}
	r = runSCV(t, home, "daemon", "start")
	if r.code != 0 || !strings.Contains(r.stdout, "already runs") {
		t.Fatalf("second start: %+v", r)
	}
	r = runSCV(t, home, "daemon", "status")
	for _, want := range []string{fmt.Sprintf("pid %d", info.Pid), "socket    " + info.Socket, "clients   0", "sessions  0"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("status lacks %q: %+v", want, r)
		}
	}
	r = runSCV(t, home, "daemon", "status", "--json")
	var st struct {
		Running bool `json:"running"`
		Pid     int  `json:"pid"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || !st.Running || st.Pid != info.Pid {
		t.Fatalf("status --json: %v %+v", err, r)
	}
	r = runSCV(t, home, "daemon", "restart", "--force")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("Restarted the daemon (pid %d", info.Pid)) {
		t.Fatalf("restart: %+v", r)
	}
	next, err := daemonfile.Read(home)
	if err != nil || next.Instance == info.Instance {
		t.Fatalf("daemon.json after the restart: %+v, %v", next, err)
	}
	r = runSCV(t, home, "daemon", "stop")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("Stopped the daemon (pid %d)", info.Pid)) {
		t.Fatalf("stop: %+v", r)
	}
	if daemonfile.Alive(info.Pid) {
		t.Fatalf("pid %d still runs after stop", info.Pid)
	}
	r = runSCV(t, home, "daemon", "status")
	if r.code != 4 {
		t.Fatalf("status after stop: %+v", r)
	}
	r = runSCV(t, home, "daemon", "stop")
	if r.code != 0 || !strings.Contains(r.stdout, "No daemon is running") {
		t.Fatalf("stop without a daemon: %+v", r)
	}
}

// TestTopLevelDaemonCommands drives scv start, status, restart and stop
// (the top-level names of scv daemon ...), with delegation records on
// disk: status lists the live ones as scv agents ps does (running, idle)
// and counts the orphan the daemon's first reconcile stopped.
func TestTopLevelDaemonCommands(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	killDaemonAtEnd(t, home)
	self, err := records.Self()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	gone := records.Process{PID: self.PID, StartTime: self.StartTime + 1} // a reused pid: not the owner
	for _, r := range []records.Record{
		{Handle: "codex-aaaaaa", Agent: "codex", Session: "s-run", Cwd: "/tmp/run", Owner: self, StartedUnix: now - 90},
		{Handle: "scv-bbbbbb", Agent: "scv", Session: "s-idle", Cwd: "/tmp/idle", Owner: self, StartedUnix: now - 30,
			Conversation: "scv-1", Turn: 2, IdleSinceUnix: now - 5},
		{Handle: "claude-cccccc", Agent: "claude", Session: "s-orphan", Cwd: "/tmp/orphan", Owner: gone, StartedUnix: now - 600},
	} {
		if err := records.Write(home, r); err != nil {
			t.Fatal(err)
		}
	}
	r := runSCV(t, home, "status")
	if r.code != 4 || !strings.Contains(r.stdout, "No daemon is running (start one with `scv start`)") {
		t.Fatalf("status without a daemon: %+v", r)
	}
	r = runSCV(t, home, "start")
	if r.code != 0 || !strings.Contains(r.stdout, "Started the daemon (pid ") {
		t.Fatalf("start: %+v", r)
	}
	info, err := daemonfile.Read(home)
	if err != nil {
		t.Fatal(err)
	}
	// The first reconcile runs as the daemon starts; wait for its count.
	var st struct {
		Running        bool  `json:"running"`
		Pid            int   `json:"pid"`
		OrphansStopped int64 `json:"orphans_stopped"`
		Delegations    []struct {
			Handle string `json:"handle"`
			Agent  string `json:"agent"`
			State  string `json:"state"`
			Turn   int    `json:"turn"`
		} `json:"delegations"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r = runSCV(t, home, "status", "--json")
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || r.code != 0 {
			t.Fatalf("status --json: %v %+v", err, r)
		}
		if st.OrphansStopped == 1 || time.Now().After(deadline) {
			break
		}
	}
	if !st.Running || st.Pid != info.Pid || st.OrphansStopped != 1 {
		t.Fatalf("status --json: %+v\n%s", st, r.stdout)
	}
	got := map[string]string{}
	for _, d := range st.Delegations {
		got[d.Handle] = d.State
	}
	if len(got) != 2 || got["codex-aaaaaa"] != "running" || got["scv-bbbbbb"] != "idle" {
		t.Fatalf("status --json delegations = %v, want codex-aaaaaa running and scv-bbbbbb idle (no orphan)\n%s", got, r.stdout)
	}
	if _, err := records.Read(home, "claude-cccccc"); err == nil {
		t.Fatal("the orphan's record survived the daemon's reconcile")
	}
	// An orphan that appears between reconciles (every 60 s) is left out
	// of the list, as scv agents ps without --all leaves it out.
	if err := records.Write(home, records.Record{Handle: "claude-dddddd", Agent: "claude", Owner: gone, StartedUnix: now}); err != nil {
		t.Fatal(err)
	}
	r = runSCV(t, home, "status")
	for _, want := range []string{fmt.Sprintf("pid %d", info.Pid), "orphans   1 stopped", "agents    1 running, 1 idle",
		"codex-aaaaaa  codex  session s-run  running", "scv-bbbbbb  scv  session s-idle  scv-1 turn 2  idle"} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("status lacks %q: %+v", want, r)
		}
	}
	if strings.Contains(r.stdout, "claude-") {
		t.Fatalf("status lists the orphan: %s", r.stdout)
	}
	r = runSCV(t, home, "restart", "--force")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("Restarted the daemon (pid %d", info.Pid)) {
		t.Fatalf("restart: %+v", r)
	}
	r = runSCV(t, home, "stop")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("Stopped the daemon (pid %d)", info.Pid)) {
		t.Fatalf("stop: %+v", r)
	}
	if r = runSCV(t, home, "status"); r.code != 4 {
		t.Fatalf("status after stop: %+v", r)
	}
}

// TestDaemonRefusedToDelegatedRuns: a delegated run may not manage the
// daemon.
func TestDaemonRefusedToDelegatedRuns(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, args := range [][]string{{"daemon", "start"}, {"daemon", "stop"}, {"daemon", "restart"}, {"daemon", "run"}, {"daemon", "install"}, {"update"},
		{"start"}, {"stop"}, {"restart"}, {"restart", "--force"}} {
		sub := strings.Join(args, " ")
		cmd := scvCmd(t.Context(), home, args...)
		cmd.Env = append(cmd.Env, "SCV_DELEGATION_DEPTH=1")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "a delegated run may not") {
			t.Errorf("scv %s in a delegated run: %v\n%s", sub, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "run", "daemon.json")); err == nil {
		t.Fatal("a daemon started anyway")
	}
}

// TestDaemonInstallWritesUnit: install --no-enable writes a unit with
// absolute paths and SCV_HOME, since a service manager loads no profile.
func TestDaemonInstallWritesUnit(t *testing.T) {
	t.Parallel()
	home, xdg := t.TempDir(), t.TempDir()
	cmd := scvCmd(t.Context(), home, "daemon", "install", "--no-enable")
	cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+xdg)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	unit, err := os.ReadFile(filepath.Join(xdg, "systemd", "user", "scv.service"))
	if err != nil {
		t.Fatal(err)
	}
	server := filepath.Join(filepath.Dir(scvBin), "scv-server")
	for _, want := range []string{"ExecStart=" + server + " daemon\n", "Environment=SCV_HOME=" + home + "\n", "EnvironmentFile=-" + filepath.Join(home, "daemon.env")} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("the unit lacks %q:\n%s", want, unit)
		}
	}
	cmd = scvCmd(t.Context(), home, "daemon", "uninstall")
	cmd.Env = append(cmd.Env, "XDG_CONFIG_HOME="+xdg)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Removed") {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
}

// TestExecInDaemon: scv exec --daemon runs its turn in the running daemon,
// whose session stays open after the run; without a daemon it runs in a
// server of its own.
func TestExecInDaemon(t *testing.T) {
	t.Parallel()
	home, ws := t.TempDir(), t.TempDir()
	killDaemonAtEnd(t, home)
	r := runSCV(t, home, "exec", "--daemon", "--cd", ws, "hello")
	if r.code != 0 || r.stdout == "" {
		t.Fatalf("exec --daemon without a daemon: %+v", r)
	}
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte("[daemon]\nuse = \"always\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runSCV(t, home, "exec", "--cd", ws, "hello")
	if r.code != 1 || !strings.Contains(r.stderr, `daemon.use is "always", but no daemon is running`) || !strings.Contains(r.stderr, "scv daemon start") {
		t.Fatalf("daemon.use = always without a daemon: %+v", r)
	}
	if r = runSCV(t, home, "exec", "--no-daemon", "--cd", ws, "hello"); r.code != 0 {
		t.Fatalf("--no-daemon overriding always: %+v", r)
	}
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	if r := runSCV(t, home, "daemon", "start"); r.code != 0 {
		t.Fatalf("start: %+v", r)
	}
	r = runSCV(t, home, "exec", "--daemon", "--cd", ws, "hello")
	if r.code != 0 || r.stdout == "" {
		t.Fatalf("exec --daemon: %+v", r)
	}
	r = runSCV(t, home, "daemon", "status", "--json")
	var st struct {
		Sessions []struct {
			Cwd     string `json:"cwd"`
			Clients int    `json:"clients"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	real, _ := filepath.EvalSymlinks(ws)
	if len(st.Sessions) != 1 || st.Sessions[0].Cwd != real || st.Sessions[0].Clients != 0 {
		t.Fatalf("the exec's session is not live in the daemon: %+v", st)
	}
	// --continue continues the workspace's newest session, open in the
	// daemon: it attaches to it rather than starting or resuming one.
	r = runSCV(t, home, "exec", "--daemon", "--continue", "--cd", ws, "again")
	if r.code != 0 || !strings.Contains(r.stderr, "open in the daemon") || !strings.Contains(r.stdout, `You said: "again"`) {
		t.Fatalf("--daemon --continue: %+v", r)
	}
	live := func() int {
		t.Helper()
		r := runSCV(t, home, "daemon", "status", "--json")
		st.Sessions = nil
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status --json: %v\n%s", err, r.stdout)
		}
		return len(st.Sessions)
	}
	// daemon.use defaults to auto: a plain exec runs in the running
	// daemon; --no-daemon does not.
	if r = runSCV(t, home, "exec", "--cd", ws, "hello"); r.code != 0 {
		t.Fatalf("exec with daemon.use = auto: %+v", r)
	}
	if n := live(); n != 2 {
		t.Fatalf("after an exec under daemon.use = auto the daemon has %d live sessions, want 2", n)
	}
	if r = runSCV(t, home, "exec", "--no-daemon", "--cd", ws, "hello"); r.code != 0 {
		t.Fatalf("exec --no-daemon: %+v", r)
	}
	if n := live(); n != 2 {
		t.Fatalf("exec --no-daemon ran in the daemon: %d live sessions", n)
	}
	// --approval-policy runs in the daemon too, as the policy of the
	// run's own session: auto runs the demo's bash call unasked, where
	// the daemon's on-risk would have denied it (no terminal).
	if r = runSCV(t, home, "exec", "--approval-policy", "auto", "--cd", ws, "hello"); r.code != 0 ||
		!strings.Contains(r.stdout, "The call ran.") || strings.Contains(r.stderr, "denied") {
		t.Fatalf("exec --approval-policy auto in the daemon: %+v", r)
	}
	if n := live(); n != 3 {
		t.Fatalf("exec --approval-policy did not run in the daemon: %d live sessions", n)
	}
	// It may not change the policy of a session open there.
	if r = runSCV(t, home, "exec", "--continue", "--approval-policy", "never", "--cd", ws, "again"); r.code != 1 ||
		!strings.Contains(r.stderr, "under its own approval policy") {
		t.Fatalf("exec --continue --approval-policy of an open session: %+v", r)
	}
	// A stored session that is not open in the daemon is resumed there.
	ws2 := t.TempDir()
	if r = runSCV(t, home, "exec", "--no-daemon", "--cd", ws2, "hello"); r.code != 0 {
		t.Fatalf("exec --no-daemon: %+v", r)
	}
	r = runSCV(t, home, "exec", "--continue", "--cd", ws2, "again")
	if r.code != 0 || !strings.Contains(r.stderr, "continuing the session of") || strings.Contains(r.stderr, "open in the daemon") {
		t.Fatalf("exec --continue of a stored session in the daemon: %+v", r)
	}
	if n := live(); n != 4 {
		t.Fatalf("the resumed session is not open in the daemon: %d live sessions", n)
	}
	if r := runSCV(t, home, "daemon", "stop"); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
}

// TestUpdateRestartsOntoInstalledServer: a daemon runs scv-server at a
// path; a build of another version replaces the file there; scv update
// restarts the daemon (same pid) onto it, and says so. With the versions
// equal it does nothing.
func TestUpdateRestartsOntoInstalledServer(t *testing.T) {
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	killDaemonAtEnd(t, home)
	server := filepath.Join(dir, "scv-server")
	copyFile(t, filepath.Join(filepath.Dir(scvBin), "scv-server"), server)
	withServer := func(args ...string) result {
		t.Helper()
		cmd := scvCmd(t.Context(), home, args...)
		cmd.Env = append(cmd.Env, "SCV_SERVER_BIN="+server)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
	}
	if r := withServer("daemon", "start"); r.code != 0 {
		t.Fatalf("start: %+v", r)
	}
	before, err := daemonfile.Read(home)
	if err != nil {
		t.Fatal(err)
	}
	if r := withServer("update"); r.code != 0 || !strings.Contains(r.stdout, "already runs version "+before.Version) {
		t.Fatalf("update with the same version: %+v", r)
	}
	// Install another version over the running one's file, as a package
	// manager does (a new file renamed into place).
	next := filepath.Join(dir, "scv-server.new")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", "-X github.com/scv-cli/scv/shared/version.Version=9.9.9-test", "-o", next, ".")
	build.Dir = "../scv-server"
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the new version: %v\n%s", err, out)
	}
	if err := os.Rename(next, server); err != nil {
		t.Fatal(err)
	}
	r := withServer("update", "--force")
	if r.code != 0 || !strings.Contains(r.stdout, "Updated the daemon from version "+before.Version+" to 9.9.9-test (pid "+fmt.Sprint(before.Pid)+")") {
		t.Fatalf("update: %+v", r)
	}
	if r := withServer("daemon", "stop"); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestExecThroughPlannedRestart: scv exec runs a turn in the daemon; scv
// restart (without --force) during the turn waits for it, so exec prints
// the whole reply and exits 0, and the daemon comes back (same pid, a new
// instance) with the session open.
func TestExecThroughPlannedRestart(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.Start(t)
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("first "), fakeopenai.Delay(2*time.Second), fakeopenai.Text("done")))
	home, ws := fakeHome(t, srv), t.TempDir()
	killDaemonAtEnd(t, home)
	if r := runSCV(t, home, "start"); r.code != 0 {
		t.Fatalf("start: %+v", r)
	}
	before, err := daemonfile.Read(home)
	if err != nil {
		t.Fatal(err)
	}
	cmd := scvCmd(t.Context(), home, "exec", "--daemon", "--cd", ws, "go")
	var stdout, stderr testkit.Buffer // read while exec writes
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Restart once the turn runs in the daemon.
	var st struct {
		Sessions []struct {
			TurnID string `json:"turn_id"`
		} `json:"sessions"`
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := runSCV(t, home, "status", "--json")
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status --json: %v %+v", err, r)
		}
		if len(st.Sessions) == 1 && st.Sessions[0].TurnID != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no turn ran in the daemon; exec's stderr:\n%s", stderr.String())
		}
	}
	r := runSCV(t, home, "restart")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("Restarted the daemon (pid %d", before.Pid)) ||
		!strings.Contains(r.stderr, "Waiting for running turns to finish") {
		t.Fatalf("restart: %+v", r)
	}
	select {
	case err := <-exited:
		if err != nil || stdout.String() != "first done\n" {
			t.Fatalf("exec through the restart: %v, stdout %q, stderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("exec did not end after the restart; stderr:\n%s", stderr.String())
	}
	after, err := daemonfile.Read(home)
	if err != nil || after.Instance == before.Instance || after.Pid != before.Pid {
		t.Fatalf("daemon.json after the restart: %+v, %v (before %+v)", after, err, before)
	}
	r = runSCV(t, home, "status", "--json")
	st.Sessions = nil
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Sessions) != 1 {
		t.Fatalf("the session is not open after the restart: %v\n%s", err, r.stdout)
	}

	// restart --force does not wait: exec's connection ends mid-turn.
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("second "), fakeopenai.Delay(5*time.Second), fakeopenai.Text("never")))
	cmd = scvCmd(t.Context(), home, "exec", "--daemon", "--cd", ws, "again")
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { exited <- cmd.Wait() }()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		r := runSCV(t, home, "status", "--json")
		st.Sessions = nil
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("status --json: %v %+v", err, r)
		}
		// Restart once the turn's first text reached exec: what it printed
		// before the restart is what the test can expect on stdout.
		if len(st.Sessions) == 2 && (st.Sessions[0].TurnID != "" || st.Sessions[1].TurnID != "") && stdout.String() == "second " {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second turn did not run in the daemon; exec's stderr:\n%s", stderr.String())
		}
	}
	if r := runSCV(t, home, "restart", "--force"); r.code != 0 {
		t.Fatalf("restart --force: %+v", r)
	}
	// exec re-attaches to its session in the restarted daemon, which has
	// cancelled the turn (a forced restart does not wait for it, and the
	// next daemon does not run it again): it says so and exits 1.
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "re-attaching to session ") ||
			!strings.Contains(stderr.String(), "the daemon restarted before the turn ended and cancelled it") || stdout.String() != "second \n" {
			t.Fatalf("exec through restart --force: %v, stdout %q, stderr:\n%s", err, stdout.String(), stderr.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("exec did not end after restart --force; stderr:\n%s", stderr.String())
	}
	if r := runSCV(t, home, "stop"); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
}

// TestExecQueuedPromptSurvivesRestart: one exec's turn runs in the
// daemon; a second exec continues the same (open) session, so its prompt
// is queued; scv restart waits for the first turn, keeps the queue, and
// the second exec re-attaches to the session in the restarted daemon and
// prints its reply, once, exiting 0.
func TestExecQueuedPromptSurvivesRestart(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.Start(t)
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("first "), fakeopenai.Delay(2*time.Second), fakeopenai.Text("done")),
		fakeopenai.Script(fakeopenai.Text("second "), fakeopenai.Text("reply")))
	home, ws := fakeHome(t, srv), t.TempDir()
	killDaemonAtEnd(t, home)
	if r := runSCV(t, home, "start"); r.code != 0 {
		t.Fatalf("start: %+v", r)
	}
	type run struct {
		stdout, stderr strings.Builder
		exited         chan error
	}
	start := func(args ...string) *run {
		r := &run{exited: make(chan error, 1)}
		cmd := scvCmd(t.Context(), home, append([]string{"exec", "--cd", ws}, args...)...)
		cmd.Stdout, cmd.Stderr = &r.stdout, &r.stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { r.exited <- cmd.Wait() }()
		return r
	}
	var st struct {
		Sessions []struct {
			TurnID string `json:"turn_id"`
			Queued int    `json:"queued"`
		} `json:"sessions"`
	}
	waitStatus := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			r := runSCV(t, home, "status", "--json")
			st.Sessions = nil
			if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
				t.Fatalf("status --json: %v %+v", err, r)
			}
			if len(st.Sessions) == 1 && ok() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: status %s", what, r.stdout)
			}
		}
	}
	first := start("one")
	waitStatus("the first turn did not run", func() bool { return st.Sessions[0].TurnID != "" })
	second := start("--continue", "two")
	waitStatus("the second prompt was not queued", func() bool { return st.Sessions[0].Queued == 1 })
	if r := runSCV(t, home, "restart"); r.code != 0 {
		t.Fatalf("restart: %+v", r)
	}
	for name, c := range map[string]struct {
		r    *run
		want string
	}{"first": {first, "first done\n"}, "second": {second, "second reply\n"}} {
		select {
		case err := <-c.r.exited:
			if err != nil || c.r.stdout.String() != c.want {
				t.Fatalf("%s exec through the restart: %v, stdout %q, want %q; stderr:\n%s", name, err, c.r.stdout.String(), c.want, c.r.stderr.String())
			}
		case <-time.After(40 * time.Second):
			t.Fatalf("%s exec did not end after the restart; stderr:\n%s", name, c.r.stderr.String())
		}
	}
	if !strings.Contains(second.stderr.String(), "open in the daemon") || !strings.Contains(second.stderr.String(), "re-attaching to session ") {
		t.Fatalf("the second exec did not continue the open session and re-attach: %s", second.stderr.String())
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("%d model requests, want 2 (the queued prompt ran once)", n)
	}
	if r := runSCV(t, home, "stop"); r.code != 0 {
		t.Fatalf("stop: %+v", r)
	}
}

// killDaemonAtEnd kills the daemon of home, if one runs, when the test
// ends: a failed test must not leave it behind.
func killDaemonAtEnd(t *testing.T, home string) {
	t.Cleanup(func() {
		if info, err := daemonfile.Read(home); err == nil {
			_ = syscall.Kill(info.Pid, syscall.SIGKILL)
		}
	})
}
