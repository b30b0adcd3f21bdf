package scvconn

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/core"
	"github.com/scv-cli/scv/scv-bridge/internal/store"
	"github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit/bins"
)

// BenchmarkInboundToModel measures an inbound message from Accept (stored
// before the acknowledgement) to the model's request, through the core and
// a real scv-server with a 1 ms quiet window, plus the scripted answer's
// way back into the outbox (each message is its own turn).
func BenchmarkInboundToModel(b *testing.B) {
	model := fakeopenai.Start(b)
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(model.Config("")), 0o600); err != nil {
		b.Fatal(err)
	}
	conn, err := Start(context.Background(), bins.Need(b, "scv-server"), append(os.Environ(), "SCV_HOME="+dir), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	st, err := store.Open(filepath.Join(dir, "bridge.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	c := core.New(core.Config{Platform: "feishu", Account: "work", Cwd: dir, Quiet: time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, st, conn, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); c.Wait() }()
	if err := c.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		model.Enqueue(fakeopenai.Script(fakeopenai.Text("ok")))
		if err := c.Accept(core.Message{ID: "m" + strconv.Itoa(i), Conversation: "oc", Sender: "ou", Direct: true, Text: "hi"}); err != nil {
			b.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		_, err := model.WaitRequests(wctx, i)
		wcancel()
		if err != nil {
			b.Fatal(err)
		}
		// Let the turn end before the next message, so each is a turn.
		for n := 0; ; n++ {
			rows, _ := st.Rows("")
			if len(rows) >= i {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}
