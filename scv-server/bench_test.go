package main_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// benchServer is a scv-server process for benchmarks.
type benchServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startBench(b *testing.B, home string) *benchServer {
	b.Helper()
	args := []string{"--stdio"}
	if p := os.Getenv("SCV_BENCH_CPUPROFILE"); p != "" {
		args = append(args, "--cpuprofile", p)
	}
	cmd := exec.Command(bin, args...)
	// An empty HOME: bash -lc reads no user profile.
	cmd.Env = []string{"SCV_HOME=" + home, "HOME=" + b.TempDir(), "PATH=" + os.Getenv("PATH")}
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return &benchServer{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
}

func (s *benchServer) send(b *testing.B, m protocol.ClientMessage) {
	frame, _ := protocol.EncodeClientMessage(m)
	if _, err := s.in.Write(append(frame, '\n')); err != nil {
		b.Fatal(err)
	}
}

// until reads lines up to one whose type is kind, and returns it.
func (s *benchServer) until(b *testing.B, kind string) []byte {
	needle := []byte(`{"type":"` + kind + `"`)
	for {
		line, err := s.out.ReadSlice('\n')
		if err != nil {
			b.Fatalf("reading: %v", err)
		}
		if bytes.HasPrefix(line, needle) {
			return line
		}
		if bytes.HasPrefix(line, []byte(`{"type":"turn.failed"`)) || bytes.HasPrefix(line, []byte(`{"type":"error"`)) {
			b.Fatalf("unexpected %s", line)
		}
	}
}

func (s *benchServer) stop() {
	_ = s.in.Close()
	_, _ = io.Copy(io.Discard, s.out)
	_ = s.cmd.Wait()
}

func sessionID(line []byte) string {
	ev, err := protocol.DecodeEvent(bytes.TrimSpace(line))
	if err != nil {
		panic(err)
	}
	return ev.(*protocol.SessionStarted).SessionID
}

// BenchmarkTurn10kDeltas measures one turn of 10,000 streamed deltas from
// the fake provider through the server to the client over its stdio
// pipes. The deltas/s metric is the figure of docs/performance.md.
func BenchmarkTurn10kDeltas(b *testing.B) {
	const deltas = 10000
	f := fo.Start(b)
	home := b.TempDir()
	cfg := f.Config("")
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	s := startBench(b, home)
	defer s.stop()
	s.send(b, &protocol.Initialize{RequestID: "1", ProtocolVersion: 3, Client: protocol.ClientInfo{Name: "bench"}})
	s.until(b, protocol.TypeInitialized)
	s.send(b, &protocol.SessionStart{RequestID: "2", Cwd: b.TempDir()})
	sid := sessionID(s.until(b, protocol.TypeSessionStarted))
	s.until(b, protocol.TypeQueueSnapshot)
	for range b.N {
		f.Enqueue(fo.Script(fo.Repeat(deltas, "tok ")))
	}
	b.ResetTimer()
	var elapsed time.Duration
	for i := range b.N {
		start := time.Now()
		s.send(b, &protocol.TurnStart{RequestID: "t" + strconv.Itoa(i), SessionID: sid, Prompt: "stream"})
		s.until(b, protocol.TypeTurnCompleted)
		elapsed += time.Since(start)
		// Every turn starts from an empty history, so the figure is the
		// delta path's, not compaction's or the growing request's.
		b.StopTimer()
		s.send(b, &protocol.SessionClear{RequestID: "c" + strconv.Itoa(i), SessionID: sid})
		s.until(b, protocol.TypeSessionCleared)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(deltas*b.N)/elapsed.Seconds(), "deltas/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkStartToInitialized measures a server process's time from start
// to the initialized event.
func BenchmarkStartToInitialized(b *testing.B) {
	home := b.TempDir()
	var total time.Duration
	for range b.N {
		t0 := time.Now()
		s := startBench(b, home)
		s.send(b, &protocol.Initialize{RequestID: "1", ProtocolVersion: 3, Client: protocol.ClientInfo{Name: "bench"}})
		s.until(b, protocol.TypeInitialized)
		total += time.Since(t0)
		b.StopTimer()
		s.stop()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/start")
}

// BenchmarkRSSAfterSession reports the server's resident memory after one
// session with one demo turn.
func BenchmarkRSSAfterSession(b *testing.B) {
	home := b.TempDir()
	ws := b.TempDir()
	var kib float64
	for range b.N {
		s := startBench(b, home)
		s.send(b, &protocol.Initialize{RequestID: "1", ProtocolVersion: 3, Client: protocol.ClientInfo{Name: "bench"}})
		s.until(b, protocol.TypeInitialized)
		s.send(b, &protocol.SessionStart{RequestID: "2", Cwd: ws, AutoApprove: true})
		sid := sessionID(s.until(b, protocol.TypeSessionStarted))
		s.send(b, &protocol.TurnStart{RequestID: "3", SessionID: sid, Prompt: "hello"})
		s.until(b, protocol.TypeTurnCompleted)
		kib += vmRSS(b, s.cmd.Process.Pid)
		s.stop()
	}
	b.ReportMetric(kib/1024/float64(b.N), "MiB-RSS")
}

func vmRSS(b *testing.B, pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseFloat(strings.Fields(v)[0], 64)
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkSoakToolCalls runs 500 bash tool calls (one per turn) through a
// real server and reports its resident memory after the first 50 calls
// and its growth over the next 450: with the history cleared every 10
// turns (what the server itself holds per call: a leak shows here), and in
// one growing history (that history's own cost). The figures are in
// docs/performance.md.
func BenchmarkSoakToolCalls(b *testing.B) {
	for _, clear := range []bool{true, false} {
		name := map[bool]string{true: "cleared-every-10", false: "one-history"}[clear]
		b.Run(name, func(b *testing.B) {
			var at50, growth float64
			for range b.N {
				a, g := soak(b, 500, clear)
				at50 += a
				growth += g
			}
			b.ReportMetric(at50/1024/float64(b.N), "MiB-RSS-at-50")
			b.ReportMetric(growth/1024/float64(b.N), "MiB-growth-50-to-500")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// benchSession starts a server whose provider is a fake model (its
// [providers.fake] table gets extra), and one auto-approving session in a
// new workspace. The caller stops the server.
func benchSession(b *testing.B, extra string) (*fo.Server, *benchServer, string) {
	f := fo.Start(b)
	home := b.TempDir()
	cfg := fmt.Sprintf("[provider]\nactive = \"fake\"\n[providers.fake]\nkind = \"openai\"\nbase_url = %q\napi_key = \"k\"\nmodel = \"m\"\n%s", f.URL(), extra)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	s := startBench(b, home)
	s.send(b, &protocol.Initialize{RequestID: "1", ProtocolVersion: 3, Client: protocol.ClientInfo{Name: "bench"}})
	s.until(b, protocol.TypeInitialized)
	s.send(b, &protocol.SessionStart{RequestID: "2", Cwd: b.TempDir(), AutoApprove: true})
	return f, s, sessionID(s.until(b, protocol.TypeSessionStarted))
}

// soak runs calls bash calls in one session and returns VmRSS (KiB) after
// 50 calls and its growth from there to the end.
func soak(b *testing.B, calls int, clear bool) (at50, growth float64) {
	f, s, sid := benchSession(b, "context_max_tokens = 1000000\n")
	defer s.stop()
	for i := range calls {
		if i == 50 {
			at50 = vmRSS(b, s.cmd.Process.Pid)
		}
		f.Enqueue(fo.Script(fo.ToolCall("b1", "bash", `{"command":"echo hi"}`)), fo.Script(fo.Text("ok")))
		s.send(b, &protocol.TurnStart{RequestID: "t" + strconv.Itoa(i), SessionID: sid, Prompt: "go"})
		s.until(b, protocol.TypeTurnCompleted)
		if clear && i%10 == 9 {
			s.send(b, &protocol.SessionClear{RequestID: "c" + strconv.Itoa(i), SessionID: sid})
			s.until(b, protocol.TypeSessionCleared)
		}
	}
	return at50, vmRSS(b, s.cmd.Process.Pid) - at50
}

// BenchmarkToolRoundTrip measures what one tool round trip (the model asks
// for a bash call, the call runs, its result goes back in the next model
// request) adds beyond the command itself, through a real server and the
// fake model on loopback: per iteration a text-only turn (one model
// request), a turn with one `bash` call of `true` (two model requests) and
// `bash -c true` started directly. ms-overhead is the tool turn less the
// text turn less the bare command: the tool cycle's own cost (issue 23's
// target: at most 10 ms). The session's first call, which takes the
// login-shell snapshot, runs before the timing.
func BenchmarkToolRoundTrip(b *testing.B) {
	f, s, sid := benchSession(b, "")
	defer s.stop()
	seq := 0
	turn := func(steps ...fo.Reply) time.Duration {
		f.Enqueue(steps...)
		seq++
		t0 := time.Now()
		s.send(b, &protocol.TurnStart{RequestID: "t" + strconv.Itoa(seq), SessionID: sid, Prompt: "go"})
		s.until(b, protocol.TypeTurnCompleted)
		return time.Since(t0)
	}
	toolTurn := func() time.Duration {
		return turn(fo.Script(fo.ToolCall("b1", "bash", `{"command":"true"}`)), fo.Script(fo.Text("ok")))
	}
	toolTurn() // the snapshot
	var text, tool, bare time.Duration
	b.ResetTimer()
	for range b.N {
		text += turn(fo.Script(fo.Text("ok")))
		tool += toolTurn()
		t0 := time.Now()
		if err := exec.Command("/bin/bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		bare += time.Since(t0)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
	b.ReportMetric(ms(text), "ms/text-turn")
	b.ReportMetric(ms(tool), "ms/tool-turn")
	b.ReportMetric(ms(bare), "ms/bash-true")
	b.ReportMetric(ms(tool-text-bare), "ms-overhead")
	b.ReportMetric(0, "ns/op")
}
