package appserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"testing"
)

// BenchmarkThreadRead10k answers thread/read of a stored thread of
// 10,000 items: reading its record, decoding and encoding the response.
func BenchmarkThreadRead10k(b *testing.B) {
	reg := NewRegistry(nil, b.TempDir(), slog.New(slog.DiscardHandler))
	rec := &record{Thread: Thread{ThreadID: "t1", AgentKey: DefaultAgentKey, Cwd: "/w"}}
	for i := 0; i < 10000; i++ {
		payload, _ := json.Marshal(AgentMessagePayload{Text: fmt.Sprintf("message %d of the thread, of a typical length for a reply", i)})
		rec.Items = append(rec.Items, Item{ItemID: fmt.Sprintf("item_%d", i+1), ThreadID: "t1", TurnID: "u1", Type: ItemAgentMessage,
			Status: ItemCompleted, Payload: payload, CreatedAt: 1, UpdatedAt: 1})
	}
	reg.save(rec)
	c := &conn{opts: Options{Threads: reg}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := c.threadRead(Message{}, ResumeParams{ThreadID: "t1"})
		if err != nil {
			b.Fatal(err)
		}
		if r := res.(ThreadReadResult); len(r.Items) != 10000 {
			b.Fatalf("%d items", len(r.Items))
		}
		_ = responseLine(json.RawMessage("1"), res, nil)
	}
}

// BenchmarkThreadRead10kLive answers thread/read of a live thread of
// 10,000 items (the projector's record, no disk).
func BenchmarkThreadRead10kLive(b *testing.B) {
	rec := &record{Thread: Thread{ThreadID: "t1"}}
	for i := 0; i < 10000; i++ {
		payload, _ := json.Marshal(AgentMessagePayload{Text: fmt.Sprintf("message %d of the thread, of a typical length for a reply", i)})
		rec.Items = append(rec.Items, Item{ItemID: fmt.Sprintf("item_%d", i+1), ThreadID: "t1", Type: ItemAgentMessage, Status: ItemCompleted, Payload: payload})
	}
	p := &projector{rec: rec}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		_ = responseLine(json.RawMessage("1"), p.read(), nil)
	}
}
