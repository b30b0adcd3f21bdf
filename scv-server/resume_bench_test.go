package main_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/sessionstore"
	"github.com/scv-cli/scv/shared/protocol"
)

// BenchmarkResumeSession2000Turns resumes a 2,000-turn session (a 6.3 MiB
// log; 6,000 transcript items) in a scv-server process, from writing the
// session.start with resume to reading the queue.snapshot after the last
// session.replay frame: loading the log, repairing it, and encoding and
// sending the transcript. Each iteration is a new server process (started
// outside the timer). Target: under 100 ms.
func BenchmarkResumeSession2000Turns(b *testing.B) {
	home, dir := b.TempDir(), b.TempDir()
	cwd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		b.Fatal(err)
	}
	sid := uuid.NewString()
	l, err := sessionstore.New(filepath.Join(home, "state")).Create(sessionstore.Meta{ID: sid, Cwd: cwd, Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	output := strings.Repeat("ok  \tgithub.com/example/project/pkg\t0.123s\n", 48)[:2048]
	reply := strings.Repeat("The tests pass now; the change was in the parser. ", 8)
	for i := range 2000 {
		tid, callID := fmt.Sprintf("turn-%d", i), fmt.Sprintf("call_%d", i)
		prompt := fmt.Sprintf("Step %d: run the tests of the parser package and fix whatever fails, then explain.", i)
		for _, err := range []error{
			l.TurnStarted(tid, "r", nil, prompt),
			l.Message(tid, provider.Message{Role: provider.RoleUser, Content: prompt}, false),
			l.Message(tid, provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: callID, Name: "bash", Arguments: `{"command":"go test ./parser/..."}`}}}, false),
			l.Message(tid, provider.Message{Role: provider.RoleTool, ToolCallID: callID, Content: output}, false),
			l.Message(tid, provider.Message{Role: provider.RoleAssistant, Content: reply}, false),
			l.TurnEnded(tid, sessionstore.End{Outcome: sessionstore.OutcomeCompleted, Steps: 2, Usage: &protocol.Usage{InputTokens: 1000, OutputTokens: 100}}),
		} {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		s := startBench(b, home)
		s.send(b, &protocol.Initialize{RequestID: "1", ProtocolVersion: 3, Client: protocol.ClientInfo{Name: "bench"}})
		s.until(b, protocol.TypeInitialized)
		b.StartTimer()
		s.send(b, &protocol.SessionStart{RequestID: "2", Cwd: dir, Resume: sid})
		if !strings.Contains(string(s.until(b, protocol.TypeSessionStarted)), `"resumed":true`) {
			b.Fatal("the session was not resumed")
		}
		skipUntil(b, s, protocol.TypeQueueSnapshot)
		b.StopTimer()
		s.stop()
		b.StartTimer()
	}
}

// skipUntil reads lines of any length up to one whose type is kind (replay
// frames are longer than the benchmark reader's buffer).
func skipUntil(b *testing.B, s *benchServer, kind string) {
	needle := []byte(`{"type":"` + kind + `"`)
	start := true
	for {
		line, err := s.out.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			b.Fatalf("reading: %v", err)
		}
		if start && bytes.HasPrefix(line, needle) {
			return
		}
		start = err == nil
	}
}
