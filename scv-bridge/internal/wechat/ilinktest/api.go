package ilinktest

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-bridge/internal/wechat/cdncrypt"
)

// getUpdates answers the messages after the cursor (the index of the
// next message, as a decimal string), holding the request until one
// arrives or the hold time passes. An old cursor gets the same batch
// again: delivery is at least once.
func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Buf string `json:"get_updates_buf"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, map[string]any{"ret": -1, "errmsg": "bad json"})
		return
	}
	from := 0
	if req.Buf != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(req.Buf, "cur-"))
		if err != nil || !strings.HasPrefix(req.Buf, "cur-") {
			writeJSON(w, map[string]any{"ret": -1, "errmsg": "bad get_updates_buf"})
			return
		}
		from = n
	}
	s.mu.Lock()
	if s.expireNext {
		s.expireNext = false
		s.mu.Unlock()
		writeJSON(w, map[string]any{"ret": -14, "errcode": -14, "errmsg": "session timeout"})
		return
	}
	hold := s.hold
	s.mu.Unlock()
	timer := time.NewTimer(hold)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if from < len(s.msgs) {
			batch := append([]json.RawMessage(nil), s.msgs[from:]...)
			next := len(s.msgs)
			s.mu.Unlock()
			writeJSON(w, map[string]any{"ret": 0, "errcode": 0, "msgs": batch, "get_updates_buf": fmt.Sprintf("cur-%d", next), "longpolling_timeout_ms": hold.Milliseconds()})
			return
		}
		ch := s.notify
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			writeJSON(w, map[string]any{"ret": 0, "errcode": 0, "msgs": []any{}, "get_updates_buf": req.Buf, "longpolling_timeout_ms": hold.Milliseconds()})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// sendMessage enforces the budget: after budget sends to a peer since its
// last message the answer is ret=-2, and it stays so (the penalty) until a
// new message from that peer. A client_id already accepted is accepted
// again without a second message.
func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Msg struct {
			To           string            `json:"to_user_id"`
			ClientID     string            `json:"client_id"`
			Type         int               `json:"message_type"`
			State        int               `json:"message_state"`
			Items        []json.RawMessage `json:"item_list"`
			ContextToken string            `json:"context_token"`
		} `json:"msg"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, map[string]any{"ret": -1, "errmsg": "bad json"})
		return
	}
	m := req.Msg
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sendCalls++
	if s.throttled {
		s.whileThrottl++
		writeJSON(w, map[string]any{"ret": -2, "errmsg": "rate limited"})
		return
	}
	switch {
	case m.To == "" || m.ClientID == "" || len(m.Items) == 0 || m.Type != 2 || m.State != 2:
		writeJSON(w, map[string]any{"ret": -1, "errmsg": "to_user_id, client_id, item_list, message_type 2 and message_state 2 are required"})
		return
	case m.ContextToken == "" || m.ContextToken != s.lastContext[m.To]:
		writeJSON(w, map[string]any{"ret": -2, "errmsg": "prepare failed"})
		s.throttled = true
		return
	case s.byClientID[m.ClientID]:
		writeJSON(w, map[string]any{"ret": 0})
		return
	case s.perPeer[m.To] >= s.budget:
		s.throttled = true
		writeJSON(w, map[string]any{"ret": -2, "errmsg": "rate limited"})
		return
	}
	s.perPeer[m.To]++
	s.byClientID[m.ClientID] = true
	s.sent = append(s.sent, Sent{ClientID: m.ClientID, To: m.To, ContextToken: m.ContextToken, Items: m.Items})
	if s.lostAnswers > 0 {
		s.lostAnswers--
		http.Error(w, "the answer was lost", http.StatusInternalServerError)
		return
	}
	writeJSON(w, map[string]any{"ret": 0})
}

// Unthrottle ends the penalty.
func (s *Server) Unthrottle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.throttled = false
}

func (s *Server) getUploadURL(w http.ResponseWriter, r *http.Request) {
	var req struct {
		FileKey   string `json:"filekey"`
		MediaType int    `json:"media_type"`
		To        string `json:"to_user_id"`
		RawSize   int64  `json:"rawsize"`
		RawMD5    string `json:"rawfilemd5"`
		FileSize  int64  `json:"filesize"`
		NoThumb   bool   `json:"no_need_thumb"`
		AESKeyHex string `json:"aeskey"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, map[string]any{"ret": -1, "errmsg": "bad json"})
		return
	}
	key, err := hex.DecodeString(req.AESKeyHex)
	if err != nil || len(key) != cdncrypt.KeySize || req.FileKey == "" || req.MediaType < 1 || req.MediaType > 3 ||
		req.To == "" || len(req.RawMD5) != 32 || req.FileSize != cdncrypt.PaddedSize(req.RawSize) {
		writeJSON(w, map[string]any{"ret": -1, "errmsg": "invalid upload request"})
		return
	}
	s.mu.Lock()
	s.uploads[req.FileKey] = pendingUpload{mediaType: req.MediaType, to: req.To, rawSize: req.RawSize, rawMD5: req.RawMD5, fileSize: req.FileSize, key: key}
	full := s.fullUpload
	s.mu.Unlock()
	param := "up-" + req.FileKey
	if full {
		writeJSON(w, map[string]any{"ret": 0, "upload_full_url": s.CDNURL() + "/upload?encrypted_query_param=" + param + "&filekey=" + req.FileKey})
		return
	}
	writeJSON(w, map[string]any{"ret": 0, "upload_param": param})
}

// cdnUpload checks the ciphertext: its length is the padded size
// announced, and it decrypts to rawsize bytes of the announced MD5.
func (s *Server) cdnUpload(w http.ResponseWriter, r *http.Request) {
	fileKey := r.URL.Query().Get("filekey")
	fail := func(code int, msg string) {
		w.Header().Set("x-error-message", msg)
		w.WriteHeader(code)
	}
	s.mu.Lock()
	if s.failUploads > 0 {
		s.failUploads--
		s.mu.Unlock()
		fail(http.StatusInternalServerError, "busy")
		return
	}
	up, ok := s.uploads[fileKey]
	s.mu.Unlock()
	if !ok || r.URL.Query().Get("encrypted_query_param") != "up-"+fileKey {
		fail(http.StatusBadRequest, "unknown filekey or upload param")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, up.fileSize+1))
	if err != nil || int64(len(body)) != up.fileSize {
		fail(http.StatusBadRequest, fmt.Sprintf("size %d is not the filesize %d", len(body), up.fileSize))
		return
	}
	plain, err := cdncrypt.Decrypt(up.key, body)
	sum := md5.Sum(plain)
	if err != nil || int64(len(plain)) != up.rawSize || hex.EncodeToString(sum[:]) != up.rawMD5 {
		fail(http.StatusBadRequest, "the content does not match rawsize and rawfilemd5")
		return
	}
	dl := "dl-" + fileKey
	s.mu.Lock()
	delete(s.uploads, fileKey)
	s.media[dl] = body
	s.accepted = append(s.accepted, Upload{FileKey: fileKey, MediaType: up.mediaType, To: up.to, Plain: plain})
	s.mu.Unlock()
	w.Header().Set("x-encrypted-param", dl)
	w.WriteHeader(http.StatusOK)
}

func (s *Server) cdnDownload(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	data, ok := s.media[r.URL.Query().Get("encrypted_query_param")]
	s.mu.Unlock()
	if !ok {
		http.Error(w, "no such media", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}

// AddMedia stores plain encrypted under a fresh random key on the CDN and
// returns its download parameter and key, for inbound message fixtures.
func (s *Server) AddMedia(plain []byte) (param string, key []byte) {
	key = make([]byte, cdncrypt.KeySize)
	_, _ = rand.Read(key)
	c, err := cdncrypt.Encrypt(key, plain)
	if err != nil {
		panic(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	param = fmt.Sprintf("media-%d", len(s.media)+1)
	s.media[param] = c
	return param, key
}
