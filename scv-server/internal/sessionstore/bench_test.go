package sessionstore_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/sessionstore"
	"github.com/scv-cli/scv/shared/protocol"
)

// writeTurns writes a session of n turns, each a prompt, a tool call with
// a 2 KiB result and a reply of a few hundred bytes: about 3 KiB a turn.
func writeTurns(tb testing.TB, st *sessionstore.Store, n int) string {
	tb.Helper()
	l, err := st.Create(sessionstore.Meta{ID: uuid.NewString(), Cwd: ws, Model: "fake-model"})
	if err != nil {
		tb.Fatal(err)
	}
	output := strings.Repeat("ok  \tgithub.com/example/project/pkg\t0.123s\n", 48)[:2048]
	reply := strings.Repeat("The tests pass now; the change was in the parser. ", 8)
	for i := range n {
		tid := fmt.Sprintf("turn-%d", i)
		prompt := fmt.Sprintf("Step %d: run the tests of the parser package and fix whatever fails, then explain.", i)
		callID := fmt.Sprintf("call_%d", i)
		for _, err := range []error{
			l.TurnStarted(tid, "r", nil, prompt),
			l.Message(tid, provider.Message{Role: provider.RoleUser, Content: prompt}, false),
			l.Message(tid, provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: callID, Name: "bash", Arguments: `{"command":"go test ./parser/..."}`}}}, false),
			l.Message(tid, provider.Message{Role: provider.RoleTool, ToolCallID: callID, Content: output}, false),
			l.Message(tid, provider.Message{Role: provider.RoleAssistant, Content: reply}, false),
			l.TurnEnded(tid, sessionstore.End{Outcome: sessionstore.OutcomeCompleted, Steps: 2, Usage: &protocol.Usage{InputTokens: 1000, OutputTokens: 100}}),
		} {
			if err != nil {
				tb.Fatal(err)
			}
		}
	}
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	return strings.TrimSuffix(strings.TrimPrefix(l.Path(), st.Dir()+"/"), "/"+sessionstore.LogName)
}

// BenchmarkResume2000Turns opens, loads and resumes a 2,000-turn session
// (about 6 MiB of log), as session.start with resume does, then closes it.
// Target: under 100 ms.
func BenchmarkResume2000Turns(b *testing.B) {
	st := sessionstore.New(b.TempDir())
	sid := writeTurns(b, st, 2000)
	fi, err := os.Stat(st.LogPath(sid))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		l, s, err := st.Open(sid)
		if err != nil {
			b.Fatal(err)
		}
		if len(s.History) < 8000 {
			b.Fatalf("history of %d messages", len(s.History))
		}
		if err := l.Resume("fake-model"); err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "MiB-log")
}

// BenchmarkList200Sessions lists a workspace among 200 stored sessions.
func BenchmarkList200Sessions(b *testing.B) {
	st := sessionstore.New(b.TempDir())
	for range 200 {
		writeTurns(b, st, 1)
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := st.List(ws, 20)
		if err != nil || len(got) != 20 {
			b.Fatalf("List = %d, %v", len(got), err)
		}
	}
}

// BenchmarkSessionStartToFirstRequest is what the store does between
// session.start and a turn's first model request: create the log, record
// the turn's start and write the summary (issue 23: no fsync on this path).
// The turn's end and the close, with their fsyncs, are not timed.
func BenchmarkSessionStartToFirstRequest(b *testing.B) {
	st := sessionstore.New(b.TempDir())
	b.ReportAllocs()
	for range b.N {
		l, err := st.Create(sessionstore.Meta{ID: uuid.NewString(), Cwd: ws, Model: "fake-model"})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.TurnStarted("t1", "r1", nil, "Reply with a short greeting."); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := l.TurnEnded("t1", sessionstore.End{Outcome: sessionstore.OutcomeCompleted}); err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
