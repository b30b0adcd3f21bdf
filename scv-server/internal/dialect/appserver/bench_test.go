package appserver_test

import (
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/dialect/appserver"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
)

// BenchmarkNotifications streams b.N model deltas through the whole
// facade (session → projector → outbox → writer → client) and reports
// the notifications the client received per second.
func BenchmarkNotifications(b *testing.B) {
	h := start(b, options{})
	h.c.Trace = nil
	h.init()
	tid := h.thread()
	h.f.Enqueue(fo.Script(fo.Repeat(b.N, "x")))
	b.ReportAllocs()
	b.ResetTimer()
	h.call("turn/start", appserver.TurnStartParams{ThreadID: tid, Input: text("stream")}, nil)
	msgs := h.until("turn/completed")
	b.StopTimer()
	b.ReportMetric(float64(len(msgs))/b.Elapsed().Seconds(), "notifications/s")
}
