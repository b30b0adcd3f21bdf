package feishutest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/scv-cli/scv/scv-bridge/internal/feishu/frame"
)

// serviceID is the service_id of the fake's connection URL; every frame a
// client writes must carry it.
const serviceID = 7

// Ack is an acknowledgement a client wrote.
type Ack struct {
	MessageID string
	SeqID     uint64
	Code      int
	Data      []byte // the callback response JSON, if any
	BizRT     string
}

// delivery is an event the fake pushes until it is acknowledged.
type delivery struct {
	id      string
	typ     string
	payload []byte
	count   int
	acked   bool
	timer   *time.Timer
}

// longConn is the fake's WebSocket side.
type longConn struct {
	s *Server

	mu          sync.Mutex
	conns       []*websocket.Conn
	accepted    int
	seq         uint64
	bySeq       map[uint64]*delivery
	deliveries  map[string]*delivery
	acks        []Ack
	pings       int
	protocolErr []string
	closed      bool
	nextEvent   int
}

func newLongConn(s *Server) *longConn {
	return &longConn{s: s, bySeq: map[uint64]*delivery{}, deliveries: map[string]*delivery{}}
}

func (s *Server) endpoint(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AppID     string `json:"AppID"`
		AppSecret string `json:"AppSecret"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	s.mu.Lock()
	busy := s.endpointBusy > 0
	if busy {
		s.endpointBusy--
	}
	cc := s.clientConfig
	s.mu.Unlock()
	switch {
	case busy:
		reply(w, http.StatusOK, 1, "system busy", nil)
	case req.AppID != AppID || req.AppSecret != AppSecret:
		reply(w, http.StatusOK, 10003, "app not found or secret invalid", nil)
	default:
		u := "ws" + s.URL[len("http"):] + fmt.Sprintf("/ws?device_id=d1&service_id=%d", serviceID)
		reply(w, http.StatusOK, 0, "", map[string]any{"URL": u, "ClientConfig": cc})
	}
}

func (lc *longConn) accept(w http.ResponseWriter, r *http.Request) {
	lc.s.mu.Lock()
	hs, drop := lc.s.handshake, lc.s.dropOnAccept
	lc.s.mu.Unlock()
	if hs != nil {
		w.Header().Set("Handshake-Status", strconv.Itoa(hs.Status))
		w.Header().Set("Handshake-Msg", hs.Msg)
		if hs.AuthCode != 0 {
			w.Header().Set("Handshake-Autherrcode", strconv.Itoa(hs.AuthCode))
		}
		w.WriteHeader(http.StatusForbidden)
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	lc.mu.Lock()
	if lc.closed {
		lc.mu.Unlock()
		_ = conn.CloseNow()
		return
	}
	lc.accepted++
	if drop {
		lc.mu.Unlock()
		_ = conn.CloseNow()
		return
	}
	lc.conns = append(lc.conns, conn)
	lc.mu.Unlock()
	lc.serve(r.Context(), conn)
	lc.mu.Lock()
	for i, c := range lc.conns {
		if c == conn {
			lc.conns = append(lc.conns[:i], lc.conns[i+1:]...)
			break
		}
	}
	lc.mu.Unlock()
	_ = conn.CloseNow()
}

// serve reads the client's frames: pings get a pong carrying the client
// config, acks settle deliveries.
func (lc *longConn) serve(ctx context.Context, conn *websocket.Conn) {
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		f, err := frame.Unmarshal(b)
		if err != nil {
			lc.fail("malformed frame from the client: %v", err)
			continue
		}
		if f.Service != serviceID {
			lc.fail("frame with service %d, want %d", f.Service, serviceID)
		}
		switch {
		case f.Method == frame.MethodControl && f.Header(frame.HeaderType) == frame.TypePing:
			lc.pong(ctx, conn)
		case f.Method == frame.MethodData:
			lc.ack(f)
		default:
			lc.fail("unexpected frame method %d type %q", f.Method, f.Header(frame.HeaderType))
		}
	}
}

func (lc *longConn) pong(ctx context.Context, conn *websocket.Conn) {
	lc.s.mu.Lock()
	cc, _ := json.Marshal(lc.s.clientConfig)
	lc.s.mu.Unlock()
	lc.mu.Lock()
	lc.pings++
	lc.mu.Unlock()
	p := frame.Frame{Service: serviceID, Method: frame.MethodControl, Headers: []frame.Header{{Key: frame.HeaderType, Value: frame.TypePong}}, Payload: cc}
	_ = conn.Write(ctx, websocket.MessageBinary, p.Marshal())
}

func (lc *longConn) ack(f frame.Frame) {
	var p struct {
		Code int    `json:"code"`
		Data []byte `json:"data"`
	}
	if err := json.Unmarshal(f.Payload, &p); err != nil {
		lc.fail("ack payload is not JSON: %v", err)
		return
	}
	lc.mu.Lock()
	defer lc.mu.Unlock()
	d := lc.bySeq[f.SeqID]
	if d == nil || d.id != f.Header(frame.HeaderMessageID) {
		lc.protocolErr = append(lc.protocolErr, fmt.Sprintf("ack for unknown SeqID %d / message %q", f.SeqID, f.Header(frame.HeaderMessageID)))
		return
	}
	lc.acks = append(lc.acks, Ack{MessageID: d.id, SeqID: f.SeqID, Code: p.Code, Data: p.Data, BizRT: f.Header(frame.HeaderBizRT)})
	if p.Code == http.StatusOK {
		d.acked = true
		d.timer.Stop()
	}
}

func (lc *longConn) fail(format string, args ...any) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.protocolErr = append(lc.protocolErr, fmt.Sprintf(format, args...))
}

// PushEvent delivers an event payload (schema 2.0 JSON) over the long
// connection, again and again until it is acknowledged with code 200 or
// it was delivered the most times allowed. It returns the frame's
// message_id.
func (s *Server) PushEvent(payload []byte) string { return s.lc.push(frame.TypeEvent, payload) }

// PushCard delivers a card callback payload like PushEvent.
func (s *Server) PushCard(payload []byte) string { return s.lc.push(frame.TypeCard, payload) }

func (lc *longConn) push(typ string, payload []byte) string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.nextEvent++
	d := &delivery{id: fmt.Sprintf("frame_msg_%d", lc.nextEvent), typ: typ, payload: payload}
	lc.deliveries[d.id] = d
	lc.deliverLocked(d)
	return d.id
}

// deliverLocked writes d to the newest connection, in chunks when it is
// longer than the chunk size, and arms its redelivery. lc.mu is held.
func (lc *longConn) deliverLocked(d *delivery) {
	if lc.closed || d.acked {
		return
	}
	lc.s.mu.Lock()
	timeout, maxN, chunk := lc.s.ackTimeout, lc.s.maxDeliveries, lc.s.chunkSize
	lc.s.mu.Unlock()
	if d.count >= maxN {
		return
	}
	if n := len(lc.conns); n > 0 {
		d.count++
		lc.writeChunks(lc.conns[n-1], d, chunk)
	}
	d.timer = time.AfterFunc(timeout, func() {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		lc.deliverLocked(d)
	})
}

func (lc *longConn) writeChunks(conn *websocket.Conn, d *delivery, size int) {
	parts := [][]byte{d.payload}
	if size > 0 && len(d.payload) > size {
		parts = nil
		for p := d.payload; len(p) > 0; {
			n := min(size, len(p))
			parts = append(parts, p[:n])
			p = p[n:]
		}
	}
	for i, p := range parts {
		lc.seq++
		lc.bySeq[lc.seq] = d
		f := frame.Frame{SeqID: lc.seq, LogID: 1000 + lc.seq, Service: serviceID, Method: frame.MethodData,
			Headers: []frame.Header{
				{Key: frame.HeaderType, Value: d.typ}, {Key: frame.HeaderMessageID, Value: d.id},
				{Key: frame.HeaderSum, Value: strconv.Itoa(len(parts))}, {Key: frame.HeaderSeq, Value: strconv.Itoa(i)},
				{Key: frame.HeaderTraceID, Value: "trace-" + d.id},
				{Key: frame.HeaderTimestamp, Value: strconv.FormatInt(time.Now().UnixMilli(), 10)},
			}, Payload: p}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = conn.Write(ctx, websocket.MessageBinary, f.Marshal())
		cancel()
	}
}

// Deliveries counts how often the event with frame message_id id was
// delivered.
func (s *Server) Deliveries(id string) int {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	if d := s.lc.deliveries[id]; d != nil {
		return d.count
	}
	return 0
}

// Acked reports whether the event id was acknowledged with code 200.
func (s *Server) Acked(id string) bool {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	d := s.lc.deliveries[id]
	return d != nil && d.acked
}

// Acks returns the acks written so far.
func (s *Server) Acks() []Ack {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	return append([]Ack(nil), s.lc.acks...)
}

// Connections counts the WebSocket connections accepted so far; Live
// those open now.
func (s *Server) Connections() int { s.lc.mu.Lock(); defer s.lc.mu.Unlock(); return s.lc.accepted }

// Live counts the WebSocket connections open now.
func (s *Server) Live() int { s.lc.mu.Lock(); defer s.lc.mu.Unlock(); return len(s.lc.conns) }

// Pings counts the pings received.
func (s *Server) Pings() int { s.lc.mu.Lock(); defer s.lc.mu.Unlock(); return s.lc.pings }

// ProtocolErrors lists what clients did against the protocol.
func (s *Server) ProtocolErrors() []string {
	s.lc.mu.Lock()
	defer s.lc.mu.Unlock()
	return append([]string(nil), s.lc.protocolErr...)
}

// DropConnections closes every open WebSocket, as a network failure or a
// server restart would.
func (s *Server) DropConnections() {
	s.lc.mu.Lock()
	conns := append([]*websocket.Conn(nil), s.lc.conns...)
	s.lc.mu.Unlock()
	for _, c := range conns {
		_ = c.CloseNow()
	}
}

func (lc *longConn) close() {
	lc.mu.Lock()
	lc.closed = true
	for _, d := range lc.deliveries {
		if d.timer != nil {
			d.timer.Stop()
		}
	}
	conns := append([]*websocket.Conn(nil), lc.conns...)
	lc.mu.Unlock()
	for _, c := range conns {
		_ = c.CloseNow()
	}
}
