package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/feishu/feishutest"
	"github.com/scv-cli/scv/shared/testkit"
)

// recorder is a Handler that keeps what it was given.
type recorder struct {
	mu     sync.Mutex
	events []Event
	fail   int           // fail this many calls first
	block  chan struct{} // when set, each call waits for it
}

func (r *recorder) handle(ctx context.Context, ev Event) (*CallbackResponse, error) {
	if r.block != nil {
		select {
		case <-r.block:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail > 0 {
		r.fail--
		return nil, errors.New("store unavailable")
	}
	r.events = append(r.events, ev)
	if a, ok := ev.(*CardAction); ok {
		if _, allow, err := a.Approval("ou_owner"); err == nil && allow {
			return &CallbackResponse{Toast: &Toast{Type: "success", Content: "Allowed"}}, nil
		}
		return &CallbackResponse{Toast: &Toast{Type: "error", Content: "Only the owner can answer"}}, nil
	}
	return nil, nil
}

func (r *recorder) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.events) }

func (r *recorder) get(i int) Event { r.mu.Lock(); defer r.mu.Unlock(); return r.events[i] }

// connect runs Listen with o and waits for its connection.
func connect(t *testing.T, fs *feishutest.Server, c *Client, o ListenOptions) {
	t.Helper()
	listen(t, c, o)
	testkit.Eventually(t, 5*time.Second, "a connection", func() bool { return fs.Live() == 1 })
}

// An event split into chunks is put together, given to the handler once,
// and acknowledged with code 200 only after the handler returned.
func TestListenChunkedEventAckAfterHandler(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetChunkSize(64)
	rec := &recorder{block: make(chan struct{})}
	connect(t, fs, c, ListenOptions{Handler: rec.handle})

	payload := feishutest.MessageEvent("om_1", "oc_1", ChatP2P, "ou_owner", "text", map[string]string{"text": strings.Repeat("hello ", 40)})
	id := fs.PushEvent(payload)
	time.Sleep(300 * time.Millisecond)
	if fs.Acked(id) || len(fs.Acks()) != 0 {
		t.Fatal("the event was acknowledged before the handler returned")
	}
	close(rec.block)
	testkit.Eventually(t, 5*time.Second, "the ack", func() bool { return fs.Acked(id) })
	if rec.count() != 1 || fs.Deliveries(id) != 1 {
		t.Fatalf("handled %d times, delivered %d times", rec.count(), fs.Deliveries(id))
	}
	m := rec.get(0).(*MessageEvent)
	if m.MessageID != "om_1" || m.Text != strings.Repeat("hello ", 40) || m.SenderOpenID != "ou_owner" || m.ChatType != ChatP2P {
		t.Fatalf("event = %+v", m)
	}
	ack := fs.Acks()[0]
	if ack.Code != 200 || ack.BizRT == "" {
		t.Fatalf("ack = %+v", ack)
	}
}

// A handler failure answers code 500; the platform delivers the event
// again and the second delivery is acknowledged.
func TestListenHandlerErrorRedelivers(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetAckTimeout(300*time.Millisecond, 4)
	rec := &recorder{fail: 1}
	connect(t, fs, c, ListenOptions{Handler: rec.handle})
	id := fs.PushEvent(feishutest.MessageEvent("om_2", "oc_1", ChatP2P, "ou_x", "text", map[string]string{"text": "hi"}))
	testkit.Eventually(t, 5*time.Second, "the ack", func() bool { return fs.Acked(id) })
	acks := fs.Acks()
	if len(acks) != 2 || acks[0].Code != 500 || acks[1].Code != 200 || fs.Deliveries(id) != 2 || rec.count() != 1 {
		t.Fatalf("acks %+v, deliveries %d, handled %d", acks, fs.Deliveries(id), rec.count())
	}
}

// An event pushed while no client is connected, or not acknowledged
// before the connection dropped, arrives after the reconnection.
func TestListenReconnectsAndGetsRedelivery(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetAckTimeout(200*time.Millisecond, 20)
	rec := &recorder{}
	connected := make(chan struct{}, 10)
	listen(t, c, ListenOptions{Handler: rec.handle, OnConnected: func() { connected <- struct{}{} }})
	<-connected
	// The client may see the handshake done before the fake has counted
	// the connection.
	testkit.Eventually(t, 5*time.Second, "the fake's side of the connection", func() bool { return fs.Live() == 1 })
	fs.DropConnections()
	id := fs.PushEvent(feishutest.MessageEvent("om_3", "oc_1", ChatGroup, "ou_x", "text", map[string]string{"text": "@_user_1 hi"}))
	select {
	case <-connected:
	case <-time.After(5 * time.Second):
		t.Fatal("no reconnection")
	}
	testkit.Eventually(t, 5*time.Second, "the ack", func() bool { return fs.Acked(id) })
	if fs.Connections() != 2 || rec.count() != 1 {
		t.Fatalf("connections %d, handled %d", fs.Connections(), rec.count())
	}
}

// Pings go at the interval the platform set, and a pong's client config
// replaces it.
func TestListenPingIntervalFromPong(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetClientConfig(feishutest.ClientConfig{ReconnectCount: -1, ReconnectInterval: 1, PingInterval: 1})
	listen(t, c, ListenOptions{Handler: (&recorder{}).handle})
	testkit.Eventually(t, 3*time.Second, "the first ping", func() bool { return fs.Pings() >= 1 })
	fs.SetClientConfig(feishutest.ClientConfig{ReconnectCount: -1, ReconnectInterval: 1, PingInterval: 60})
	testkit.Eventually(t, 3*time.Second, "the second ping", func() bool { return fs.Pings() >= 2 })
	time.Sleep(1500 * time.Millisecond)
	if n := fs.Pings(); n != 2 {
		t.Fatalf("%d pings; the pong's 60 s interval was not applied", n)
	}
}

// A card click reaches the handler and its response (the toast) goes
// back in the ack; only the owner's click counts.
func TestListenCardActionResponse(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	rec := &recorder{}
	connect(t, fs, c, ListenOptions{Handler: rec.handle})
	for _, who := range []string{"ou_owner", "ou_stranger"} {
		id := fs.PushCard(feishutest.CardActionEvent(who, map[string]string{"req": "r1", "d": "allow"}, "om_card", "oc_1"))
		testkit.Eventually(t, 5*time.Second, "the ack", func() bool { return fs.Acked(id) })
	}
	acks := fs.Acks()
	var toasts []string
	for _, a := range acks {
		var r CallbackResponse
		if err := json.Unmarshal(a.Data, &r); err != nil || r.Toast == nil {
			t.Fatalf("ack data %q: %v", a.Data, err)
		}
		toasts = append(toasts, r.Toast.Content)
	}
	if strings.Join(toasts, "|") != "Allowed|Only the owner can answer" {
		t.Fatalf("toasts = %q", toasts)
	}
}

func TestListenBusyEndpointIsRetried(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetEndpointBusy(2)
	listen(t, c, ListenOptions{Handler: (&recorder{}).handle})
	testkit.Eventually(t, 10*time.Second, "a connection after two busy answers", func() bool { return fs.Live() == 1 })
}

func TestListenHandshakeRefusals(t *testing.T) {
	t.Parallel()
	for _, c2 := range []struct {
		hs   feishutest.HandshakeFailure
		want string
	}{
		{feishutest.HandshakeFailure{Status: 514, Msg: "auth failed"}, "authentication failed"},
		{feishutest.HandshakeFailure{Status: 403, Msg: "forbidden"}, "self-built app"},
	} {
		fs, c := newFake(t, nil)
		fs.SetHandshakeFailure(&c2.hs)
		var err error
		done := make(chan struct{})
		go func() { err = c.Listen(t.Context(), ListenOptions{Handler: (&recorder{}).handle}); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Listen kept retrying a refused handshake")
		}
		var ce *ConnectionError
		if !errors.As(err, &ce) || ce.Status != c2.hs.Status || !strings.Contains(err.Error(), c2.want) {
			t.Fatalf("status %d: err = %v", c2.hs.Status, err)
		}
	}
}

func TestListenBadCredentialsStop(t *testing.T) {
	t.Parallel()
	_, c := newFake(t, func(o *Options) { o.AppSecret = "wrong-secret" })
	err := c.Listen(t.Context(), ListenOptions{Handler: (&recorder{}).handle})
	var ce *ConnectionError
	if !errors.As(err, &ce) || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("err = %v, want a ConnectionError without the secret", err)
	}
}

func TestListenTooManyConnectionsIsRetried(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetHandshakeFailure(&feishutest.HandshakeFailure{Status: 514, AuthCode: 1000040350, Msg: "exceed conn limit"})
	listen(t, c, ListenOptions{Handler: (&recorder{}).handle})
	time.Sleep(300 * time.Millisecond)
	fs.SetHandshakeFailure(nil)
	testkit.Eventually(t, 10*time.Second, "a connection once others closed", func() bool { return fs.Live() == 1 })
}

func TestReconnectWait(t *testing.T) {
	t.Parallel()
	cc := clientConfig{ReconnectInterval: 120, ReconnectNonce: 30}
	for range 50 {
		if w := reconnectWait(cc, 0); w < 0 || w >= 30*time.Second {
			t.Fatalf("after a drop: %v", w)
		}
		if w := reconnectWait(cc, 3); w < 4*time.Second || w > 6*time.Second {
			t.Fatalf("third failure: %v", w)
		}
		if w := reconnectWait(cc, 40); w < 120*time.Second || w > 180*time.Second {
			t.Fatalf("many failures: %v", w)
		}
	}
}

// A handler slower than the platform's ack window sees the event again:
// the core deduplicates on MessageID and the event id, which are the same.
func TestListenLateAckRedeliversSameIDs(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetAckTimeout(200*time.Millisecond, 2)
	var mu sync.Mutex
	var seen []*MessageEvent
	slow := func(ctx context.Context, ev Event) (*CallbackResponse, error) {
		mu.Lock()
		seen = append(seen, ev.(*MessageEvent))
		first := len(seen) == 1
		mu.Unlock()
		if first {
			time.Sleep(400 * time.Millisecond)
		}
		return nil, nil
	}
	connect(t, fs, c, ListenOptions{Handler: slow})
	id := fs.PushEvent(feishutest.MessageEvent("om_9", "oc_1", ChatP2P, "ou_x", "text", map[string]string{"text": "hi"}))
	testkit.Eventually(t, 5*time.Second, "two deliveries handled", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 2 })
	testkit.Eventually(t, 5*time.Second, "the ack", func() bool { return fs.Acked(id) })
	mu.Lock()
	defer mu.Unlock()
	if seen[0].MessageID != seen[1].MessageID || seen[0].Header.EventID != seen[1].Header.EventID {
		t.Fatalf("a redelivery changed the ids: %+v / %+v", seen[0], seen[1])
	}
}

// The queue in front of the handler is bounded: an event arriving when it
// is full is not acknowledged, and the platform delivers it again later.
func TestListenQueueBounded(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetAckTimeout(time.Second, 5)
	rec := &recorder{block: make(chan struct{})}
	connect(t, fs, c, ListenOptions{Handler: rec.handle, QueueSize: 1, HandlerTimeout: 5 * time.Second})
	var ids []string
	for i := range 3 {
		ids = append(ids, fs.PushEvent(feishutest.MessageEvent("om_q"+string(rune('0'+i)), "oc_1", ChatP2P, "ou_x", "text", map[string]string{"text": "x"})))
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	close(rec.block)
	for _, id := range ids {
		testkit.Eventually(t, 5*time.Second, "the ack of "+id, func() bool { return fs.Acked(id) })
	}
	if fs.Deliveries(ids[0]) != 1 || fs.Deliveries(ids[2]) < 2 || rec.count() != 3 {
		t.Fatalf("deliveries %d, %d, %d; handled %d", fs.Deliveries(ids[0]), fs.Deliveries(ids[1]), fs.Deliveries(ids[2]), rec.count())
	}
}

// A platform that closes every connection at once gets attempts backed
// off, not a storm.
func TestListenBacksOffWhenDroppedAtOnce(t *testing.T) {
	t.Parallel()
	fs, c := newFake(t, nil)
	fs.SetDropOnAccept(true)
	listen(t, c, ListenOptions{Handler: (&recorder{}).handle})
	time.Sleep(2500 * time.Millisecond)
	if n := fs.Connections(); n < 2 || n > 3 {
		t.Fatalf("%d connections in 2.5 s; want 2 or 3 (after 1 s, then 2 s)", n)
	}
}
