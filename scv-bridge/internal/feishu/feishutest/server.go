// Package feishutest is a fake Feishu open platform for tests: the HTTP
// API the adapter uses (token, messages, uploads, resources, CardKit) and
// the long connection (endpoint plus a WebSocket of protobuf frames). It
// behaves as the platform is documented to, strictly: it splits events
// into chunks, delivers an event again until it is acknowledged, refuses a
// card sequence that does not increase, and rate-limits sends per
// recipient with 429 and x-ogw-ratelimit-reset. Everything it receives is
// recorded for the test to inspect.
package feishutest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Credentials the fake accepts.
const (
	AppID     = "cli_test_app"
	AppSecret = "test-secret-value"
)

// ClientConfig is the timing the fake hands to clients, in seconds.
type ClientConfig struct {
	ReconnectCount    int
	ReconnectInterval int
	ReconnectNonce    int
	PingInterval      int
}

// HandshakeFailure makes the WebSocket handshake fail with the platform's
// headers.
type HandshakeFailure struct {
	Status   int // Handshake-Status: 514 auth failed, 403 forbidden
	AuthCode int // Handshake-Autherrcode
	Msg      string
}

// Message is a message the fake accepted.
type Message struct {
	ID            string
	ChatID        string
	ReceiveIDType string
	ReceiveID     string
	ReplyTo       string
	MsgType       string
	Content       string
	UUID          string
	At            time.Time
}

// Upload is a file or image the fake accepted.
type Upload struct {
	Key      string
	Kind     string // image_type or file_type
	Name     string
	Data     []byte
	Duration string
}

// Server is the fake. Set its knobs before the client uses it; read its
// records with the accessor methods.
type Server struct {
	*httptest.Server

	mu sync.Mutex
	// Knobs.
	tokenExpire    int
	expireNext     int
	endpointBusy   int
	handshake      *HandshakeFailure
	clientConfig   ClientConfig
	ackTimeout     time.Duration
	maxDeliveries  int
	chunkSize      int
	recipientQPS   int
	cardOpsPerSec  int
	cardLimited    int
	failCardCreate bool
	dlpWord        string
	dropOnAccept   bool

	// Records.
	tokensIssued map[string]time.Time
	tokenCount   int
	messages     []Message
	byUUID       map[string]Message
	sendTimes    map[string][]time.Time
	rateLimited  int
	uploads      []Upload
	resources    map[string]map[string][]byte
	known        map[string]Message // messages users sent, for GET
	cards        map[string]*Card
	nextID       int

	lc *longConn
}

// New starts a fake. Close it when done (t.Cleanup(s.Close)).
func New() *Server {
	s := &Server{
		tokenExpire: 7200, ackTimeout: 3 * time.Second, maxDeliveries: 4, chunkSize: 0,
		recipientQPS: 5, cardOpsPerSec: 10,
		clientConfig: ClientConfig{ReconnectCount: -1, ReconnectInterval: 1, ReconnectNonce: 0, PingInterval: 120},
		tokensIssued: map[string]time.Time{}, byUUID: map[string]Message{}, sendTimes: map[string][]time.Time{},
		resources: map[string]map[string][]byte{}, cards: map[string]*Card{}, known: map[string]Message{},
	}
	s.lc = newLongConn(s)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /open-apis/auth/v3/tenant_access_token/internal", s.token)
	mux.HandleFunc("POST /callback/ws/endpoint", s.endpoint)
	mux.HandleFunc("GET /ws", s.lc.accept)
	mux.HandleFunc("GET /open-apis/bot/v3/info", s.authed(s.botInfo))
	mux.HandleFunc("POST /open-apis/im/v1/messages", s.authed(s.send))
	mux.HandleFunc("POST /open-apis/im/v1/messages/{id}/reply", s.authed(s.send))
	mux.HandleFunc("POST /open-apis/im/v1/images", s.authed(s.upload))
	mux.HandleFunc("POST /open-apis/im/v1/files", s.authed(s.upload))
	mux.HandleFunc("GET /open-apis/im/v1/messages/{id}/resources/{key}", s.authed(s.resource))
	mux.HandleFunc("GET /open-apis/im/v1/messages/{id}", s.authed(s.getMessage))
	mux.HandleFunc("POST /open-apis/cardkit/v1/cards", s.authed(s.createCard))
	mux.HandleFunc("PUT /open-apis/cardkit/v1/cards/{id}/elements/{eid}/content", s.authed(s.cardContent))
	mux.HandleFunc("PUT /open-apis/cardkit/v1/cards/{id}", s.authed(s.cardUpdate))
	mux.HandleFunc("PATCH /open-apis/cardkit/v1/cards/{id}/settings", s.authed(s.cardSettings))
	s.Server = httptest.NewServer(mux)
	return s
}

// Close stops the long connections and the server.
func (s *Server) Close() {
	s.lc.close()
	s.Server.Close()
}

// SetTokenExpire sets the lifetime, in seconds, of the tokens issued.
func (s *Server) SetTokenExpire(sec int) { s.mu.Lock(); s.tokenExpire = sec; s.mu.Unlock() }

// ExpireNextCalls makes the next n API calls answer 99991663 (token
// expired) and forget every token issued so far.
func (s *Server) ExpireNextCalls(n int) { s.mu.Lock(); s.expireNext = n; s.mu.Unlock() }

// SetEndpointBusy makes the next n endpoint requests answer code 1 (busy).
func (s *Server) SetEndpointBusy(n int) { s.mu.Lock(); s.endpointBusy = n; s.mu.Unlock() }

// SetHandshakeFailure makes every WebSocket handshake fail (nil: succeed).
func (s *Server) SetHandshakeFailure(h *HandshakeFailure) {
	s.mu.Lock()
	s.handshake = h
	s.mu.Unlock()
}

// SetClientConfig sets the timing given in endpoint answers and pongs.
func (s *Server) SetClientConfig(cc ClientConfig) { s.mu.Lock(); s.clientConfig = cc; s.mu.Unlock() }

// SetAckTimeout sets how long an event waits for its ack before it is
// delivered again, and how many deliveries it gets at most.
func (s *Server) SetAckTimeout(d time.Duration, maxDeliveries int) {
	s.mu.Lock()
	s.ackTimeout, s.maxDeliveries = d, maxDeliveries
	s.mu.Unlock()
}

// SetChunkSize makes events longer than n bytes arrive in chunks of n
// (0: never split).
func (s *Server) SetChunkSize(n int) { s.mu.Lock(); s.chunkSize = n; s.mu.Unlock() }

// SetRecipientQPS sets the sends per second one recipient accepts.
func (s *Server) SetRecipientQPS(n int) { s.mu.Lock(); s.recipientQPS = n; s.mu.Unlock() }

// SetFailCardCreate makes card creation fail with 230099.
func (s *Server) SetFailCardCreate(b bool) { s.mu.Lock(); s.failCardCreate = b; s.mu.Unlock() }

// SetDLPWord makes messages containing w fail with 230028 (audit).
func (s *Server) SetDLPWord(w string) { s.mu.Lock(); s.dlpWord = w; s.mu.Unlock() }

// SetDropOnAccept makes the fake close every WebSocket right after the
// handshake, as a failing platform would.
func (s *Server) SetDropOnAccept(b bool) { s.mu.Lock(); s.dropOnAccept = b; s.mu.Unlock() }

// AddResource lets message messageID carry key with data.
func (s *Server) AddResource(messageID, key string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.resources[messageID] == nil {
		s.resources[messageID] = map[string][]byte{}
	}
	s.resources[messageID][key] = data
}

// Messages returns the messages accepted, in order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Uploads returns the uploads accepted, in order.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Upload(nil), s.uploads...)
}

// TokensIssued counts the tenant access tokens issued.
func (s *Server) TokensIssued() int { s.mu.Lock(); defer s.mu.Unlock(); return s.tokenCount }

// RateLimited counts the requests answered 429.
func (s *Server) RateLimited() int { s.mu.Lock(); defer s.mu.Unlock(); return s.rateLimited }

func (s *Server) id(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s_%d", prefix, s.nextID)
}

// reply writes the platform's envelope.
func reply(w http.ResponseWriter, status, code int, msg string, data any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "msg": msg, "data": data})
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AppID     string `json:"app_id"`
		AppSecret string `json:"app_secret"`
	}
	if json.NewDecoder(r.Body).Decode(&req) != nil || req.AppID != AppID || req.AppSecret != AppSecret {
		reply(w, http.StatusBadRequest, 10014, "app secret invalid", nil)
		return
	}
	s.mu.Lock()
	s.tokenCount++
	tok := fmt.Sprintf("t-%d", s.tokenCount)
	exp := s.tokenExpire
	s.tokensIssued[tok] = time.Now().Add(time.Duration(exp) * time.Second)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"code": 0, "msg": "ok", "tenant_access_token": tok, "expire": exp})
}

// authed checks the bearer token before h.
func (s *Server) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		if s.expireNext > 0 {
			s.expireNext--
			clear(s.tokensIssued)
		}
		exp, ok := s.tokensIssued[tok]
		s.mu.Unlock()
		if !ok || time.Now().After(exp) {
			reply(w, http.StatusBadRequest, 99991663, "Invalid access token for authorization. Please make a request with token attached.", nil)
			return
		}
		h(w, r)
	}
}

// BotOpenID is the open_id of the fake's bot.
const BotOpenID = "ou_fake_bot"

// botInfo answers as the platform does: the bot beside code and msg, not
// in data.
func (s *Server) botInfo(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"code": 0, "msg": "ok",
		"bot": map[string]any{"activate_status": 2, "app_name": "SCV", "open_id": BotOpenID, "ip_white_list": []string{}}})
}
