package feishu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/scv-cli/scv/scv-bridge/internal/feishu/frame"
)

// Handler handles one inbound event before it is acknowledged: the bridge
// core stores the event there (persist, then acknowledge), so it must
// return within the platform's 3 s (its ctx ends then). An error asks the
// platform to deliver the event again. For a *CardAction the response, if
// not nil, is shown to the person who clicked. The same event may arrive
// more than once: deduplicate on MessageID or Header.EventID.
type Handler func(ctx context.Context, ev Event) (*CallbackResponse, error)

// ListenOptions configure Listen.
type ListenOptions struct {
	// Handler receives the events, one at a time, in arrival order.
	Handler Handler
	// HandlerTimeout bounds one Handler call; 2.5 s when zero, leaving
	// room for the acknowledgement within the platform's 3 s.
	HandlerTimeout time.Duration
	// MaxPendingMessages bounds the events being reassembled from chunks
	// at once; 32 when zero. When it is reached the oldest is dropped (the
	// platform delivers it again, since it was not acknowledged).
	MaxPendingMessages int
	// MaxMessageBytes bounds one reassembled event; 1 MiB when zero.
	MaxMessageBytes int
	// ChunkTimeout is how long the chunks of an event wait for the rest;
	// 5 s when zero.
	ChunkTimeout time.Duration
	// QueueSize bounds the events waiting for the Handler; 64 when zero.
	// An event arriving at a full queue is not acknowledged, so the
	// platform delivers it again later.
	QueueSize int
	// OnConnected, when set, is called each time a connection is up.
	OnConnected func()
}

// ConnectionError is a refusal of the long connection that retrying will
// not cure: bad credentials, a forbidden app, a refused handshake.
type ConnectionError struct {
	// Status is the handshake's Handshake-Status (514 auth failed, 403
	// forbidden) or the endpoint's code.
	Status int
	// AuthCode is the Handshake-Autherrcode (1000040350: more than 50
	// connections for the app).
	AuthCode int
	Msg      string
}

// Error says what the person running the bridge can do.
func (e *ConnectionError) Error() string {
	s := fmt.Sprintf("feishu long connection refused (status %d", e.Status)
	if e.AuthCode != 0 {
		s += fmt.Sprintf(", auth code %d", e.AuthCode)
	}
	s += ")"
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	switch {
	case e.AuthCode == authCodeTooManyConns:
		s += ": the app already has 50 long connections; stop the other clients of this app"
	case e.Status == handshakeAuthFailed:
		s += ": authentication failed; check app_id and the app secret"
	case e.Status == handshakeForbidden:
		s += ": forbidden; check that the app is a self-built app with the bot capability and event subscription in long-connection mode"
	default:
		s += ": check app_id, the app secret and base_url"
	}
	return s
}

const (
	handshakeAuthFailed  = 514
	handshakeForbidden   = 403
	authCodeTooManyConns = 1000040350
	endpointBusy         = 1
	endpointInternal     = 1000040343
)

// clientConfig is the connection's timing, set by the platform in the
// endpoint answer and in pongs. All values are seconds.
type clientConfig struct {
	ReconnectCount    int `json:"ReconnectCount"`
	ReconnectInterval int `json:"ReconnectInterval"`
	ReconnectNonce    int `json:"ReconnectNonce"`
	PingInterval      int `json:"PingInterval"`
}

func (cc clientConfig) ping() time.Duration {
	if cc.PingInterval <= 0 {
		return 120 * time.Second
	}
	return time.Duration(cc.PingInterval) * time.Second
}

// endpoint asks for a connection URL. Busy answers come back as a
// retryable *APIError, refusals as a *ConnectionError.
func (c *Client) endpoint(ctx context.Context) (string, clientConfig, error) {
	var cc clientConfig
	body, _ := json.Marshal(map[string]string{"AppID": c.opts.AppID, "AppSecret": c.opts.AppSecret})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/callback/ws/endpoint", bytes.NewReader(body))
	if err != nil {
		return "", cc, fmt.Errorf("feishu endpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("locale", "zh")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", cc, fmt.Errorf("feishu endpoint: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJSONResponse))
	if err != nil {
		return "", cc, fmt.Errorf("feishu endpoint: %w", err)
	}
	var ans struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
		Data struct {
			URL          string       `json:"URL"`
			ClientConfig clientConfig `json:"ClientConfig"`
		} `json:"data"`
	}
	jerr := json.Unmarshal(raw, &ans)
	switch {
	case resp.StatusCode >= 500 || ans.Code == endpointBusy || ans.Code == endpointInternal:
		return "", cc, &APIError{Op: "long connection endpoint", HTTPStatus: max(resp.StatusCode, 500), Code: 0, Msg: ans.Msg}
	case jerr != nil || resp.StatusCode != http.StatusOK:
		return "", cc, &ConnectionError{Status: resp.StatusCode, Msg: "the endpoint answer is not the platform's JSON; check base_url"}
	case ans.Code != 0:
		return "", cc, &ConnectionError{Status: ans.Code, Msg: ans.Msg}
	case ans.Data.URL == "":
		return "", cc, &ConnectionError{Status: resp.StatusCode, Msg: "the endpoint answer has no URL"}
	}
	return ans.Data.URL, ans.Data.ClientConfig, nil
}

// dial opens the WebSocket at u and returns it with the service id the
// frames must carry.
func (c *Client) dial(ctx context.Context, u string) (*websocket.Conn, int32, error) {
	pu, err := url.Parse(u)
	if err != nil {
		return nil, 0, &ConnectionError{Status: 0, Msg: "the endpoint gave a bad URL"}
	}
	sid, _ := strconv.ParseInt(pu.Query().Get("service_id"), 10, 32)
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPClient: c.http})
	if err != nil {
		if resp != nil {
			if st, _ := strconv.Atoi(resp.Header.Get("Handshake-Status")); st != 0 {
				ac, _ := strconv.Atoi(resp.Header.Get("Handshake-Autherrcode"))
				return nil, 0, &ConnectionError{Status: st, AuthCode: ac, Msg: resp.Header.Get("Handshake-Msg")}
			}
		}
		return nil, 0, fmt.Errorf("feishu long connection: %w", err)
	}
	conn.SetReadLimit(frame.MaxFrameBytes)
	return conn, int32(sid), nil
}

// Listen receives events over the long connection until ctx ends (it then
// returns nil) or the platform refuses the connection for good (a
// *ConnectionError). A dropped connection is opened again after a random
// wait within the platform's ReconnectNonce; failing attempts back off
// exponentially up to its ReconnectInterval, with jitter. Run one Listen
// per app: the platform gives each event to one connection at random.
func (c *Client) Listen(ctx context.Context, o ListenOptions) error {
	if o.Handler == nil {
		return fmt.Errorf("feishu listen: a handler is required: %w", errBadInput)
	}
	o = o.withDefaults()
	failures := 0
	for {
		start := time.Now()
		cc, err := c.listenOnce(ctx, o)
		if ctx.Err() != nil {
			return nil
		}
		var ce *ConnectionError
		if errors.As(err, &ce) && ce.AuthCode != authCodeTooManyConns {
			return err
		}
		switch {
		case err == nil && time.Since(start) >= minHealthyConnection:
			failures = 0 // the connection was up: reconnect soon
		case err == nil:
			// Up, then dropped at once: back off as after a failure, so
			// a platform that keeps closing gets no storm of reconnects.
			failures++
			err = errors.New("the connection closed right after it opened")
		default:
			failures++
		}
		if cc.ReconnectCount >= 0 && failures > cc.ReconnectCount {
			return fmt.Errorf("feishu long connection: gave up after %d attempts: %w", failures, err)
		}
		wait := reconnectWait(cc, failures)
		c.log.Warn("Feishu long connection lost; reconnecting", "in", wait, "err", err)
		if sleep(ctx, wait) != nil {
			return nil
		}
	}
}

// reconnectWait is the pause before the next connection attempt. After a
// connection that was up it is random within ReconnectNonce, so that
// clients dropped together do not return together. After failed attempts
// it backs off from one second, doubling per failure up to
// ReconnectInterval, plus up to half as much again at random.
func reconnectWait(cc clientConfig, failures int) time.Duration {
	if failures == 0 {
		if cc.ReconnectNonce <= 0 {
			return 0
		}
		return rand.N(time.Duration(cc.ReconnectNonce) * time.Second)
	}
	ceil := time.Duration(max(cc.ReconnectInterval, 1)) * time.Second
	back := min(time.Second<<min(failures-1, 16), ceil)
	return back + rand.N(back/2+1)
}

func (o ListenOptions) withDefaults() ListenOptions {
	if o.HandlerTimeout <= 0 {
		o.HandlerTimeout = 2500 * time.Millisecond
	}
	if o.MaxPendingMessages <= 0 {
		o.MaxPendingMessages = 32
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 1 << 20
	}
	if o.ChunkTimeout <= 0 {
		o.ChunkTimeout = 5 * time.Second
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 64
	}
	return o
}

// minHealthyConnection is how long a connection must last for its drop
// to be an ordinary one rather than a failed attempt.
const minHealthyConnection = 10 * time.Second

// defaultClientConfig applies until the platform sends its own.
var defaultClientConfig = clientConfig{ReconnectCount: -1, ReconnectInterval: 120, ReconnectNonce: 30, PingInterval: 120}

// listenOnce runs one connection: endpoint, dial, then the session until
// it ends. It returns the platform's client config for the reconnect, and
// nil when a connection was up and then dropped.
func (c *Client) listenOnce(ctx context.Context, o ListenOptions) (clientConfig, error) {
	u, cc, err := c.endpoint(ctx)
	if err != nil {
		return defaultClientConfig, err
	}
	if cc.PingInterval == 0 && cc.ReconnectInterval == 0 {
		cc = defaultClientConfig
	}
	conn, sid, err := c.dial(ctx, u)
	if err != nil {
		return cc, err
	}
	s := &session{c: c, o: o, conn: conn, service: sid, cfg: cc,
		queue: make(chan inbound, o.QueueSize), pongs: make(chan clientConfig, 1),
		chunks: newReassembler(o.MaxPendingMessages, o.MaxMessageBytes, o.ChunkTimeout)}
	c.log.Info("Feishu long connection up", "service_id", sid)
	if o.OnConnected != nil {
		o.OnConnected()
	}
	s.run(ctx)
	return s.config(), nil
}

// session is one live WebSocket: a reader (the caller of run), a pinger
// and a worker that calls the Handler and writes the acks.
type session struct {
	c       *Client
	o       ListenOptions
	conn    *websocket.Conn
	service int32
	chunks  *reassembler
	queue   chan inbound
	pongs   chan clientConfig

	mu       sync.Mutex
	cfg      clientConfig
	lastRead atomic.Int64 // unix nanoseconds
}

// inbound is a complete event and the frame to echo as its ack.
type inbound struct {
	frame   frame.Frame
	payload []byte
	started time.Time
}

func (s *session) config() clientConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

// run serves the connection until it fails or ctx ends, then closes it
// and waits for its goroutines.
func (s *session) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); defer cancel(); s.ping(ctx) }()
	go func() { defer wg.Done(); defer cancel(); s.work(ctx) }()
	err := s.read(ctx)
	cancel()
	wg.Wait()
	s.c.log.Debug("Feishu long connection ended", "err", err)
	_ = s.conn.Close(websocket.StatusNormalClosure, "")
}

// read handles frames until the connection fails or ctx ends.
func (s *session) read(ctx context.Context) error {
	s.lastRead.Store(time.Now().UnixNano())
	for {
		typ, b, err := s.conn.Read(ctx)
		if err != nil {
			return err
		}
		s.lastRead.Store(time.Now().UnixNano())
		if typ != websocket.MessageBinary {
			continue
		}
		f, err := frame.Unmarshal(b)
		if err != nil {
			s.c.log.Warn("Feishu sent a malformed frame; ignored", "err", err)
			continue
		}
		switch f.Method {
		case frame.MethodControl:
			s.control(f)
		case frame.MethodData:
			s.data(f)
		}
	}
}

// control handles a pong, whose payload may change the intervals.
func (s *session) control(f frame.Frame) {
	if f.Header(frame.HeaderType) != frame.TypePong || len(f.Payload) == 0 {
		return
	}
	var cc clientConfig
	if err := json.Unmarshal(f.Payload, &cc); err != nil || cc.PingInterval <= 0 {
		return
	}
	s.mu.Lock()
	s.cfg = cc
	s.mu.Unlock()
	select {
	case s.pongs <- cc:
	default: // the pinger has a newer one to read already
	}
}

// data reassembles an event and queues it for the Handler.
func (s *session) data(f frame.Frame) {
	typ := f.Header(frame.HeaderType)
	if typ != frame.TypeEvent && typ != frame.TypeCard {
		return
	}
	payload := f.Payload
	if sum := f.HeaderInt(frame.HeaderSum, 1); sum > 1 {
		var err error
		payload, err = s.chunks.add(f.Header(frame.HeaderMessageID), sum, f.HeaderInt(frame.HeaderSeq, -1), f.Payload, time.Now())
		if err != nil {
			s.c.log.Warn("Feishu event chunk dropped; the platform will deliver the event again", "err", err)
			return
		}
		if payload == nil {
			return
		}
	}
	select {
	case s.queue <- inbound{frame: f, payload: payload, started: time.Now()}:
	default:
		s.c.log.Warn("Feishu event queue full; the event is left for redelivery", "message_id", f.Header(frame.HeaderMessageID))
	}
}

// ping sends a ping every PingInterval and ends the connection when
// nothing was read for two intervals and a bit.
func (s *session) ping(ctx context.Context) {
	interval := s.config().ping()
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case cc := <-s.pongs:
			if next := cc.ping(); next != interval {
				interval = next
				t.Stop()
				t.Reset(interval)
			}
			continue
		case <-t.C:
		}
		last := time.Unix(0, s.lastRead.Load())
		if time.Since(last) > 2*interval+10*time.Second {
			s.c.log.Warn("Feishu long connection silent; reconnecting", "since", time.Since(last))
			return
		}
		p := frame.Frame{Service: s.service, Method: frame.MethodControl, Headers: []frame.Header{{Key: frame.HeaderType, Value: frame.TypePing}}}
		if err := s.conn.Write(ctx, websocket.MessageBinary, p.Marshal()); err != nil {
			return
		}
		t.Reset(interval)
	}
}

// work calls the Handler for each queued event, in order, and acks it.
func (s *session) work(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case in := <-s.queue:
			ack := s.handle(ctx, in)
			if err := s.conn.Write(ctx, websocket.MessageBinary, ack.Marshal()); err != nil {
				s.c.log.Warn("Feishu ack failed; the platform will deliver the event again", "err", err)
				return
			}
		}
	}
}

// ackPayload is the body of an acknowledgement. Data is the JSON of a
// callback response; encoding/json writes []byte as base64, which is what
// the platform decodes.
type ackPayload struct {
	Code    int               `json:"code"`
	Headers map[string]string `json:"headers"`
	Data    []byte            `json:"data"`
}

// handle runs the Handler on one event and returns the ack frame: the
// event's frame with biz_rt and the handler's result as payload.
func (s *session) handle(ctx context.Context, in inbound) frame.Frame {
	ack := ackPayload{Code: http.StatusOK}
	ev, err := DecodeEvent(in.payload)
	if err != nil {
		// Delivering it again would not help: log it and ack.
		s.c.log.Error("Feishu event could not be decoded; dropped", "message_id", in.frame.Header(frame.HeaderMessageID), "err", err)
	} else {
		hctx, cancel := context.WithTimeout(ctx, s.o.HandlerTimeout)
		resp, herr := s.callHandler(hctx, ev)
		cancel()
		switch {
		case herr != nil:
			s.c.log.Warn("Feishu event handler failed; asking for redelivery", "err", herr)
			ack.Code = http.StatusInternalServerError
		case resp != nil:
			ack.Data, _ = json.Marshal(resp)
		}
	}
	f := in.frame
	f.Headers = append([]frame.Header(nil), f.Headers...)
	f.SetHeader(frame.HeaderBizRT, strconv.FormatInt(time.Since(in.started).Milliseconds(), 10))
	f.Payload, _ = json.Marshal(ack)
	return f
}

// callHandler runs the Handler, turning a panic into an error so one bad
// event does not end the bridge.
func (s *session) callHandler(ctx context.Context, ev Event) (resp *CallbackResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the event handler panicked: %v", r)
		}
	}()
	return s.o.Handler(ctx, ev)
}
