package wechat

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/wechat/ilinktest"
)

const peer = "o9cq-peer@im.wechat"

func TestGetUpdatesOldCursorRedelivers(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	ctx := context.Background()
	fs.Deliver(`{"message_id":1,"from_user_id":"` + peer + `","message_type":1,"context_token":"t1","item_list":[{"type":1,"text_item":{"text":"one"}}]}`)
	fs.Deliver(`{"message_id":2,"from_user_id":"` + ilinktest.BotID + `","message_type":2,"item_list":[{"type":1,"text_item":{"text":"bot echo"}}]}`)
	fs.Deliver(`{"message_id":null,"message_type":1}`)
	b, err := c.GetUpdates(ctx, "")
	if err != nil || len(b.Messages) != 1 || b.Messages[0].Text() != "one" || b.Skipped != 1 || b.Cursor == "" {
		t.Fatalf("first batch %+v, %v (the bot's own message is dropped, no id skipped)", b, err)
	}
	again, err := c.GetUpdates(ctx, "")
	if err != nil || len(again.Messages) != 1 || again.Messages[0].ID != "1" || again.Cursor != b.Cursor {
		t.Fatalf("an old cursor must get the same batch: %+v, %v", again, err)
	}
	idle, err := c.GetUpdates(ctx, b.Cursor)
	if err != nil || len(idle.Messages) != 0 || idle.Cursor != b.Cursor {
		t.Fatalf("an idle poll %+v, %v", idle, err)
	}
}

func TestPollAdvancesOnlyAfterTheBatchIsStored(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.Deliver(`{"message_id":1,"from_user_id":"` + peer + `","message_type":1,"context_token":"t1","item_list":[{"type":1,"text_item":{"text":"one"}}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	storeFailed := errors.New("disk full")
	err := c.Poll(ctx, "", func(context.Context, Batch) error { return storeFailed })
	if !errors.Is(err, storeFailed) {
		t.Fatalf("Poll: %v", err)
	}
	if c.ContextToken(peer) != "" || c.Budget().Remaining(peer, ClassFinal) != DefaultSendBudget {
		t.Error("an unstored batch must not change the client's state")
	}
	// The core restarts from its stored cursor ("") and gets the batch again.
	stored := map[string]bool{}
	var cursor string
	pctx, pcancel := context.WithCancel(ctx)
	defer pcancel()
	fs.Deliver(`{"message_id":2,"from_user_id":"` + peer + `","message_type":1,"context_token":"t2","item_list":[{"type":1,"text_item":{"text":"two"}}]}`)
	err = c.Poll(pctx, "", func(_ context.Context, b Batch) error {
		for _, m := range b.Messages {
			stored[m.ID] = true
		}
		cursor = b.Cursor
		pcancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || !stored["1"] || !stored["2"] || cursor == "" {
		t.Fatalf("Poll: %v, stored %v, cursor %q", err, stored, cursor)
	}
	if c.ContextToken(peer) != "t2" {
		t.Errorf("context token %q, want the latest", c.ContextToken(peer))
	}
}

func TestPollSessionExpired(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.ExpireSession()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Poll(ctx, "", func(context.Context, Batch) error { return nil })
	if !errors.Is(err, ErrSessionExpired) {
		t.Fatalf("Poll: %v", err)
	}
}

func TestPollRetriesServerErrors(t *testing.T) {
	t.Parallel()
	// A token the fake refuses: every poll fails (ret -1).
	fs := ilinktest.New()
	defer fs.Close()
	c, err := New(Options{Token: "wrong", BaseURL: fs.URL, HTTPClient: fs.Client()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	if err := c.Poll(ctx, "", func(context.Context, Batch) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Poll must keep retrying until its context ends: %v", err)
	}
	if n := len(fs.HeaderErrors()); n != 2 {
		t.Errorf("%d polls in 1.5 s, want 2 (retry after 1 s)", n)
	}
}

// TestLiveSmoke polls a real account once; it runs only with ILINK_TOKEN
// (and ILINK_BASE_URL when the login named another host).
func TestLiveSmoke(t *testing.T) {
	tok := os.Getenv("ILINK_TOKEN")
	if tok == "" {
		t.Skip("set ILINK_TOKEN to poll a real WeChat bot once")
	}
	c, err := New(Options{Token: tok, BaseURL: os.Getenv("ILINK_BASE_URL"), PollTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.GetUpdates(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("live: %d messages, cursor of %d bytes", len(b.Messages), len(b.Cursor))
}
