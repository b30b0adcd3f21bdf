package servertest_test

import (
	"strconv"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

// BenchmarkTurnInProcess is BenchmarkTurn10kDeltas without the process
// boundary, for profiling the runtime's delta path.
func BenchmarkTurnInProcess(b *testing.B) {
	f := fo.Start(b)
	s := st.Start(b, st.Options{Config: st.FakeProviderConfig(f.URL(), "")})
	c := s.Client
	c.Init(3)
	sid := c.StartSession(b.TempDir(), 3).SessionID
	for range b.N {
		f.Enqueue(fo.Script(fo.Repeat(10000, "tok ")))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c.Send(&protocol.TurnStart{RequestID: strconv.Itoa(i), SessionID: sid, Prompt: "go"})
		st.Until[*protocol.TurnCompleted](c)
	}
}
