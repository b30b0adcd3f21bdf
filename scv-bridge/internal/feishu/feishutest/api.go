package feishutest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// Upload limits the fake enforces, as the platform does.
const (
	maxImage = 10 << 20
	maxFile  = 30 << 20
)

// send serves message creation and replies: the same uuid gives the same
// message again without a second one; more than recipientQPS sends to one
// recipient within a second get 429.
func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ReceiveID string `json:"receive_id"`
		MsgType   string `json:"msg_type"`
		Content   string `json:"content"`
		UUID      string `json:"uuid"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.MsgType == "" || !json.Valid([]byte(req.Content)) {
		reply(w, http.StatusBadRequest, 230001, "invalid request body", nil)
		return
	}
	m := Message{ReplyTo: r.PathValue("id"), ReceiveIDType: r.URL.Query().Get("receive_id_type"), ReceiveID: req.ReceiveID,
		MsgType: req.MsgType, Content: req.Content, UUID: req.UUID, At: time.Now()}
	if m.ReplyTo == "" && (m.ReceiveID == "" || m.ReceiveIDType == "") {
		reply(w, http.StatusBadRequest, 230001, "receive_id and receive_id_type are required", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.byUUID[req.UUID]; ok && req.UUID != "" {
		reply(w, http.StatusOK, 0, "success", map[string]string{"message_id": old.ID, "chat_id": old.ChatID})
		return
	}
	if s.dlpWord != "" && strings.Contains(req.Content, s.dlpWord) {
		reply(w, http.StatusBadRequest, 230028, "The messages do NOT pass the audit", nil)
		return
	}
	key := m.ReceiveIDType + ":" + m.ReceiveID
	m.ChatID = m.ReceiveID
	if m.ReplyTo != "" {
		m.ChatID = s.chatOf(m.ReplyTo)
		key = "chat_id:" + m.ChatID
	}
	if !s.allow(key, m.At) {
		s.rateLimited++
		w.Header().Set("x-ogw-ratelimit-limit", "5")
		w.Header().Set("x-ogw-ratelimit-reset", "1")
		reply(w, http.StatusTooManyRequests, 99991400, "request trigger frequency limit", nil)
		return
	}
	m.ID = s.id("om")
	s.messages = append(s.messages, m)
	if req.UUID != "" {
		s.byUUID[req.UUID] = m
	}
	reply(w, http.StatusOK, 0, "success", map[string]string{"message_id": m.ID, "chat_id": m.ChatID})
}

// chatOf is the chat of a message the fake sent, or a fixed chat for
// messages it did not (inbound ones).
func (s *Server) chatOf(id string) string {
	for _, m := range s.messages {
		if m.ID == id {
			return m.ChatID
		}
	}
	return "oc_inbound"
}

// allow counts a send to key and says whether it is within the limit.
func (s *Server) allow(key string, now time.Time) bool {
	var recent []time.Time
	for _, t := range s.sendTimes[key] {
		if now.Sub(t) < time.Second {
			recent = append(recent, t)
		}
	}
	if len(recent) >= s.recipientQPS {
		s.sendTimes[key] = recent
		return false
	}
	s.sendTimes[key] = append(recent, now)
	return true
}

func (s *Server) upload(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		reply(w, http.StatusBadRequest, 234001, "invalid multipart body", nil)
		return
	}
	image := strings.HasSuffix(r.URL.Path, "/images")
	field, limit, kind := "file", maxFile, r.FormValue("file_type")
	if image {
		field, limit, kind = "image", maxImage, r.FormValue("image_type")
	}
	f, hdr, err := r.FormFile(field)
	if err != nil || kind == "" {
		reply(w, http.StatusBadRequest, 234001, "missing "+field+" or its type", nil)
		return
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	switch {
	case len(data) == 0:
		reply(w, http.StatusBadRequest, 234010, "file is empty", nil)
		return
	case len(data) > limit:
		reply(w, http.StatusBadRequest, 234006, "file size exceed the max value", nil)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := Upload{Kind: kind, Name: hdr.Filename, Data: data, Duration: r.FormValue("duration")}
	if image {
		u.Key = s.id("img_v3")
		s.uploads = append(s.uploads, u)
		reply(w, http.StatusOK, 0, "success", map[string]string{"image_key": u.Key})
		return
	}
	if r.FormValue("file_name") != "" {
		u.Name = r.FormValue("file_name")
	}
	u.Key = s.id("file_v3")
	s.uploads = append(s.uploads, u)
	reply(w, http.StatusOK, 0, "success", map[string]string{"file_key": u.Key})
}

// resource serves the media of an inbound message; a key that does not
// belong to that message is refused, as on the platform.
func (s *Server) resource(w http.ResponseWriter, r *http.Request) {
	typ := r.URL.Query().Get("type")
	if typ != "image" && typ != "file" {
		reply(w, http.StatusBadRequest, 234001, "type must be image or file", nil)
		return
	}
	s.mu.Lock()
	data, ok := s.resources[r.PathValue("id")][r.PathValue("key")]
	s.mu.Unlock()
	if !ok {
		reply(w, http.StatusBadRequest, 234003, "File not in msg.", nil)
		return
	}
	w.Header().Set("Content-Type", http.DetectContentType(data))
	_, _ = w.Write(data)
}

// AddMessage lets the fake answer GET /open-apis/im/v1/messages/{id} for a
// message it did not send (one a user sent), with its type and content
// object.
func (s *Server) AddMessage(id, msgType string, content any) {
	c, _ := json.Marshal(content)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.known[id] = Message{ID: id, MsgType: msgType, Content: string(c)}
}

// getMessage answers a message the fake sent or was told of.
func (s *Server) getMessage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	m, ok := s.known[id]
	for _, sent := range s.messages {
		if sent.ID == id {
			m, ok = sent, true
		}
	}
	s.mu.Unlock()
	if !ok {
		reply(w, http.StatusBadRequest, 230001, "message not found", nil)
		return
	}
	item := map[string]any{"message_id": m.ID, "msg_type": m.MsgType, "body": map[string]string{"content": m.Content}}
	reply(w, http.StatusOK, 0, "success", map[string]any{"items": []any{item}})
}
