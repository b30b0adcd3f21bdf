package loop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/protocol"
)

// retryingProvider tells its handler of one retry before it answers.
type retryingProvider struct{}

func (*retryingProvider) Name() string            { return "retrying" }
func (*retryingProvider) Model() string           { return "m" }
func (*retryingProvider) ContextMaxTokens() int64 { return 1 << 30 }
func (*retryingProvider) Stream(_ context.Context, _ provider.Request, h provider.Handler) (*provider.Response, error) {
	if rh, ok := h.(provider.RetryHandler); ok {
		rh.OnRetry(provider.Retry{Attempt: 2, MaxAttempts: 5, Wait: 4 * time.Second, Status: 429, Message: "p: slow down"})
	}
	return &provider.Response{Content: "ok"}, nil
}

// eventSink records every event.
type eventSink struct {
	mu  sync.Mutex
	evs []protocol.TurnEvent
}

func (s *eventSink) Emit(_ context.Context, ev protocol.TurnEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = append(s.evs, ev)
	return nil
}

// TestRetriesEmitted: a provider's retry becomes turn.retrying in a session
// that takes it (v4), and nothing in one that does not.
func TestRetriesEmitted(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		sink := &eventSink{}
		out := Run(context.Background(), Config{Provider: &retryingProvider{}, Retries: on}, nil, "hi", sink)
		if out.Err != nil {
			t.Fatalf("Run: %v", out.Err)
		}
		var got []*protocol.TurnRetrying
		for _, ev := range sink.evs {
			if r, ok := ev.(*protocol.TurnRetrying); ok {
				got = append(got, r)
			}
		}
		switch {
		case on && (len(got) != 1 || got[0].Attempt != 2 || got[0].MaxAttempts != 5 || got[0].DelayMS != 4000 || got[0].Status != 429 || got[0].Message != "p: slow down"):
			t.Errorf("Retries on: turn.retrying events %+v, want one with the provider's retry", got)
		case !on && len(got) != 0:
			t.Errorf("Retries off: %d turn.retrying events, want none", len(got))
		}
	}
}
