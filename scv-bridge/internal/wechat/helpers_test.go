package wechat

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-bridge/internal/wechat/ilinktest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newFake starts a fake iLink and a client of it.
func newFake(t testing.TB, mod func(*Options)) (*ilinktest.Server, *Client) {
	t.Helper()
	fs := ilinktest.New()
	t.Cleanup(fs.Close)
	t.Cleanup(func() {
		if errs := fs.HeaderErrors(); len(errs) != 0 {
			t.Errorf("the client sent wrong bot headers: %v", errs)
		}
	})
	fs.SetHold(100 * time.Millisecond)
	o := Options{Token: ilinktest.BotToken, BaseURL: fs.URL, CDNURL: fs.CDNURL(), HTTPClient: fs.Client(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if mod != nil {
		mod(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return fs, c
}

// inbound delivers a text message from peer and lets the client see it
// (its context token and the renewed budget), as the core's Poll does.
func inbound(t *testing.T, fs *ilinktest.Server, c *Client, cursor *string, id, peer, text string) {
	t.Helper()
	fs.Deliver(`{"seq":1,"message_id":"` + id + `","from_user_id":"` + peer + `","to_user_id":"` + ilinktest.BotID +
		`","message_type":1,"message_state":2,"context_token":"ctx-` + id + `","item_list":[{"type":1,"text_item":{"text":"` + text + `"}}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Poll(ctx, *cursor, func(_ context.Context, b Batch) error {
		*cursor = b.Cursor
		cancel()
		return nil
	})
	if err != context.Canceled {
		t.Fatalf("Poll: %v", err)
	}
}
