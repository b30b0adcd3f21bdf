package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
)

// BenchmarkOutboxThroughput measures one row through the outbox: enqueue
// (one fsynced transaction), send (a no-op platform) and the record of it.
func BenchmarkOutboxThroughput(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "b.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	d := NewDeliverer(s, func(context.Context, Outbound) (string, error) { return "om", nil })
	payload := json.RawMessage(`"a reply of ordinary length for a phone screen"`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Enqueue("ou_owner", "text", payload); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Pass(context.Background()); err != nil {
			b.Fatal(err)
		}
		if _, err := s.PruneOutbox(0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInboundPersist measures storing one inbound event before its
// acknowledgement and marking it processed.
func BenchmarkInboundPersist(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "b.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	payload := json.RawMessage(`{"text":"hello"}`)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		id := "om_" + strconv.Itoa(i)
		if _, err := s.PutInbound(Inbound{ID: id, Conversation: "c", Payload: payload}); err != nil {
			b.Fatal(err)
		}
		if err := s.MarkProcessed(id); err != nil {
			b.Fatal(err)
		}
	}
}
