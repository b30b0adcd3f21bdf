package client

import (
	"bufio"
	"context"
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

	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit/bins"
	"go.uber.org/goleak"
)

// fakeModeEnv, when set, makes the test binary act as a fake server (see
// runFake) instead of running the tests.
const fakeModeEnv = "SCV_TUI_CLIENT_FAKE"

// serverBin is the real scv-server, built once per test run
// (testkit/bins).
var serverBin string

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeModeEnv); mode != "" {
		os.Exit(runFake(mode))
	}
	var err error
	if serverBin, err = bins.Path("scv-server"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
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

// runFake is a misbehaving server. Modes:
//
//	bad       writes a non-JSON line, an unknown event, an oversized frame
//	          and a good event between each, then exits 0 at end of input
//	crash     writes to stderr and exits 3 after reading one line
//	config    writes a configuration error and exits 78 at once
//	stubborn  ignores the end of its input, with a child holding stdout
//	echo      answers every line with an initialized event naming it
//	deaf      closes its stdin and never exits by itself
//	flood     writes $SCV_TUI_CLIENT_FLOOD assistant.delta events
func runFake(mode string) int {
	good := func(id string) {
		fmt.Printf(`{"type":"initialized","request_id":%q,"protocol_version":3,"server":{"name":"fake","version":"0"}}`+"\n", id)
	}
	readLine := func() bool {
		var b [1]byte
		for {
			if _, err := os.Stdin.Read(b[:]); err != nil {
				return false
			}
			if b[0] == '\n' {
				return true
			}
		}
	}
	switch mode {
	case "bad":
		fmt.Println("this is not json")
		good("1")
		fmt.Println(`{"type":"bogus.event","request_id":"x"}`)
		good("2")
		fmt.Println(`{"type":"initialized","pad":"` + strings.Repeat("x", 4096) + `"}`)
		good("3")
		for readLine() {
		}
		return 0
	case "crash":
		readLine()
		fmt.Fprintln(os.Stderr, "panic: something broke")
		fmt.Fprintln(os.Stderr, "goroutine 1 [running]")
		return 3
	case "config":
		fmt.Fprintln(os.Stderr, `scv-server: /home/ana/.scv/config.toml:3: unknown key "provider.actve"`)
		return 78
	case "stubborn":
		// A child in the same process group holding our stdout, like a
		// tool the server started.
		child := exec.Command("sleep", "300")
		child.Stdout = os.Stdout
		if err := child.Start(); err != nil {
			return 9
		}
		fmt.Fprintf(os.Stderr, "child %d\n", child.Process.Pid)
		good("ready")
		for readLine() {
		}
		waitToBeKilled() // never exits by itself
	case "echo":
		for i := 0; readLine(); i++ {
			good(fmt.Sprint(i))
		}
		return 0
	case "deaf":
		// Closes its input at once, then waits to be killed.
		_ = os.Stdin.Close()
		good("ready")
		waitToBeKilled()
	case "flood":
		// $SCV_TUI_CLIENT_FLOOD assistant.delta events, as fast as the
		// pipe takes them, then end of input.
		n, _ := strconv.Atoi(os.Getenv("SCV_TUI_CLIENT_FLOOD"))
		w := bufio.NewWriterSize(os.Stdout, 64<<10)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(w, `{"type":"assistant.delta","request_id":"r1","session_id":"s1","turn_id":"t1","seq":%d,"content":"some streamed words "}`+"\n", i)
		}
		_ = w.Flush()
		for readLine() {
		}
		return 0
	}
	return 2
}

// waitToBeKilled blocks until a signal ends the process. It sleeps
// rather than `select {}` because with every goroutine blocked and no
// timer pending the runtime calls it a deadlock and exits, which is not
// what a stubborn server does.
func waitToBeKilled() {
	for {
		time.Sleep(time.Hour)
	}
}

// fake returns a Config running the test binary as a fake server.
func fake(t *testing.T, mode string) Config {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Path: self,
		Args: []string{"-test.run=^$"},
		Dir:  t.TempDir(),
		// The race detector otherwise sleeps a second at exit.
		Env:     append(os.Environ(), fakeModeEnv+"="+mode, "GORACE=atexit_sleep_ms=0"),
		LogPath: filepath.Join(t.TempDir(), "logs", "tui-server.log"),
	}
}

// next returns the next message, failing after a generous deadline.
func next(t *testing.T, c *Client) Message {
	t.Helper()
	select {
	case m, ok := <-c.Messages():
		if !ok {
			t.Fatal("Messages closed")
		}
		return m
	case <-time.After(30 * time.Second):
		t.Fatal("no message from the server within 30s")
	}
	return Message{}
}

func closeClient(t *testing.T, c *Client) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Close(ctx)
}

func TestRealServerSession(t *testing.T) {
	home, ws := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(home, "logs", "tui-server.log")
	c := New(Config{
		Path:    serverBin,
		Dir:     ws,
		Env:     []string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + home},
		LogPath: logPath,
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if m := next(t, c); !m.Started {
		t.Fatalf("first message %+v, want Started", m)
	}
	send := func(m protocol.ClientMessage) {
		t.Helper()
		if err := c.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	// waitFor returns the first event of type kind, failing on problems.
	waitFor := func(kind string) protocol.Event {
		t.Helper()
		for {
			m := next(t, c)
			if m.Err != nil {
				t.Fatalf("problem while waiting for %s: %v", kind, m.Err)
			}
			if m.Event != nil && m.Event.Kind() == kind {
				return m.Event
			}
		}
	}
	send(&protocol.Initialize{RequestID: "r1", ProtocolVersion: 3, Client: protocol.ClientInfo{Name: "scv-tui-test"}})
	if ev := waitFor(protocol.TypeInitialized).(*protocol.Initialized); ev.ProtocolVersion != 3 {
		t.Errorf("initialized version %d", ev.ProtocolVersion)
	}
	send(&protocol.SessionStart{RequestID: "r2", Cwd: ws, AutoApprove: true})
	started := waitFor(protocol.TypeSessionStarted).(*protocol.SessionStarted)
	send(&protocol.TurnStart{RequestID: "r3", SessionID: started.SessionID, Prompt: "hello"})
	waitFor(protocol.TypeTurnCompleted)

	// A clean shutdown: stdin closed, the server exits 0 by itself.
	if err := closeClient(t, c); err != nil {
		t.Errorf("Close = %v, want a clean exit", err)
	}
	if err := c.Send(&protocol.TurnCancel{RequestID: "r4", SessionID: started.SessionID}); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
	if err := c.Start(); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after Close = %v, want ErrClosed", err)
	}
	if _, ok := <-c.Messages(); ok {
		t.Error("Messages still open after Close")
	}
	if err := closeClient(t, c); err != nil {
		t.Errorf("second Close = %v", err)
	}
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("log mode %v, want 0600", st.Mode().Perm())
	}
	if dst, _ := os.Stat(filepath.Dir(logPath)); dst.Mode().Perm() != 0o700 {
		t.Errorf("log dir mode %v, want 0700", dst.Mode().Perm())
	}
	log, _ := os.ReadFile(logPath)
	if !strings.Contains(string(log), "(pid ") || !strings.Contains(string(log), "exited with status 0") {
		t.Errorf("log does not record the start and the exit:\n%s", log)
	}
}

func TestRealServerConfigError(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("[provider]\nactve = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := New(Config{
		Path:    serverBin,
		Dir:     t.TempDir(),
		Env:     []string{"SCV_HOME=" + home, "PATH=" + os.Getenv("PATH"), "HOME=" + home},
		LogPath: filepath.Join(home, "logs", "tui-server.log"),
	})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if m := next(t, c); !m.Started {
		t.Fatalf("first message %+v", m)
	}
	m := next(t, c)
	var ee *ExitError
	if !m.Exited || !errors.As(m.Err, &ee) || !ee.ConfigError() {
		t.Fatalf("got %+v, want an exit with status 78", m)
	}
	if !strings.Contains(ee.Stderr, "actve") || !strings.Contains(m.Err.Error(), "configuration error") {
		t.Errorf("the message does not carry the server's words: %q", m.Err.Error())
	}
	if err := c.Send(&protocol.Initialize{RequestID: "x", ProtocolVersion: 3}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Send after the exit = %v, want ErrNotRunning", err)
	}
	if err := closeClient(t, c); err != nil {
		t.Errorf("Close after the exit = %v", err)
	}
}

func TestBadOutput(t *testing.T) {
	cfg := fake(t, "bad")
	cfg.MaxFrame = 1024
	c := New(cfg)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	want := []string{"started", "line:not a valid protocol event", "event:1", `line:unknown event type "bogus.event"`, "event:2", "line:over the 1024-byte limit", "event:3"}
	for i, w := range want {
		m := next(t, c)
		var got string
		var le *LineError
		switch {
		case m.Started:
			got = "started"
		case m.Event != nil:
			got = "event:" + m.Event.(*protocol.Initialized).RequestID
		case errors.As(m.Err, &le):
			got = "line:" + le.Error()
		default:
			got = fmt.Sprintf("%+v", m)
		}
		if !strings.HasPrefix(w, "line:") && got != w || strings.HasPrefix(w, "line:") && !strings.Contains(got, strings.TrimPrefix(w, "line:")) {
			t.Errorf("message %d = %q, want %q", i, got, w)
		}
	}
	if err := closeClient(t, c); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func TestExitIsReported(t *testing.T) {
	c := New(fake(t, "crash"))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if m := next(t, c); !m.Started {
		t.Fatalf("first message %+v", m)
	}
	if err := c.Send(&protocol.Initialize{RequestID: "1", ProtocolVersion: 3}); err != nil {
		t.Fatal(err)
	}
	m := next(t, c)
	var ee *ExitError
	if !m.Exited || !errors.As(m.Err, &ee) || ee.Code != 3 {
		t.Fatalf("got %+v, want an exit with status 3", m)
	}
	if want := "scv-server exited with status 3:\npanic: something broke\ngoroutine 1 [running]"; m.Err.Error() != want {
		t.Errorf("message %q, want %q", m.Err.Error(), want)
	}

	// Restart runs a new process of the same kind.
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	if m := next(t, c); !m.Started {
		t.Fatalf("after Restart %+v, want Started", m)
	}
	if err := c.Send(&protocol.Initialize{RequestID: "1", ProtocolVersion: 3}); err != nil {
		t.Fatal(err)
	}
	if m := next(t, c); !m.Exited {
		t.Fatalf("after Restart %+v, want the exit again", m)
	}
	if err := closeClient(t, c); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func TestRestartDropsTheOldProcess(t *testing.T) {
	c := New(fake(t, "echo"))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err == nil {
		t.Error("a second Start while running succeeded")
	}
	if m := next(t, c); !m.Started {
		t.Fatalf("first message %+v", m)
	}
	for gen := 0; gen < 3; gen++ {
		if err := c.Send(&protocol.Initialize{RequestID: "x", ProtocolVersion: 3}); err != nil {
			t.Fatal(err)
		}
		if m := next(t, c); m.Event == nil || m.Event.(*protocol.Initialized).RequestID != "0" {
			t.Fatalf("generation %d: %+v, want the first answer of a new process", gen, m)
		}
		if err := c.Restart(); err != nil {
			t.Fatal(err)
		}
		// The old process's exit is not reported: the next message is the
		// new process's start.
		if m := next(t, c); !m.Started {
			t.Fatalf("generation %d: after Restart %+v, want Started", gen, m)
		}
	}
	if err := closeClient(t, c); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func TestCloseKillsAStubbornServer(t *testing.T) {
	cfg := fake(t, "stubborn")
	cfg.Grace = 200 * time.Millisecond
	c := New(cfg)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if m := next(t, c); !m.Started {
		t.Fatalf("first message %+v", m)
	}
	if m := next(t, c); m.Event == nil {
		t.Fatalf("got %+v, want the ready event", m)
	}
	c.mu.Lock()
	pgid := c.cur.sp.Pid()
	c.mu.Unlock()
	start := time.Now()
	err := closeClient(t, c)
	if err == nil || !strings.Contains(err.Error(), "was killed") {
		t.Errorf("Close = %v, want it to say the server was killed", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %s", d)
	}
	// The whole group is gone, the child holding stdout too.
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the process group is still alive after Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestQueueFull(t *testing.T) {
	cfg := fake(t, "stubborn")
	cfg.QueueSize = 2
	cfg.Grace = 100 * time.Millisecond
	c := New(cfg)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// The stubborn server reads its input, so fill the queue faster than
	// a pipe drains by sending big frames; some Send must report a full
	// queue rather than block.
	big := &protocol.TurnStart{RequestID: "r", SessionID: "s", Prompt: strings.Repeat("p", 200<<10)}
	var full bool
	for i := 0; i < 1000 && !full; i++ {
		err := c.Send(big)
		if errors.Is(err, ErrQueueFull) {
			full = true
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if !full {
		t.Error("the queue never reported full")
	}
	tooBig := &protocol.TurnStart{RequestID: "r", SessionID: "s", Prompt: strings.Repeat("p", protocol.MaxClientFrameBytes)}
	if err := c.Send(tooBig); err == nil || !strings.Contains(err.Error(), "over the server's") {
		t.Errorf("Send of an oversized frame = %v", err)
	}
	_ = closeClient(t, c)
}

func TestServerStopsReading(t *testing.T) {
	cfg := fake(t, "deaf")
	cfg.Grace = 100 * time.Millisecond
	c := New(cfg)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	next(t, c) // started
	if m := next(t, c); m.Event == nil {
		t.Fatalf("got %+v, want the ready event", m)
	}
	// Its stdin is closed, so a write fails and the writer ends; from
	// then on Send says so instead of queueing into the void.
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Send(&protocol.Initialize{RequestID: "1", ProtocolVersion: 3})
		if errors.Is(err, ErrNotReading) {
			break
		}
		if err != nil {
			t.Fatalf("Send = %v, want nil or ErrNotReading", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("Send never reported that the server stopped reading")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := closeClient(t, c); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("Close = %v, want the kill reported", err)
	}
}

func TestStartErrors(t *testing.T) {
	c := New(Config{Path: filepath.Join(t.TempDir(), "missing")})
	if err := c.Start(); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Start of a missing binary = %v", err)
	}
	if err := c.Send(&protocol.Initialize{RequestID: "1", ProtocolVersion: 3}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Send without a process = %v", err)
	}
	_ = closeClient(t, c)

	// A log path under a file cannot be created.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c = New(Config{Path: serverBin, LogPath: filepath.Join(file, "logs", "x.log")})
	if err := c.Start(); err == nil || !strings.Contains(err.Error(), "server log") {
		t.Errorf("Start with a bad log path = %v", err)
	}
	_ = closeClient(t, c)
}

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		n      int
		want   string
	}{
		{"empty", nil, 5, ""},
		{"one line", []string{"hello\n"}, 5, "hello"},
		{"last lines", []string{"a\nb\nc\n", "d\n"}, 2, "c\nd"},
		{"partial last line", []string{"a\nb"}, 5, "a\nb"},
		{"invalid utf-8", []string{"\xff\n"}, 5, "\uFFFD"},
		{"long", []string{strings.Repeat("x", 2*tailBytes) + "\nend\n"}, 1, "end"},
		// The cut falls inside the first é: the tail starts at the next
		// character, not with a replacement character.
		{"cut inside a character", []string{strings.Repeat("é", tailBytes/2) + "x"}, 1, strings.Repeat("é", tailBytes/2-1) + "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tb tailBuffer
			for _, w := range tt.writes {
				tb.Write([]byte(w))
			}
			if got := tb.Lines(tt.n); got != tt.want {
				t.Errorf("Lines(%d) = %q, want %q", tt.n, got, tt.want)
			}
			if len(tb.buf) > tailBytes {
				t.Errorf("kept %d bytes, more than %d", len(tb.buf), tailBytes)
			}
		})
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	a := strings.Repeat("a", maxLineShown-1)
	tests := []struct{ name, in, want string }{
		{"short", "short", "short"},
		{"exactly the limit", a + "b", a + "b"},
		// é takes the last byte of the budget and the one after it.
		{"cut inside a character", a + "é" + a, a + "..."},
		// An invalid byte is kept: Error quotes it as an escape.
		{"invalid byte", "\xff" + a + "bc", "\xff" + a + "..."},
	}
	for _, tt := range tests {
		if got := clip([]byte(tt.in)); got != tt.want {
			t.Errorf("%s: clip = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestExitErrorMessages(t *testing.T) {
	tests := []struct {
		ee   ExitError
		want string
	}{
		{ExitError{Code: 78, Stderr: "bad key"}, "scv-server could not start because of a configuration error:\nbad key"},
		{ExitError{Code: 1, LogPath: "/l"}, "scv-server exited with status 1; see /l"},
		{ExitError{Code: -1, Signal: "SIGKILL", Stderr: "x"}, "scv-server was killed by signal SIGKILL:\nx"},
		{ExitError{Code: -1, Err: errors.New("wait failed")}, "scv-server ended (wait failed)"},
	}
	for _, tt := range tests {
		if got := tt.ee.Error(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.ee, got, tt.want)
		}
	}
}

// BenchmarkEvents measures reading, decoding and delivering streamed
// assistant.delta events from a server process (one process per run of
// b.N events, so its start is amortized).
func BenchmarkEvents(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	c := New(Config{
		Path: self,
		Args: []string{"-test.run=^$"},
		Env:  append(os.Environ(), fakeModeEnv+"=flood", fmt.Sprintf("SCV_TUI_CLIENT_FLOOD=%d", b.N), "GORACE=atexit_sleep_ms=0"),
	})
	b.ResetTimer()
	if err := c.Start(); err != nil {
		b.Fatal(err)
	}
	for got := 0; got < b.N; {
		m := <-c.Messages()
		switch {
		case m.Event != nil:
			got++
		case m.Err != nil:
			b.Fatal(m.Err)
		}
	}
	b.StopTimer()
	if err := c.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
}
