// Package ilinktest is a fake of WeChat's iLink bot API and its CDN for
// tests: the QR login state machine (including expiry and a redirect to
// another host), getupdates long polling with cursors (an old cursor gets
// the same batch again), sendmessage with the send budget (ret=-2 after N
// sends since the peer's last message, and refusal for as long as the
// penalty lasts), getuploadurl plus a CDN that checks the padded size and
// the MD5 of uploads, and CDN downloads of encrypted media. It checks the
// bot headers on every call and records what it receives.
package ilinktest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Identities the fake hands out at login.
const (
	BotToken = "fake-token@im.bot:0123456789"
	BotID    = "b0f5c7e1@im.bot"
	OwnerID  = "o9cq800ownerAAAA@im.wechat"
)

// Sent is a message the fake accepted from sendmessage.
type Sent struct {
	ClientID     string
	To           string
	ContextToken string
	Items        []json.RawMessage
}

// Upload is a file the fake CDN accepted, decrypted.
type Upload struct {
	FileKey   string
	MediaType int
	To        string
	Plain     []byte
}

type pendingUpload struct {
	mediaType int
	to        string
	rawSize   int64
	rawMD5    string
	fileSize  int64
	key       []byte
}

// Server is the fake. Configure it with its methods before the client
// runs; read its records with the accessors.
type Server struct {
	*httptest.Server

	mu sync.Mutex
	// QR login.
	qrScript    []string // statuses answered in order, the last repeated
	qrSeq       int
	qrCodes     map[string]bool // issued codes: true while valid
	redirectTo  string          // host named by scaned_but_redirect
	acceptAnyQR bool            // a redirect target knows codes issued elsewhere
	confirmBase string          // baseurl returned at confirmation
	statusPolls int
	// Updates.
	msgs        []json.RawMessage // everything delivered, in order; cursor = index
	notify      chan struct{}
	hold        time.Duration
	expireNext  bool
	badHeaders  []string
	lastContext map[string]string
	// Sending.
	budget       int
	perPeer      map[string]int
	throttled    bool
	whileThrottl int
	sent         []Sent
	byClientID   map[string]bool
	sendCalls    int
	lostAnswers  int // sends accepted whose answer is an HTTP 500
	// Media.
	uploads     map[string]pendingUpload
	accepted    []Upload
	media       map[string][]byte // download param → ciphertext
	fullUpload  bool
	failUploads int
}

// New starts a fake whose QR code is confirmed at the first status poll,
// with a budget of 10 sends per inbound message.
func New() *Server {
	s := &Server{qrScript: []string{"confirmed"}, qrCodes: map[string]bool{}, notify: make(chan struct{}),
		hold: 300 * time.Millisecond, lastContext: map[string]string{}, budget: 10, perPeer: map[string]int{},
		byClientID: map[string]bool{}, uploads: map[string]pendingUpload{}, media: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ilink/bot/get_bot_qrcode", s.getQRCode)
	mux.HandleFunc("GET /ilink/bot/get_qrcode_status", s.getQRStatus)
	mux.HandleFunc("POST /ilink/bot/getupdates", s.bot(s.getUpdates))
	mux.HandleFunc("POST /ilink/bot/sendmessage", s.bot(s.sendMessage))
	mux.HandleFunc("POST /ilink/bot/getuploadurl", s.bot(s.getUploadURL))
	mux.HandleFunc("POST /c2c/upload", s.cdnUpload)
	mux.HandleFunc("GET /c2c/download", s.cdnDownload)
	s.Server = httptest.NewServer(mux)
	s.confirmBase = s.URL
	return s
}

// CDNURL is the fake CDN's base, the adapter's CDN base URL.
func (s *Server) CDNURL() string { return s.URL + "/c2c" }

// Host is the server's host:port, as a redirect names it.
func (s *Server) Host() string { return strings.TrimPrefix(s.URL, "http://") }

// SetQRScript sets the statuses the status poll answers, in order, the
// last one repeated: wait, scaned, confirmed, expired (the code dies; the
// client must fetch another), scaned_but_redirect (to the host given to
// RedirectTo), need_verifycode, binded_redirect; and busy, which is an
// HTTP 503 instead of a status.
func (s *Server) SetQRScript(statuses ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.qrScript = statuses
}

// RedirectTo names the host a scaned_but_redirect answer sends the client
// to, and makes that server accept the codes this one issued.
func (s *Server) RedirectTo(other *Server) {
	s.mu.Lock()
	s.redirectTo = other.Host()
	s.mu.Unlock()
	other.mu.Lock()
	other.acceptAnyQR = true
	other.mu.Unlock()
}

// StatusPolls counts the status polls this server answered.
func (s *Server) StatusPolls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.statusPolls
}

// SetHold sets how long getupdates waits for a message before answering
// with none.
func (s *Server) SetHold(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = d
}

// SetBudget sets how many sends to a peer succeed after its last message
// before sendmessage answers ret=-2.
func (s *Server) SetBudget(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.budget = n
}

// ExpireSession makes the next getupdates answer errcode -14.
func (s *Server) ExpireSession() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireNext = true
}

// UseFullUploadURL makes getuploadurl answer upload_full_url (the newer
// form) instead of upload_param.
func (s *Server) UseFullUploadURL() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fullUpload = true
}

// FailUploads makes the next n CDN uploads answer 500.
func (s *Server) FailUploads(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failUploads = n
}

// Deliver queues an inbound message (the JSON of one msgs element) for
// getupdates. A user message (message_type 1) resets its sender's send
// budget, as a new message from the user does on the platform.
func (s *Server) Deliver(msg string) {
	var m struct {
		From         string `json:"from_user_id"`
		Type         int    `json:"message_type"`
		ContextToken string `json:"context_token"`
	}
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		panic("ilinktest: Deliver needs a JSON message: " + err.Error())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, json.RawMessage(msg))
	if m.Type == 1 {
		s.perPeer[m.From] = 0
		s.lastContext[m.From] = m.ContextToken
	}
	close(s.notify)
	s.notify = make(chan struct{})
}

// LoseSendAnswers makes the next n accepted sendmessage calls answer HTTP
// 500 after recording the message: the platform took it, the client does
// not know (a crash between send and record looks the same).
func (s *Server) LoseSendAnswers(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lostAnswers = n
}

// Sent returns the messages accepted so far.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// SendCalls counts sendmessage calls, refused ones included.
func (s *Server) SendCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sendCalls
}

// CallsWhileThrottled counts sendmessage calls after the first ret=-2:
// each one would prolong the penalty on the platform.
func (s *Server) CallsWhileThrottled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.whileThrottl
}

// Uploads returns the files the CDN accepted.
func (s *Server) Uploads() []Upload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Upload(nil), s.accepted...)
}

// HeaderErrors lists requests whose bot headers were wrong.
func (s *Server) HeaderErrors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.badHeaders...)
}

// bot checks the headers every bot call carries, then runs h.
func (s *Server) bot(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var bad []string
		if r.Header.Get("AuthorizationType") != "ilink_bot_token" {
			bad = append(bad, "AuthorizationType")
		}
		if r.Header.Get("Authorization") != "Bearer "+BotToken {
			bad = append(bad, "Authorization")
		}
		if uin, err := base64.StdEncoding.DecodeString(r.Header.Get("X-WECHAT-UIN")); err != nil {
			bad = append(bad, "X-WECHAT-UIN")
		} else if _, err := strconv.ParseUint(string(uin), 10, 32); err != nil {
			bad = append(bad, "X-WECHAT-UIN")
		}
		if r.Header.Get("Content-Type") != "application/json" {
			bad = append(bad, "Content-Type")
		}
		if len(bad) != 0 {
			s.mu.Lock()
			s.badHeaders = append(s.badHeaders, r.URL.Path+": "+strings.Join(bad, ", "))
			s.mu.Unlock()
			writeJSON(w, map[string]any{"ret": -1, "errcode": -1, "errmsg": "bad headers"})
			return
		}
		h(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) getQRCode(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("bot_type") != "3" {
		http.Error(w, "bot_type must be 3", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.qrSeq++
	code := fmt.Sprintf("qr-%d", s.qrSeq)
	s.qrCodes[code] = true
	s.mu.Unlock()
	writeJSON(w, map[string]any{"qrcode": code, "qrcode_img_content": "https://liteapp.weixin.qq.com/q/" + code})
}

func (s *Server) getQRStatus(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("qrcode")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statusPolls++
	valid, known := s.qrCodes[code]
	switch {
	case !known && !s.acceptAnyQR:
		http.Error(w, "unknown qrcode", http.StatusNotFound)
		return
	case known && !valid:
		writeJSON(w, map[string]any{"status": "expired"})
		return
	}
	st := s.qrScript[0]
	if len(s.qrScript) > 1 {
		s.qrScript = s.qrScript[1:]
	}
	if st == "busy" {
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	out := map[string]any{"status": st}
	switch st {
	case "expired":
		s.qrCodes[code] = false
	case "scaned_but_redirect":
		out["redirect_host"] = s.redirectTo
	case "confirmed":
		out["bot_token"], out["ilink_bot_id"], out["ilink_user_id"], out["baseurl"] = BotToken, BotID, OwnerID, s.confirmBase
	}
	writeJSON(w, out)
}
