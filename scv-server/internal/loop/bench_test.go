package loop_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/loop"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/protocol"
)

// instant is a provider that answers at once, keeping the last request.
type instant struct{ last provider.Request }

func (*instant) Name() string            { return "instant" }
func (*instant) Model() string           { return "m" }
func (*instant) ContextMaxTokens() int64 { return 1 << 30 }
func (p *instant) Stream(_ context.Context, req provider.Request, _ provider.Handler) (*provider.Response, error) {
	p.last = req
	return &provider.Response{Content: "ok"}, nil
}

type discard struct{}

func (discard) Emit(context.Context, protocol.TurnEvent) error { return nil }

// history2000 is a session of 2,000 turns, each a prompt, a tool call with
// a 2 KiB result and a reply: 8,000 messages, about 6 MiB.
func history2000() []provider.Message {
	output := strings.Repeat("ok  \tgithub.com/example/project/pkg\t0.123s\n", 48)[:2048]
	reply := strings.Repeat("The tests pass now; the change was in the parser. ", 8)
	h := make([]provider.Message, 0, 8000)
	for i := range 2000 {
		id := fmt.Sprintf("call_%d", i)
		h = append(h,
			provider.Message{Role: provider.RoleUser, Content: fmt.Sprintf("Step %d: run the tests of the parser package and fix whatever fails.", i)},
			provider.Message{Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: id, Name: "bash", Arguments: `{"command":"go test ./parser/..."}`}}},
			provider.Message{Role: provider.RoleTool, ToolCallID: id, Content: strings.Clone(output)},
			provider.Message{Role: provider.RoleAssistant, Content: strings.Clone(reply)},
		)
	}
	return h
}

// BenchmarkBuildRequest2000Turns is one model step on a 2,000-turn history:
// the loop sizes the request (with the session's running token estimate,
// as the session passes it), builds provider.Request from the history and
// the turn, and takes the reply of a provider that answers at once. Target:
// under 2 ms. history-MiB is the heap the history itself holds.
func BenchmarkBuildRequest2000Turns(b *testing.B) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	history := history2000()
	runtime.GC()
	runtime.ReadMemStats(&after)
	p := &instant{}
	cfg := loop.Config{Provider: p, Model: "m", System: "You are SCV.", ContextMaxTokens: 1 << 30, HistoryTokens: 2_000_000}
	b.ReportAllocs()
	for b.Loop() {
		out := loop.Run(context.Background(), cfg, history, "next", discard{})
		if out.Err != nil || len(p.last.Messages) != len(history)+1 {
			b.Fatalf("outcome %+v, %d messages", out.Err, len(p.last.Messages))
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "history-MiB")
	runtime.KeepAlive(history)
}
