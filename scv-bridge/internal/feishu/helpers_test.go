package feishu

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-bridge/internal/feishu/feishutest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newFake starts a fake Feishu and a client of it with quick retries.
func newFake(t testing.TB, mod func(*Options)) (*feishutest.Server, *Client) {
	t.Helper()
	fs := feishutest.New()
	t.Cleanup(fs.Close)
	// Runs before Close: whatever the test did, the client kept to the
	// protocol (service id on every frame, acks echoing delivered frames).
	t.Cleanup(func() {
		if errs := fs.ProtocolErrors(); len(errs) != 0 {
			t.Errorf("the client broke the long-connection protocol: %v", errs)
		}
	})
	o := Options{AppID: feishutest.AppID, AppSecret: feishutest.AppSecret, BaseURL: fs.URL,
		HTTPClient: fs.Client(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		MinStreamInterval: 50 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return fs, c
}

// listen runs c.Listen in the background until the test ends and returns
// a function that stops it and returns Listen's error.
func listen(t testing.TB, c *Client, o ListenOptions) func() error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Listen(ctx, o) }()
	var stopped bool
	var err error
	stop := func() error {
		if !stopped {
			stopped = true
			cancel()
			err = <-done
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}
