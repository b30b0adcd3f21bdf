package fakeopenai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// chatPath is where clients POST chat completions, relative to the root.
const chatPath = "/v1/chat/completions"

// responsesPath is where clients POST Responses requests.
const responsesPath = "/v1/responses"

// modelsPath is where clients GET the model list (SetModels).
const modelsPath = "/v1/models"

// maxRequestBody bounds what the fake reads of a request body; tests never
// need more, and a runaway client must not exhaust memory.
const maxRequestBody = 64 << 20

// Server is a running fake. It is safe for concurrent use.
type Server struct {
	hs *httptest.Server

	mu      sync.Mutex
	replies []Reply
	reqs    []Request
	chats   int
	resps   int
	changed chan struct{} // closed and replaced whenever reqs grows
	// models is the list GET /v1/models serves; nil: the path is
	// unknown (404), as on endpoints that list no models.
	models     []string
	modelsReqs []Request

	closed    chan struct{}
	closeOnce sync.Once
}

// NewServer starts a fake on a loopback port. Close it when done.
func NewServer() *Server {
	s := &Server{changed: make(chan struct{}), closed: make(chan struct{})}
	s.hs = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the API base URL, ending in /v1: clients POST to
// URL()+"/chat/completions" or URL()+"/responses".
func (s *Server) URL() string { return s.hs.URL + "/v1" }

// Close unblocks hanging and delaying replies, drops client connections and
// shuts the server down. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.hs.CloseClientConnections()
		s.hs.Close()
	})
}

// Enqueue appends replies to the script. Each chat completions or
// Responses request consumes the next one.
func (s *Server) Enqueue(replies ...Reply) {
	s.mu.Lock()
	s.replies = append(s.replies, replies...)
	s.mu.Unlock()
}

// SetModels makes GET /v1/models answer an OpenAI model list of ids
// (SetModels() an empty list); before any call the path answers 404, as on
// endpoints that list no models. The listing's
// requests are kept apart (ModelRequests), so that Requests and
// WaitRequests count the model requests only.
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string{}, ids...)
}

// ModelRequests returns the requests of GET /v1/models received so far.
func (s *Server) ModelRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneRequests(s.modelsReqs)
}

// serveModels answers GET /v1/models.
func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.modelsReqs = append(s.modelsReqs, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()})
	models := s.models
	s.mu.Unlock()
	switch {
	case models == nil:
		writeError(w, http.StatusNotFound, "fakeopenai: unknown path "+r.URL.Path)
	case r.Method != http.MethodGet:
		writeError(w, http.StatusMethodNotAllowed, "fakeopenai: method "+r.Method+" not allowed")
	default:
		type model struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			OwnedBy string `json:"owned_by"`
		}
		list := struct {
			Object string  `json:"object"`
			Data   []model `json:"data"`
		}{Object: "list", Data: []model{}}
		for _, id := range models {
			list.Data = append(list.Data, model{ID: id, Object: "model", OwnedBy: "fakeopenai"})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}
}

// Requests returns every request received so far, in arrival order, but
// those of the model listing (ModelRequests).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneRequests(s.reqs)
}

// WaitRequests blocks until at least n requests have arrived and returns
// them all. It fails when ctx ends or the server closes first.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	for {
		s.mu.Lock()
		if len(s.reqs) >= n {
			out := cloneRequests(s.reqs)
			s.mu.Unlock()
			return out, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.closed:
			return nil, errors.New("fakeopenai: server closed")
		}
	}
}

func cloneRequests(in []Request) []Request {
	out := make([]Request, len(in))
	for i, r := range in {
		r.Header = r.Header.Clone()
		out[i] = r
	}
	return out
}

// Request is one request the fake received. The fields after Body are
// decoded from it when it is a chat completions or Responses JSON object,
// and zero otherwise.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte

	// Wire is "chat" or "responses" by the path, "" for any other.
	Wire   string
	Model  string
	Stream bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
	Messages     []Message
	// Tools are the function tools (chat) or every tool (responses, where
	// a hosted tool such as {"type":"web_search"} has no name).
	Tools []Tool
	// Instructions and Input are a Responses request's.
	Instructions string
	Input        []InputItem
	// JSON is the whole decoded body, for fields the typed ones miss.
	JSON map[string]any
}

// Message is one entry of a request's messages.
type Message struct {
	Role string
	// Content is the text content; an array of content parts is reduced to
	// its text parts, joined.
	Content    string
	Name       string
	ToolCalls  []MessageToolCall
	ToolCallID string
}

// MessageToolCall is a tool call in an assistant message of a request.
type MessageToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Tool is one entry of a request's tools.
type Tool struct {
	Type        string
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolNames returns the names of the request's tools, in order.
func (r Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

// Roles returns the roles of the request's messages, in order.
func (r Request) Roles() []string {
	roles := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		roles[i] = m.Role
	}
	return roles
}

// wireRequest is the subset of a chat completions body the fake decodes.
type wireRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		Name       string          `json:"name"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func decodeRequest(r *Request) {
	var all map[string]any
	if json.Unmarshal(r.Body, &all) != nil {
		return
	}
	r.JSON = all
	var w wireRequest
	if json.Unmarshal(r.Body, &w) != nil {
		return
	}
	r.Model, r.Stream = w.Model, w.Stream
	r.IncludeUsage = w.StreamOptions != nil && w.StreamOptions.IncludeUsage
	for _, m := range w.Messages {
		msg := Message{Role: m.Role, Content: contentText(m.Content), Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, MessageToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		r.Messages = append(r.Messages, msg)
	}
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, Tool{Type: t.Type, Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
}

// contentText reduces a message content (a string, null, or an array of
// parts) to its text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == modelsPath {
		s.serveModels(w, r)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	isChat := r.URL.Path == chatPath
	isResp := r.URL.Path == responsesPath
	switch {
	case isChat:
		req.Wire = "chat"
		decodeRequest(&req)
	case isResp:
		req.Wire = "responses"
		decodeResponsesRequest(&req)
	}

	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	close(s.changed)
	s.changed = make(chan struct{})
	var (
		reply Reply
		have  bool
		n     int
	)
	if (isChat || isResp) && r.Method == http.MethodPost {
		if isChat {
			s.chats++
			n = s.chats
		} else {
			s.resps++
			n = s.resps
		}
		if len(s.replies) > 0 {
			reply, have = s.replies[0], true
			s.replies = s.replies[1:]
		}
	}
	s.mu.Unlock()

	switch {
	case !isChat && !isResp:
		writeError(w, http.StatusNotFound, "fakeopenai: unknown path "+r.URL.Path)
	case r.Method != http.MethodPost:
		writeError(w, http.StatusMethodNotAllowed, "fakeopenai: method "+r.Method+" not allowed")
	case !have:
		writeError(w, http.StatusInternalServerError, "fakeopenai: no scripted reply left")
	case isResp:
		p := prepare(reply)
		run := &respRunner{runner: runner{s: s, w: w, ctx: r.Context(), plan: p, req: &req, id: "resp_fake_" + strconv.Itoa(n)}}
		run.serve()
	default:
		p := prepare(reply)
		run := &runner{s: s, w: w, ctx: r.Context(), plan: p, req: &req, id: "chatcmpl-fake-" + strconv.Itoa(n)}
		run.serve()
	}
}

func writeError(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, errorBody(code, message))
}
