package fakeopenai

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Wire shapes of the replies, as OpenAI sends them.
type (
	wireChunk struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []wireChoice `json:"choices"`
		Usage   *wireUsage   `json:"usage,omitempty"`
	}
	wireChoice struct {
		Index        int       `json:"index"`
		Delta        wireDelta `json:"delta"`
		FinishReason *string   `json:"finish_reason"`
	}
	wireDelta struct {
		Role      string          `json:"role,omitempty"`
		Content   *string         `json:"content,omitempty"`
		ToolCalls []wireToolDelta `json:"tool_calls,omitempty"`
	}
	wireToolDelta struct {
		Index    int          `json:"index"`
		ID       string       `json:"id,omitempty"`
		Type     string       `json:"type,omitempty"`
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	wireUsage struct {
		PromptTokens        int64             `json:"prompt_tokens"`
		CompletionTokens    int64             `json:"completion_tokens"`
		TotalTokens         int64             `json:"total_tokens"`
		PromptTokensDetails *wireTokenDetails `json:"prompt_tokens_details,omitempty"`
	}
	wireTokenDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	}
	wireComplete struct {
		ID      string            `json:"id"`
		Object  string            `json:"object"`
		Created int64             `json:"created"`
		Model   string            `json:"model"`
		Choices []wireWholeChoice `json:"choices"`
		Usage   wireUsage         `json:"usage"`
	}
	wireWholeChoice struct {
		Index        int         `json:"index"`
		Message      wireMessage `json:"message"`
		FinishReason string      `json:"finish_reason"`
	}
	wireMessage struct {
		Role      string         `json:"role"`
		Content   *string        `json:"content"`
		ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
	}
	wireToolCall struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
)

// runner serves one scripted reply.
type runner struct {
	s    *Server
	w    http.ResponseWriter
	ctx  context.Context
	plan plan
	req  *Request
	id   string

	pace     time.Duration
	sentRole bool
	buf      []byte
}

func (r *runner) serve() {
	h := r.w.Header()
	for _, kv := range r.plan.headers {
		h.Add(kv[0], kv[1])
	}
	if r.plan.status != 0 {
		setDefault(h, "Content-Type", "application/json")
		r.w.WriteHeader(r.plan.status)
		_, _ = r.w.Write([]byte(r.plan.statusBody))
		return
	}
	if !r.req.Stream {
		r.serveWhole()
		return
	}
	setDefault(h, "Content-Type", "text/event-stream")
	setDefault(h, "Cache-Control", "no-cache")
	r.w.WriteHeader(http.StatusOK)
	r.flush()
	for _, st := range r.plan.steps {
		if !r.step(st) {
			return
		}
	}
	if r.plan.noDone {
		return
	}
	if !r.plan.hasFinish {
		reason := "stop"
		if r.plan.hasToolCall {
			reason = "tool_calls"
		}
		if !r.event(r.chunk(wireDelta{}, &reason)) {
			return
		}
	}
	if u := r.plan.usage; u != nil && r.req.IncludeUsage {
		c := wireChunk{ID: r.id, Object: "chat.completion.chunk", Model: r.req.Model, Choices: []wireChoice{},
			Usage: u.wireUsage()}
		if !r.event(mustJSON(c)) {
			return
		}
	}
	if !r.event([]byte("[DONE]")) {
		return
	}
}

func setDefault(h http.Header, k, v string) {
	if h.Get(k) == "" {
		h.Set(k, v)
	}
}

// step runs one content step of a streamed reply; false means stop (the
// client went away, the server closed, or the step was Hang).
func (r *runner) step(st Step) bool {
	switch st.kind {
	case kindText:
		for _, c := range st.strs {
			if !r.event(r.chunk(wireDelta{Content: &c}, nil)) {
				return false
			}
		}
	case kindToolCall:
		head := wireToolDelta{Index: st.index, ID: st.a, Type: "function", Function: wireFunction{Name: st.b}}
		if !r.event(r.chunk(wireDelta{ToolCalls: []wireToolDelta{head}}, nil)) {
			return false
		}
		for _, f := range st.strs {
			frag := wireToolDelta{Index: st.index, Function: wireFunction{Arguments: f}}
			if !r.event(r.chunk(wireDelta{ToolCalls: []wireToolDelta{frag}}, nil)) {
				return false
			}
		}
	case kindFinish:
		reason := st.a
		return r.event(r.chunk(wireDelta{}, &reason))
	case kindEvent:
		return r.event([]byte(st.a))
	case kindRaw:
		if !r.write(st.raw) {
			return false
		}
		r.flush()
	case kindRepeat:
		return r.repeat(st.n, st.a)
	case kindDelay:
		return r.wait(st.d)
	case kindPace:
		r.pace = st.d
	case kindHang:
		r.wait(-1)
		return false
	}
	// WebSearch and Citation are Responses steps.
	return true
}

// repeat writes n deltas of chunk from one encoding of the event.
func (r *runner) repeat(n int, chunk string) bool {
	if n <= 0 {
		return true
	}
	if !r.sentRole || r.pace > 0 {
		// The first event carries the role, and paced events go one by one.
		if !r.event(r.chunk(wireDelta{Content: &chunk}, nil)) {
			return false
		}
		n--
		if r.pace > 0 {
			for ; n > 0; n-- {
				if !r.event(r.chunk(wireDelta{Content: &chunk}, nil)) {
					return false
				}
			}
			return true
		}
	}
	ev := frame(nil, r.chunk(wireDelta{Content: &chunk}, nil))
	// Batch events into writes of about 32 KiB: few syscalls, no per-event
	// allocation.
	per := max(1, (32<<10)/len(ev))
	batch := bytes.Repeat(ev, min(per, n))
	for n > 0 {
		k := min(per, n)
		if !r.write(batch[:k*len(ev)]) {
			return false
		}
		n -= k
	}
	r.flush()
	return true
}

// chunk encodes a chat.completion.chunk with one choice.
func (r *runner) chunk(d wireDelta, finish *string) []byte {
	if !r.sentRole && (d.Content != nil || d.ToolCalls != nil) {
		d.Role = "assistant"
		r.sentRole = true
	}
	c := wireChunk{ID: r.id, Object: "chat.completion.chunk", Model: r.req.Model,
		Choices: []wireChoice{{Index: 0, Delta: d, FinishReason: finish}}}
	return mustJSON(c)
}

// event writes one SSE event and flushes it, after the pace.
func (r *runner) event(payload []byte) bool {
	if r.pace > 0 && !r.wait(r.pace) {
		return false
	}
	r.buf = frame(r.buf[:0], payload)
	if !r.write(r.buf) {
		return false
	}
	r.flush()
	return true
}

func frame(dst, payload []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, payload...)
	return append(dst, "\n\n"...)
}

func (r *runner) write(b []byte) bool {
	_, err := r.w.Write(b)
	return err == nil
}

func (r *runner) flush() {
	if f, ok := r.w.(http.Flusher); ok {
		f.Flush()
	}
}

// wait sleeps d (forever when d < 0) unless the client goes away or the
// server closes first, which it reports as false.
func (r *runner) wait(d time.Duration) bool {
	var tc <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-tc:
		return true
	case <-r.ctx.Done():
		return false
	case <-r.s.closed:
		return false
	}
}

// serveWhole answers a non-streaming request with one chat.completion.
func (r *runner) serveWhole() {
	var (
		text   strings.Builder
		calls  []wireToolCall
		finish string
		raw    []byte
		isRaw  bool
	)
	for _, st := range r.plan.steps {
		switch st.kind {
		case kindText:
			for _, c := range st.strs {
				text.WriteString(c)
			}
		case kindRepeat:
			text.WriteString(strings.Repeat(st.a, max(st.n, 0)))
		case kindToolCall:
			calls = append(calls, wireToolCall{ID: st.a, Type: "function",
				Function: wireFunction{Name: st.b, Arguments: strings.Join(st.strs, "")}})
		case kindFinish:
			finish = st.a
		case kindRaw:
			raw, isRaw = append(raw, st.raw...), true
		case kindDelay:
			if !r.wait(st.d) {
				return
			}
		case kindHang:
			r.wait(-1)
			return
		}
	}
	h := r.w.Header()
	setDefault(h, "Content-Type", "application/json")
	if isRaw {
		r.w.WriteHeader(http.StatusOK)
		r.write(raw)
		return
	}
	if finish == "" {
		finish = "stop"
		if len(calls) > 0 {
			finish = "tool_calls"
		}
	}
	var c wireComplete
	c.ID, c.Object, c.Model = r.id, "chat.completion", r.req.Model
	c.Choices = make([]wireWholeChoice, 1)
	ch := &c.Choices[0]
	ch.Message.Role = "assistant"
	if text.Len() > 0 || len(calls) == 0 {
		s := text.String()
		ch.Message.Content = &s
	}
	ch.Message.ToolCalls = calls
	ch.FinishReason = finish
	if u := r.plan.usage; u != nil {
		c.Usage = *u.wireUsage()
	}
	r.w.WriteHeader(http.StatusOK)
	r.write(mustJSON(c))
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("fakeopenai: " + err.Error())
	}
	return b
}

// wireUsage is a Usage or CachedUsage step on the chat wire.
func (s *Step) wireUsage() *wireUsage {
	w := &wireUsage{PromptTokens: s.in, CompletionTokens: s.out, TotalTokens: s.in + s.out}
	if s.cache != nil {
		w.PromptTokensDetails = &wireTokenDetails{CachedTokens: *s.cache}
	}
	return w
}
