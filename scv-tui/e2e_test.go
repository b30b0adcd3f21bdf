package main_test

// End-to-end tests of the terminal UI: the real scv, scv-server and scv-tui
// are built side by side, and `scv` (no arguments, so it execs scv-tui) runs
// in a tmux pane against a scripted OpenAI-compatible server on loopback.
// The tests type with tmux send-keys and read the screen with capture-pane,
// polling until the expected text appears (a generous deadline is only the
// failure bound). They need tmux: scripts/deps.sh installs it; without it
// they are skipped, except under CI, where that is a failure.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit"
	"github.com/scv-cli/scv/shared/testkit/bins"
	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-tui/internal/ui/shot"
)

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// binaries returns the directory of the built scv, scv-server and
// scv-tui (testkit/bins), or fails the test.
func binaries(t *testing.T) string {
	t.Helper()
	dir, err := bins.Build("scv-server", "scv-tui", "scv")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

// needTmux skips the test when tmux is missing, except under CI.
func needTmux(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is not installed; CI must run scripts/deps.sh before the tests")
		}
		t.Skip("tmux is not installed, so the terminal UI cannot be driven; scripts/deps.sh installs it")
	}
}

// scvAgainst starts the fake model with replies queued and `scv` in a new
// workspace against it, in a tmux pane whose environment gains env, and
// waits until the UI is connected. It returns the pane, the model, the
// SCV_HOME and the workspace.
func scvAgainst(t *testing.T, env []string, replies ...fakeopenai.Reply) (*term, *fakeopenai.Server, string, string) {
	t.Helper()
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	srv.Enqueue(replies...)
	home, ws := fakeHome(t, srv), t.TempDir()
	tm := startTerm(t, ws, home, env, filepath.Join(bin, "scv"))
	tm.waitText("fake-model", "Ask anything")
	return tm, srv, home, ws
}

// fakeHome writes a config.toml pointing scv-server at srv.
func fakeHome(t *testing.T, srv *fakeopenai.Server) string {
	t.Helper()
	home := t.TempDir()
	cfg := srv.Config("")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// term is a tmux server with one pane running a program.
type term struct {
	t      *testing.T
	socket string
	home   string // SCV_HOME
	done   string // the marker the pane prints when the program has exited
}

var socketSeq int

// startTerm runs program in a new 100x30 tmux pane in dir, with a clean
// environment plus env. When the program exits the pane prints its exit
// status and whether the terminal modes are as they were before it.
func startTerm(t *testing.T, dir, home string, env []string, program string) *term {
	t.Helper()
	return startTermStyled(t, dir, home, env, program, "")
}

// startTermStyled is startTerm in a terminal whose default colours are
// style (tmux's window-style, such as "bg=#fafafa,fg=#1a1b26"): tmux
// answers a program's OSC 11 query with that background, as a terminal
// of that colour does.
func startTermStyled(t *testing.T, dir, home string, env []string, program, style string, progArgs ...string) *term {
	t.Helper()
	return startTermAt(t, 100, 30, dir, home, env, program, style, progArgs...)
}

// startTermAt is startTermStyled in a pane of cols x rows from the start,
// so the program's first frame is drawn at that size.
func startTermAt(t *testing.T, cols, rows int, dir, home string, env []string, program, style string, progArgs ...string) *term {
	t.Helper()
	socketSeq++
	tm := &term{t: t, socket: fmt.Sprintf("scv-e2e-%d-%d", os.Getpid(), socketSeq), home: home, done: "scv-e2e-exit="}
	script := `before=$(stty -g); "$0" "$@"; code=$?; after=$(stty -g)
if [ "$before" = "$after" ]; then echo tty-modes-restored; else echo tty-modes-changed; fi
echo "scv-e2e-exit=$code"
exec sleep 3600`
	args := []string{"-u", "-f", "/dev/null", "-L", tm.socket}
	if style != "" {
		args = append(args, "start-server", ";", "set-option", "-g", "window-style", style, ";")
	}
	args = append(args, "new-session", "-d", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), "-s", "e2e", "-c", dir,
		"env", "-i", "PATH="+os.Getenv("PATH"), "HOME="+home, "TERM=xterm-256color", "LANG=C.UTF-8", "SCV_HOME="+home)
	args = append(args, env...)
	args = append(append(args, "sh", "-c", script, program), progArgs...)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		t.Fatalf("starting tmux: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screen at the end:\n%s", tm.screen())
			if log, err := os.ReadFile(filepath.Join(home, "logs", "tui-server.log")); err == nil {
				t.Logf("tui-server.log:\n%s", log)
			}
		}
		_ = exec.Command("tmux", "-L", tm.socket, "kill-server").Run()
	})
	return tm
}

func (tm *term) tmux(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tm.socket}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// keys sends tmux key names (Enter, Escape, C-c, Tab...).
func (tm *term) keys(keys ...string) {
	tm.t.Helper()
	tm.tmux(append([]string{"send-keys", "-t", "e2e"}, keys...)...)
}

// typeText types s literally.
func (tm *term) typeText(s string) {
	tm.t.Helper()
	tm.tmux("send-keys", "-t", "e2e", "-l", s)
}

// screen returns what the pane shows.
func (tm *term) screen() string {
	// -J joins the lines the terminal wrapped.
	out, err := exec.Command("tmux", "-L", tm.socket, "capture-pane", "-p", "-J", "-t", "e2e").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(capture-pane failed: %v: %s)", err, out)
	}
	return string(out)
}

// deadline bounds every wait; the machine may be slow and busy.
const deadline = 60 * time.Second

// waitFor polls the screen until cond holds.
func (tm *term) waitFor(what string, cond func(screen string) bool) string {
	tm.t.Helper()
	end := time.Now().Add(deadline)
	for {
		s := tm.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(end) {
			tm.t.Fatalf("waited %s for %s; the screen:\n%s", deadline, what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitText waits until every one of texts is on the screen.
func (tm *term) waitText(texts ...string) string {
	tm.t.Helper()
	return tm.waitFor(fmt.Sprintf("%q", texts), func(s string) bool {
		for _, x := range texts {
			if !onScreen(s, x) {
				return false
			}
		}
		return true
	})
}

// onScreen reports whether text is on the screen s, where the UI may have
// wrapped it: runs of white space, line ends included, match each other.
func onScreen(s, text string) bool {
	return strings.Contains(strings.Join(strings.Fields(s), " "), strings.Join(strings.Fields(text), " "))
}

// quit sends /quit and expects the program to end with status 0, the
// terminal restored.
func (tm *term) quit() {
	tm.t.Helper()
	tm.submit("/quit")
	if code := tm.exitCode(); code != 0 {
		tm.t.Errorf("exit code %d after /quit, want 0", code)
	}
}

// waitGone waits until text is no longer on the screen.
func (tm *term) waitGone(text string) string {
	tm.t.Helper()
	return tm.waitFor(fmt.Sprintf("%q to go away", text), func(s string) bool { return !onScreen(s, text) })
}

// exitCode waits for the program to end and returns its exit status,
// failing when the terminal modes were not restored.
func (tm *term) exitCode() int {
	tm.t.Helper()
	s := tm.waitText(tm.done)
	m := regexp.MustCompile(`scv-e2e-exit=(\d+)`).FindStringSubmatch(s)
	if m == nil {
		tm.t.Fatalf("no exit status on the screen:\n%s", s)
	}
	if !strings.Contains(s, "tty-modes-restored") {
		tm.t.Errorf("the terminal modes were not restored:\n%s", s)
	}
	// Back on the main screen, cursor shown, mouse reporting off.
	if got := strings.TrimSpace(tm.tmux("display-message", "-p", "-t", "e2e", "#{alternate_on} #{cursor_flag} #{mouse_any_flag}")); got != "0 1 0" {
		tm.t.Errorf("alternate screen, cursor, mouse = %q, want \"0 1 0\"", got)
	}
	code, _ := strconv.Atoi(m[1])
	return code
}

// serverPIDs returns the pids of the scv-server processes the TUI started
// and whether the log says each exited, from the TUI's log.
func serverPIDs(t *testing.T, home string) (started []int, exited map[int]string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(home, "logs", "tui-server.log"))
	if err != nil {
		t.Fatal(err)
	}
	exited = map[int]string{}
	for _, m := range regexp.MustCompile(`started \S+ --stdio in .* \(pid (\d+)\)`).FindAllSubmatch(log, -1) {
		pid, _ := strconv.Atoi(string(m[1]))
		started = append(started, pid)
	}
	for _, m := range regexp.MustCompile(`scv-server \(pid (\d+)\) (.*)`).FindAllSubmatch(log, -1) {
		pid, _ := strconv.Atoi(string(m[1]))
		exited[pid] = string(m[2])
	}
	return started, exited
}

// assertServerGone checks that every server the TUI started has exited and
// that the last one exited cleanly (status 0: its stdin was closed).
func assertServerGone(t *testing.T, home string) {
	t.Helper()
	started, exited := serverPIDs(t, home)
	if len(started) == 0 {
		t.Fatal("the log names no server process")
	}
	for _, pid := range started {
		if _, ok := exited[pid]; !ok {
			t.Errorf("the log does not record the exit of server pid %d", pid)
		}
		if err := syscall.Kill(pid, 0); err == nil {
			// A zombie is reaped by init soon; a live process is a leak.
			if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !bytes.Contains(st, []byte(") Z ")) {
				t.Errorf("server pid %d is still running", pid)
			}
		}
	}
	if last := started[len(started)-1]; exited[last] != "exited with status 0" {
		t.Errorf("the last server %s, want a clean exit with status 0", exited[last])
	}
}

// promptsSent returns the last user message of every request the fake
// provider got, in order.
func promptsSent(srv *fakeopenai.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		for i := len(r.Messages) - 1; i >= 0; i-- {
			if r.Messages[i].Role == "user" {
				out = append(out, r.Messages[i].Content)
				break
			}
		}
	}
	return out
}

// waitRequests waits for the fake provider to have n requests.
func waitRequests(t *testing.T, srv *fakeopenai.Server, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if _, err := srv.WaitRequests(ctx, n); err != nil {
		t.Fatalf("waiting for %d provider requests: %v (got %d)", n, err, len(srv.Requests()))
	}
}

// submit types a line into the editor and sends it.
func (tm *term) submit(line string) {
	tm.t.Helper()
	tm.typeText(line)
	tm.waitText(line)
	tm.keys("Enter")
}

// idleLine is the status bar of a connected session with no turn running.
var idleLine = regexp.MustCompile(`(?m)^\s*idle · `)

// waitIdle waits until no turn runs and nothing is queued.
func (tm *term) waitIdle() {
	tm.t.Helper()
	tm.waitFor("the session to be idle", func(s string) bool { return idleLine.MatchString(s) && !strings.Contains(s, "Queued (") })
}

// TestE2ETUI is one session through `scv`: a streamed reply, an approved
// and a denied bash call, two prompts queued behind a slow turn and
// reordered, the slow turn cancelled with Esc, /clear, and /quit.
func TestE2ETUI(t *testing.T) {
	tm, srv, home, ws := scvAgainst(t, nil,
		// 1: a streamed reply.
		fakeopenai.Script(fakeopenai.Text("Hello", " from", " the fake."), fakeopenai.Usage(20, 5)),
		// 2, 3: a bash call the user approves, then the answer.
		fakeopenai.Script(fakeopenai.ToolCall("call_a", "bash", `{"command":"echo $((40+2))-approved"}`)),
		fakeopenai.Script(fakeopenai.Text("Approved and ran it.")),
		// 4, 5: a bash call the user denies, then the answer.
		fakeopenai.Script(fakeopenai.ToolCall("call_d", "bash", `{"command":"echo $((6*7))-denied"}`)),
		fakeopenai.Script(fakeopenai.Text("Understood, not running it.")),
		// 6: a slow turn, cancelled.
		fakeopenai.Script(fakeopenai.Text("Working slowly"), fakeopenai.Hang()),
		// 7, 8: the two queued prompts, in the order the user chose.
		fakeopenai.Script(fakeopenai.Text("Reply to the second.")),
		fakeopenai.Script(fakeopenai.Text("Reply to the first.")),
		// 9: after /clear.
		fakeopenai.Script(fakeopenai.Text("A fresh start.")),
	)
	bin := binaries(t)

	tm.submit("say hello")
	tm.waitText("Hello from the fake.")
	tm.waitIdle()

	// Approve a bash call: its output shows.
	tm.submit("run the approved command")
	tm.waitText("Allow bash?", "echo $((40+2))-approved")
	tm.keys("y")
	tm.waitText("42-approved", "Approved and ran it.")
	tm.waitIdle()

	// Deny one: it never runs, and the model hears so.
	tm.submit("run the denied command")
	tm.waitText("Allow bash?", "echo $((6*7))-denied")
	tm.keys("n")
	s := tm.waitText("Understood, not running it.")
	if strings.Contains(s, "42-denied") {
		t.Errorf("the denied command ran:\n%s", s)
	}
	tm.waitIdle()
	if reqs := srv.Requests(); len(reqs) >= 5 {
		var tool string
		for _, m := range reqs[4].Messages {
			if m.Role == "tool" {
				tool = m.Content
			}
		}
		if !strings.Contains(strings.ToLower(tool), "denied") {
			t.Errorf("the model was told %q about the denied call, want a denial", tool)
		}
	}

	// A slow turn; two prompts queue behind it and are reordered.
	tm.submit("take your time")
	tm.waitText("Working slowly▍") // streaming: the reply's cursor is still there
	tm.submit("first queued")
	tm.waitText("1. first queued")
	tm.submit("second queued")
	tm.waitText("Queued (2)", "2. second queued")
	tm.keys("Tab")
	tm.waitText("▸ 1. first queued")
	tm.keys("j")
	tm.waitText("▸ 2. second queued")
	tm.keys("K") // the panel's hint: K/J move up/down
	tm.waitText("1. second queued", "2. first queued")
	tm.keys("Escape") // leave the queue panel

	// Esc cancels the slow turn and pauses the queue; resumed (Tab, p),
	// the queue runs in its new order.
	tm.waitGone("K/J move")
	tm.keys("Escape")
	tm.waitText("The turn was cancelled.", "paused: no prompt starts until you resume")
	time.Sleep(300 * time.Millisecond) // a queue that was not paused would start now
	if n := len(srv.Requests()); n != 6 {
		t.Fatalf("the paused queue sent %d requests, want 6 until resumed", n)
	}
	tm.keys("Tab")
	tm.keys("p")
	tm.waitText("Reply to the second.", "Reply to the first.")
	waitRequests(t, srv, 8)
	if got := promptsSent(srv)[6:8]; got[0] != "second queued" || got[1] != "first queued" {
		t.Errorf("the queued prompts reached the model as %q, want the second first", got)
	}

	// /clear empties the view and the model's history.
	tm.waitIdle()
	tm.submit("/clear")
	tm.waitText("The conversation was cleared")
	tm.waitGone("Hello from the fake.")
	tm.submit("after the clear")
	tm.waitText("A fresh start.")
	tm.waitIdle()
	waitRequests(t, srv, 9)
	for _, m := range srv.Requests()[8].Messages {
		if m.Role == "user" && m.Content != "after the clear" {
			t.Errorf("after /clear the model still got the earlier prompt %q", m.Content)
		}
	}

	// /help names the server's log file.
	tm.submit("/help")
	tm.waitText("Server log: " + filepath.Join(home, "logs", "tui-server.log"))
	tm.keys("Escape")
	tm.waitGone("Server log:")

	// /quit ends the UI, restores the terminal and shuts the server down.
	tm.quit()
	assertServerGone(t, home)

	// The next scv in this workspace recalls the prompts with Up.
	tm2 := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	tm2.waitText("fake-model", "Ask anything")
	tm2.keys("Up")
	tm2.waitText("> after the clear")
	tm2.keys("Up")
	tm2.waitText("> second queued")
	files, _ := filepath.Glob(filepath.Join(home, "state", "prompt-history", "*.jsonl"))
	if len(files) != 1 {
		t.Errorf("prompt history files %q, want one", files)
	} else if st, err := os.Stat(files[0]); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("prompt history file: %v, %v", st, err)
	}
	tm2.keys("C-c")
	tm2.waitText("Ctrl+C again")
	tm2.keys("C-c")
	if code := tm2.exitCode(); code != 0 {
		t.Errorf("the second scv exited %d, want 0", code)
	}
}

// TestE2EConfigError: a server that refuses its configuration (exit 78)
// has its message shown in the UI, and again on the terminal after /quit.
func TestE2EConfigError(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[provider]\nactve = \"fake\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, t.TempDir(), home, nil, filepath.Join(bin, "scv"))
	s := tm.waitText("configuration error", "actve", "Ctrl+R")
	if strings.Contains(s, "goroutine") || strings.Contains(s, "panic") {
		t.Errorf("the screen shows a stack trace:\n%s", s)
	}
	tm.submit("/quit")
	if code := tm.exitCode(); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	tm.waitText("scv-tui: scv-server could not start because of a configuration error:", `unknown key "provider.actve"`)
}

// TestE2EBadServer: a server that writes a line that is not JSON and an
// unknown event, then dies. The UI says so, keeps what the user typed,
// restarts the server on Ctrl+R, and quits on Ctrl+C twice.
func TestE2EBadServer(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	dir := t.TempDir()
	if err := copyFile(filepath.Join(bin, "scv-tui"), filepath.Join(dir, "scv-tui")); err != nil {
		t.Fatal(err)
	}
	// The TUI runs the scv-server next to it: this script, which answers
	// initialize with garbage and dies.
	script := `#!/bin/sh
read line
echo 'this is not json'
echo '{"type":"no.such.event","request_id":"x"}'
echo 'bad-server: giving up' >&2
exit 4
`
	if err := os.WriteFile(filepath.Join(dir, "scv-server"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	tm := startTerm(t, t.TempDir(), home, nil, filepath.Join(dir, "scv-tui"))
	s := tm.waitText("cannot read", "this is not json", `unknown event type "no.such.event"`,
		"The server stopped", "exited with status 4", "bad-server: giving up", "Ctrl+R")
	if strings.Contains(s, "goroutine") || strings.Contains(s, "panic:") {
		t.Errorf("the screen shows a stack trace:\n%s", s)
	}

	// What the user types survives the restart.
	tm.typeText("words I typed")
	tm.waitText("words I typed")
	tm.keys("C-r")
	tm.waitFor("a second server process", func(string) bool {
		started, exited := serverPIDs(t, home)
		return len(started) == 2 && len(exited) == 2
	})
	tm.waitText("exited with status 4", "words I typed")

	// Ctrl+C twice quits; the terminal is restored and no server is left.
	tm.keys("C-c")
	tm.waitText("Ctrl+C again")
	tm.keys("C-c")
	// The server was down when the user quit, so scv-tui says why and
	// exits 1.
	if code := tm.exitCode(); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	tm.waitText("scv-tui: scv-server exited with status 4:", "bad-server: giving up")
	started, exited := serverPIDs(t, home)
	for _, pid := range started {
		if _, ok := exited[pid]; !ok {
			t.Errorf("server pid %d has no recorded exit", pid)
		}
	}
}

// TestE2ESignal: SIGTERM quits the UI like /quit (exit 130), restoring the
// terminal and shutting the server down cleanly.
func TestE2ESignal(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	home := fakeHome(t, srv)
	tm := startTerm(t, t.TempDir(), home, nil, filepath.Join(bin, "scv"))
	tm.waitText("fake-model", "Ask anything")
	tm.typeText("unsent words")
	tm.waitText("unsent words")

	// The server's parent is scv-tui (which scv exec'd into).
	started, _ := serverPIDs(t, home)
	if len(started) != 1 {
		t.Fatalf("%d servers in the log, want 1", len(started))
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", started[0]))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid ...
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	tui, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatalf("stat %q: %v", stat, err)
	}
	if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", tui)); strings.TrimSpace(string(comm)) != "scv-tui" {
		t.Fatalf("the server's parent %d is %q, want scv-tui", tui, comm)
	}
	if err := syscall.Kill(tui, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := tm.exitCode(); code != 130 {
		t.Errorf("exit code %d, want 130", code)
	}
	assertServerGone(t, home)
}

// TestE2EConfigFixedThenRestart: after a configuration error the user
// fixes the file and presses Ctrl+R; the new server reads it and the
// session starts.
func TestE2EConfigFixedThenRestart(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("Configured at last.")))
	home := fakeHome(t, srv)
	cfgPath := filepath.Join(home, "config.toml")
	good, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte("[provider]\nactve = \"fake\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, t.TempDir(), home, nil, filepath.Join(bin, "scv"))
	tm.waitText("configuration error", "actve")
	if err := os.WriteFile(cfgPath, good, 0o600); err != nil {
		t.Fatal(err)
	}
	tm.keys("C-r")
	// (The transcript keeps the earlier error as a notice.)
	tm.waitText("fake-model", "Ask anything")
	tm.submit("hello again")
	tm.waitText("Configured at last.")
	tm.waitIdle()
	tm.quit()
	assertServerGone(t, home)
}

// TestE2EMCPView: the real server, with two MCP servers configured (one
// disabled, one whose program does not exist), lists them in
// session.started to the v4 TUI, and /mcp shows them; Esc closes it.
// TestE2EPasteAndCtrlC: a bracketed paste whose lines end in CR keeps its
// lines; Ctrl+C interrupts a running turn, pausing the queue, and a second
// Ctrl+C quits.
func TestE2EPasteAndCtrlC(t *testing.T) {
	tm, srv, _, ws := scvAgainst(t, nil,
		fakeopenai.Script(fakeopenai.Text("Got three lines.")),
		fakeopenai.Script(fakeopenai.Text("Thinking hard"), fakeopenai.Hang()),
	)

	// -r: paste the bytes as they are (tmux otherwise turns LF into CR);
	// -p: bracketed, as a terminal pastes when the program asks.
	tm.tmux("set-buffer", "-b", "p", "alpha\rbeta\r\ngamma")
	tm.tmux("paste-buffer", "-r", "-p", "-b", "p", "-t", "e2e")
	tm.waitText("alpha", "beta", "gamma")
	tm.keys("Enter")
	tm.waitText("Got three lines.")
	waitRequests(t, srv, 1)
	if got := promptsSent(srv)[0]; got != "alpha\nbeta\ngamma" {
		t.Errorf("the pasted prompt reached the model as %q, want its three lines", got)
	}
	tm.waitIdle()

	tm.submit("a long one")
	tm.waitText("Thinking hard▍")
	tm.submit("queued after")
	tm.waitText("1. queued after")
	tm.keys("C-c")
	tm.waitText("The turn was cancelled.", "Press Ctrl+C again to quit", "paused")
	tm.keys("C-c")
	if code := tm.exitCode(); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	// The scrollback keeps the session's id and how to resume it.
	tm.waitText("Resume it with: scv -C "+ws+" --resume ", "Session ")
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2: the queued prompt must wait while paused", n)
	}
}

// TestE2EApprovalDiffAndReason: an edit's approval shows its diff in a
// real terminal, and a denial with a reason reaches the model.
func TestE2EApprovalDiffAndReason(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.ToolCall("e1", "edit", `{"path":"main.go","old_string":"var x = 1","new_string":"var x = 2"}`)),
		fakeopenai.Script(fakeopenai.Text("I will leave x alone.")),
	)
	home, ws := fakeHome(t, srv), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "main.go"), []byte("package main\n\nvar x = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	tm.waitText("fake-model", "Ask anything")
	tm.submit("set x to 2")
	tm.waitText("Allow edit?", "-var x = 1", "+var x = 2", "r deny")
	tm.keys("r")
	tm.waitText("reason>")
	tm.typeText("x must stay 1")
	tm.keys("Enter")
	tm.waitText("I will leave x alone.")
	waitRequests(t, srv, 2)
	var tool string
	for _, m := range srv.Requests()[1].Messages {
		if m.Role == "tool" {
			tool = m.Content
		}
	}
	if !strings.Contains(tool, "x must stay 1") {
		t.Errorf("the model read %q, want the user's reason", tool)
	}
	tm.quit()
}

func TestE2EMCPView(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	home, ws := t.TempDir(), t.TempDir()
	cfg := srv.Config("") + `
[mcp_servers.old]
command = "scv-e2e-no-such-mcp-server"
enabled = false

[mcp_servers.broken]
command = "/nonexistent/scv-e2e-mcp-server"
`
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	tm.waitText("fake-model", "Ask anything")
	tm.submit("/mcp")
	s := tm.waitText("MCP servers (2)", "old · disabled", "broken · ", "Esc close")
	// The broken server is starting, restarting after its failed start
	// (with the reason) or failed; either way it offers no tools.
	if !strings.Contains(s, "broken · starting") && !strings.Contains(s, "broken · restarting") && !strings.Contains(s, "broken · failed") {
		t.Errorf("the broken server's state is not shown:\n%s", s)
	}
	if strings.Contains(s, "tools") {
		t.Errorf("a server that is not ready shows tools:\n%s", s)
	}
	tm.keys("Escape")
	// The editor's placeholder is on the screen with the view open too:
	// wait for the view to go.
	deadline := time.Now().Add(10 * time.Second)
	for strings.Contains(tm.screen(), "MCP servers") {
		if time.Now().After(deadline) {
			t.Fatalf("Esc did not close the view:\n%s", tm.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
	tm.quit()
}

// TestE2EModelAndInit: /model lists the provider's models with the
// context window and switches the real session's model; /init sends the
// AGENTS.md prompt and leaves an existing AGENTS.md alone.
func TestE2EModelAndInit(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	srv.SetModels("fake-model", "fake-large")
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("Looked around.")))
	home, ws := fakeHome(t, srv), t.TempDir()
	tm := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	tm.waitText("fake-model", "Ask anything")
	tm.submit("/model")
	tm.waitText("Switch the session's model", "fake-large · ", "-token context window")
	tm.keys("Down", "Enter")
	tm.waitText("now uses fake-large")
	tm.submit("/init")
	tm.waitText("Looked around.")
	waitRequests(t, srv, 1)
	r := srv.Requests()[0]
	if r.Model != "fake-large" {
		t.Errorf("the turn used model %q, want fake-large", r.Model)
	}
	if p := promptsSent(srv); len(p) != 1 || !strings.Contains(p[0], "Write a starting AGENTS.md") {
		t.Errorf("prompts %q, want /init's", p)
	}
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("# Mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm.submit("/init")
	tm.waitText("already exists")
	tm.quit()
}

// TestE2EModelProvidersAndCost: /model lists every configured
// provider's models grouped, with context windows and prices, and a
// provider whose key is missing as unavailable; choosing it says which
// variable to set and keeps the session where it was; choosing another
// provider's model sends the next turn there; /cost shows the money at
// the configured price, and how to configure one for a model without.
func TestE2EModelProvidersAndCost(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	first, second := fakeopenai.Start(t), fakeopenai.Start(t)
	first.SetModels("fake-model")
	second.SetModels("s-big", "s-small")
	first.Enqueue(fakeopenai.Script(fakeopenai.Text("On the first provider."), fakeopenai.Usage(1000, 100)))
	second.Enqueue(fakeopenai.Script(fakeopenai.Text("On the second provider."), fakeopenai.Usage(20000, 10000)))
	home, ws := t.TempDir(), t.TempDir()
	cfg := first.Config("") + `
[providers.nokey]
base_url = "http://127.0.0.1:9/v1"
api_key_env = "SCV_E2E_MISSING_KEY"
model = "lonely"

[providers.second]
base_url = "` + second.URL() + `"
api_key = "sk-second"
model = "s-big"
context_max_tokens = 64000
max_retries = 0

[providers.second.models.s-small]
context_max_tokens = 32000
input_price = 50
output_price = 100
`
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	tm.waitText("fake-model", "Ask anything")
	tm.submit("hello")
	tm.waitText("On the first provider.")
	tm.waitIdle()
	tm.submit("/cost")
	tm.waitText("No price configured for fake-model", `[providers.fake.models."fake-model"]`)
	tm.submit("/model")
	tm.waitText("Switch the session's model", "fake      fake-model · ", "nokey     lonely · ", "unavailable: SCV_E2E_MISSING_KEY is not set",
		"second    s-big · 64k-token context window", "s-small · 32k-token context window · $50/$100 per M tokens")
	tm.keys("Down", "Enter")
	tm.waitText("the session stays on fake-model", "needs an API key in the environment variable SCV_E2E_MISSING_KEY")
	tm.submit("/model second s-small")
	tm.waitText("now uses s-small of second (context window 32k tokens)")
	tm.submit("and now?")
	tm.waitText("On the second provider.")
	tm.waitIdle()
	tm.submit("/cost")
	// 20k input at $50 and 10k output at $100 a million: $1 + $1.
	tm.waitText("Cost: $2.00", "at $50/$100 per million input/output tokens")
	if reqs := second.Requests(); len(reqs) != 1 || reqs[0].Model != "s-small" {
		t.Errorf("the second provider's requests: %+v, want one for s-small", reqs)
	}
	if reqs := first.Requests(); len(reqs) != 1 {
		t.Errorf("the first provider got %d requests, want 1 (before the switch)", len(reqs))
	}
	tm.quit()
}

// TestE2ELightTheme: SCV_THEME=light draws the light palette (the status
// bar's light surface, #d5d8e3) in a real terminal; an unknown value is
// refused at start with what to set.
func TestE2ELightTheme(t *testing.T) {
	tm, _, home, ws := scvAgainst(t, []string{"COLORTERM=truecolor", "SCV_THEME=light"})
	bin := binaries(t)
	styled, err := exec.Command("tmux", "-L", tm.socket, "capture-pane", "-e", "-p", "-t", "e2e").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(styled), "48;2;213;216;227") || strings.Contains(string(styled), "48;2;36;40;59") {
		t.Errorf("the status bar is not light:\n%q", styled)
	}
	tm.quit()
	bad := startTerm(t, ws, home, []string{"SCV_THEME=blue"}, filepath.Join(bin, "scv"))
	bad.waitText(`SCV_THEME is "blue": set it to dark or light`)
	if code := bad.exitCode(); code == 0 {
		t.Error("an unknown SCV_THEME exited 0")
	}
}

// TestE2EBackgroundDetected: with no SCV_THEME, scv asks the terminal
// for its background (OSC 11) and picks the palette from the answer. tmux
// answers with its window-style background, as a real terminal of that
// colour does: on a light one the status bar takes the light surface
// (#d5d8e3), on a dark one the dark surface (#24283b). With -screenshots
// the light screen is written to docs/tui-light-120x40.png and
// docs/tui-light-60x20.png, the pair of the dark ones.
func TestE2EBackgroundDetected(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	for _, tc := range []struct {
		name, style, want, notWant string
	}{
		{"light", "bg=#e1e2e7,fg=#3760bf", "48;2;213;216;227", "48;2;36;40;59"},
		{"dark", "bg=#1a1b26,fg=#c0caf5", "48;2;36;40;59", "48;2;213;216;227"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeopenai.Start(t)
			srv.Enqueue(fakeopenai.Script(fakeopenai.Text("The palette follows the terminal:\n\n- **light** background: dark text\n- **dark** background: light text\n\nRun `go test ./...` to check.")))
			home, ws := fakeHome(t, srv), t.TempDir()
			tm := startTermStyled(t, ws, home, []string{"COLORTERM=truecolor"}, filepath.Join(bin, "scv"), tc.style)
			tm.waitText("fake-model", "Ask anything")
			styled := waitStyled(t, tm, tc.want)
			if strings.Contains(styled, tc.notWant) {
				t.Errorf("the %s terminal also shows the other palette's surface %s:\n%q", tc.name, tc.notWant, styled)
			}
			if tc.name == "light" {
				tm.tmux("resize-window", "-t", "e2e", "-x", "120", "-y", "40")
				tm.submit("which palette?")
				tm.waitText("Run go test")
				tm.waitIdle()
				screenshotPair(t, tm, "tui-light")
			}
			tm.quit()
		})
	}
}

// waitStyled waits until the pane, captured with its colours, holds want.
func waitStyled(t *testing.T, tm *term, want string) string {
	t.Helper()
	var styled []byte
	testkit.Eventually(t, 10*time.Second, "the pane shows "+want, func() bool {
		var err error
		styled, err = exec.Command("tmux", "-L", tm.socket, "capture-pane", "-e", "-p", "-t", "e2e").Output()
		return err == nil && strings.Contains(string(styled), want)
	})
	return string(styled)
}

// screenshotPair renders the light pane at 120x40 and 60x20 to
// docs/NAME-120x40.png and docs/NAME-60x20.png with -screenshots (else to
// a temporary directory, so the rendering is still exercised).
func screenshotPair(t *testing.T, tm *term, name string) {
	t.Helper()
	if _, err := os.Stat(fontRegular); err != nil {
		t.Log("DejaVu Sans Mono is not installed: no screenshots")
		return
	}
	fonts, err := shot.LoadFonts(fontRegular, fontBold, 15)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if *writeScreenshots {
		out = filepath.Join("..", "docs")
	}
	captureWith(t, tm, fonts, 120, 40, filepath.Join(out, name+"-120x40.png"), shot.Light)
	tm.tmux("resize-window", "-t", "e2e", "-x", "60", "-y", "20")
	// New output after the resize: the screen was drawn at the new size.
	tm.submit("/cost")
	tm.waitText("This session has used")
	captureWith(t, tm, fonts, 60, 20, filepath.Join(out, name+"-60x20.png"), shot.Light)
}

// TestE2EHelpScrollsWhenSmall: at 40x12 /help does not fit, so it scrolls
// and says which lines show (issue 21, item 2).
func TestE2EHelpScrollsWhenSmall(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	home, ws := fakeHome(t, srv), t.TempDir()
	tm := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	tm.tmux("resize-window", "-t", "e2e", "-x", "40", "-y", "12")
	tm.waitText("fake-model")
	tm.submit("/help")
	first := tm.waitText("lines 1-")
	tm.keys("PageDown")
	tm.waitGone("lines 1-")
	if s := tm.screen(); s == first || !strings.Contains(s, " of ") {
		t.Errorf("PgDn did not scroll the help:\n%s", s)
	}
	tm.keys("Escape")
	tm.waitGone(" of ")
	tm.quit()
}

// TestE2EMissingKeyKeepsPrompt: scv "PROMPT" with the provider's key
// variable unset says which variable is missing and where it is
// configured, and keeps the command line's prompt (issue 21, items 3, 4).
func TestE2EMissingKeyKeepsPrompt(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	home, ws := t.TempDir(), t.TempDir()
	cfg := "[providers.work]\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"SCV_E2E_WORK_KEY\"\nmodel = \"m\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTermStyled(t, ws, home, nil, filepath.Join(bin, "scv"), "", "fix the failing tests")
	tm.waitText("needs an API key in the environment variable", "SCV_E2E_WORK_KEY", "config.toml", "once it is fixed")
	// The command line's prompt is in the editor, not lost.
	tm.waitText("> fix the failing tests")
	tm.keys("C-c")
	tm.keys("C-c")
	tm.exitCode()
}

// TestE2EWarningRulesAndMenus: the warning for a key file other users can
// read shows in the UI; /rules lists tools.allow; "/co" opens the command
// menu and "@" the fuzzy file menu, whose mention attaches the file
// (issue 21, items 9, 13, 15).
func TestE2EWarningRulesAndMenus(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("Read it.")))
	home, ws := t.TempDir(), t.TempDir()
	cfg := srv.Config("") + "\n[tools]\nallow = [\"bash:go test\"]\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(home, "config.toml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "internal", "server"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "internal", "server", "main_test.go"), []byte("package server\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	tm.waitText("Configuration warning:", "other users can read it")
	tm.submit("/rules")
	tm.waitText("bash:go test", "tools.allow")
	tm.typeText("/co")
	tm.waitText("/compact", "/cost")
	tm.keys("C-u")
	tm.typeText("look at @srvmt")
	tm.waitText("internal/server/main_test.go")
	tm.keys("Tab")
	tm.keys("Enter")
	tm.waitText("Read it.", "[attached: internal/server/main_test.go")
	if p := promptsSent(srv); len(p) != 1 || !strings.Contains(p[0], `<attached path="internal/server/main_test.go">`) {
		t.Errorf("prompts %q, want the file attached", p)
	}
	tm.quit()
}

// TestE2ERetryingShown: a model request the provider refuses with 429
// shows "Retrying (2/3) in 2 s" with the provider's status and message
// while the server waits, then the reply (issue 21, item 7).
func TestE2ERetryingShown(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	srv.Enqueue(fakeopenai.Script(fakeopenai.APIError(429, "slow down please"), fakeopenai.Header("Retry-After", "2")),
		fakeopenai.Script(fakeopenai.Text("Made it.")))
	home, ws := t.TempDir(), t.TempDir()
	cfg := strings.Replace(srv.Config(""), "max_retries = 0", "max_retries = 2", 1)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	tm := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	tm.waitText("fake-model", "Ask anything")
	tm.submit("hi")
	tm.waitText("Retrying (2/3) in 2 s", "HTTP 429", "slow down please")
	tm.waitText("Made it.")
	tm.waitGone("Retrying (2/3)")
	tm.quit()
}

// TestE2EFirstRunOffer: scv with no configuration asks once whether to set
// a provider up; d starts the demo at once, and the next run does not ask.
func TestE2EFirstRunOffer(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	home, ws := t.TempDir(), t.TempDir()
	tm := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	tm.waitText("No model provider is configured yet", "d for the built-in demo")
	tm.typeText("d")
	tm.keys("Enter")
	tm.waitText("scv-demo", "scv setup")
	tm.quit()
	again := startTerm(t, ws, home, nil, filepath.Join(bin, "scv"))
	s := again.waitText("scv-demo")
	if strings.Contains(s, "No model provider is configured yet") {
		t.Error("the offer was made twice")
	}
	again.quit()
}

// TestE2ERenderingKeepsLinesAndCounts: the model's single line breaks stay
// line breaks, a code block keeps its indentation, and a tool's output cut
// to its first lines says "1 more line" (issue 21, item 10; the goldens
// that keep colour are in ui/markdown and ui/toolcard).
func TestE2ERenderingKeepsLinesAndCounts(t *testing.T) {
	tm, _, _, _ := scvAgainst(t, nil,
		fakeopenai.Script(fakeopenai.ToolCall("call_s", "bash", `{"command":"printf '1\\n2\\n3\\n4\\n'"}`)),
		fakeopenai.Script(fakeopenai.Text("alpha-row\nbeta-row\ngamma-row\n\n```go\nfunc f() {\n    indented := true\n}\n```\n")),
	)
	tm.submit("count to four")
	tm.waitText("Allow bash?")
	tm.keys("y")
	screen := tm.waitText("1 more line (Ctrl+O expands)", "gamma-row", "indented := true")
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "alpha-row") && strings.Contains(l, "beta-row") {
			t.Errorf("single line breaks were merged: %q", l)
		}
		if strings.Contains(l, "indented := true") && !strings.Contains(l, "    indented := true") {
			t.Errorf("the code lost its indentation: %q", l)
		}
	}
	if strings.Contains(screen, "1 more lines") {
		t.Error(`the count says "1 more lines"`)
	}
	tm.quit()
}

// TestE2ERevokeRule: "a" on an approval grants the session rule the tool
// proposed, so the next such call runs without asking; /rules lists it,
// /revoke removes it, and the call after that asks again (issue 21,
// item 15).
func TestE2ERevokeRule(t *testing.T) {
	tm, _, _, ws := scvAgainst(t, nil,
		fakeopenai.Script(fakeopenai.ToolCall("c1", "bash", `{"command":"touch one.txt"}`)),
		fakeopenai.Script(fakeopenai.Text("Made one.")),
		fakeopenai.Script(fakeopenai.ToolCall("c2", "bash", `{"command":"touch two.txt"}`)),
		fakeopenai.Script(fakeopenai.Text("Made two.")),
		fakeopenai.Script(fakeopenai.ToolCall("c3", "bash", `{"command":"touch three.txt"}`)),
		fakeopenai.Script(fakeopenai.Text("Made three.")),
	)

	tm.submit("make one")
	tm.waitText("Allow bash?", "touch one.txt")
	tm.keys("a")
	tm.waitText("Made one.")
	tm.waitIdle()

	// The rule covers the next touch: it runs without a dialog.
	tm.submit("make two")
	tm.waitText("Made two.")
	tm.waitIdle()
	if s := tm.screen(); strings.Contains(s, "Allow bash?") {
		t.Fatalf("the second touch asked although the session rule covers it:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(ws, "two.txt")); err != nil {
		t.Fatalf("the second touch did not run: %v", err)
	}

	tm.submit("/rules")
	tm.waitText("Session rules", "bash:touch: bash commands that start with `touch`")
	// A key the session does not hold is refused in words.
	tm.submit("/revoke bash:tuoch")
	tm.waitText("bash:tuoch was not revoked", "/rules lists the keys")
	tm.submit("/revoke bash:touch")
	tm.waitText("Revoked bash:touch: calls it covered ask again.", "No session rules are granted")

	// Revoked: the third touch asks again, and runs once allowed.
	tm.submit("make three")
	tm.waitText("Allow bash?", "touch three.txt")
	if _, err := os.Stat(filepath.Join(ws, "three.txt")); err == nil {
		t.Fatal("the third touch ran before it was approved")
	}
	tm.keys("y")
	tm.waitText("Made three.")
	if _, err := os.Stat(filepath.Join(ws, "three.txt")); err != nil {
		t.Errorf("the approved third touch did not run: %v", err)
	}
	tm.quit()
}

// TestE2EScvFlags: `scv -C DIR --model M "prompt"` from another directory
// works in DIR, asks model M and starts with the prompt; the summary
// printed on quit names the resume command, and `scv -C DIR --resume ID`
// shows the stored conversation and continues it (issue 21, items 4
// and 16).
func TestE2EScvFlags(t *testing.T) {
	needTmux(t)
	bin := binaries(t)
	srv := fakeopenai.Start(t)
	srv.Enqueue(
		fakeopenai.Script(fakeopenai.Text("Hello from the other model.")),
		fakeopenai.Script(fakeopenai.Text("Still here.")),
	)
	home, ws, elsewhere := fakeHome(t, srv), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("Mention the marker ws-agents-7f3.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm := startTermStyled(t, elsewhere, home, nil, filepath.Join(bin, "scv"), "", "-C", ws, "--model", "other-model", "say hello")
	tm.waitText("Hello from the other model.", "other-model")
	waitRequests(t, srv, 1)
	first := srv.Requests()[0]
	if first.Model != "other-model" {
		t.Errorf("the model request named %q, want --model's other-model", first.Model)
	}
	if p := promptsSent(srv); len(p) != 1 || p[0] != "say hello" {
		t.Errorf("prompts %q, want the command line's", p)
	}
	// -C: the workspace's AGENTS.md reached the model, not elsewhere's.
	var sys string
	for _, m := range first.Messages {
		if m.Role == "system" {
			sys += m.Content
		}
	}
	if !strings.Contains(sys, "ws-agents-7f3") {
		t.Errorf("the system prompt lacks -C's AGENTS.md:\n%s", sys)
	}
	tm.waitIdle()
	tm.submit("/quit")
	if code := tm.exitCode(); code != 0 {
		t.Fatalf("exit code %d, want 0", code)
	}
	m := regexp.MustCompile(`Resume it with: scv -C (\S+) --resume ([0-9a-f-]{8,})`).FindStringSubmatch(tm.screen())
	if m == nil {
		t.Fatalf("no resume command on the screen after quitting:\n%s", tm.screen())
	}
	if m[1] != ws {
		t.Errorf("the resume command's -C is %q, want %q", m[1], ws)
	}

	tm2 := startTermStyled(t, elsewhere, home, nil, filepath.Join(bin, "scv"), "", "-C", m[1], "--resume", m[2])
	tm2.waitText("say hello", "Hello from the other model.")
	tm2.submit("are you there")
	tm2.waitText("Still here.")
	waitRequests(t, srv, 2)
	var history []string
	for _, msg := range srv.Requests()[1].Messages {
		if msg.Role != "system" {
			history = append(history, msg.Role+": "+msg.Content)
		}
	}
	want := []string{"user: say hello", "assistant: Hello from the other model.", "user: are you there"}
	if strings.Join(history, "\n") != strings.Join(want, "\n") {
		t.Errorf("the resumed request's history:\n%s\nwant:\n%s", strings.Join(history, "\n"), strings.Join(want, "\n"))
	}
	tm2.quit()
}
