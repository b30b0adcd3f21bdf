package fakeopenai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// InputItem is one entry of a Responses request's input.
type InputItem struct {
	// Type is "message", "function_call", "function_call_output" or
	// "reasoning" (a message without a type reads as "message").
	Type string
	// Role and Content are a message's; Content is reduced to its text as
	// for chat messages.
	Role    string
	Content string
	// CallID, Name and Arguments are a function_call's; CallID and Output
	// a function_call_output's.
	CallID    string
	Name      string
	Arguments string
	Output    string
	// ID is the item's id, when it has one (a reasoning item does);
	// EncryptedContent and Summary (the text of its summary parts,
	// joined) are a reasoning item's.
	ID               string
	EncryptedContent string
	Summary          string
}

// ToolTypes returns the type of each of the request's tools, in order.
func (r Request) ToolTypes() []string {
	types := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		types[i] = t.Type
	}
	return types
}

// wireResponsesRequest is the subset of a Responses body the fake decodes.
type wireResponsesRequest struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"`
	Tools        []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"tools"`
}

func decodeResponsesRequest(r *Request) {
	var all map[string]any
	if json.Unmarshal(r.Body, &all) != nil {
		return
	}
	r.JSON = all
	var w wireResponsesRequest
	if json.Unmarshal(r.Body, &w) != nil {
		return
	}
	r.Model, r.Stream, r.Instructions = w.Model, w.Stream, w.Instructions
	var text string
	if json.Unmarshal(w.Input, &text) == nil {
		// A bare string input is one user message.
		r.Input = []InputItem{{Type: "message", Role: "user", Content: text}}
	} else {
		var items []struct {
			Type      string          `json:"type"`
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			CallID    string          `json:"call_id"`
			Name      string          `json:"name"`
			Arguments string          `json:"arguments"`
			Output    json.RawMessage `json:"output"`
			ID        string          `json:"id"`
			Encrypted string          `json:"encrypted_content"`
			Summary   json.RawMessage `json:"summary"`
		}
		_ = json.Unmarshal(w.Input, &items)
		for _, it := range items {
			typ := it.Type
			if typ == "" {
				typ = "message"
			}
			r.Input = append(r.Input, InputItem{Type: typ, Role: it.Role, Content: contentText(it.Content),
				CallID: it.CallID, Name: it.Name, Arguments: it.Arguments, Output: contentText(it.Output),
				ID: it.ID, EncryptedContent: it.Encrypted, Summary: contentText(it.Summary)})
		}
	}
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, Tool{Type: t.Type, Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
}

// Wire shapes of Responses events, as OpenAI sends them.
type (
	respTextDelta struct {
		Type           string   `json:"type"`
		ItemID         string   `json:"item_id"`
		OutputIndex    int      `json:"output_index"`
		ContentIndex   int      `json:"content_index"`
		Delta          string   `json:"delta"`
		SequenceNumber int      `json:"sequence_number"`
		Logprobs       []string `json:"logprobs"`
	}
	respArgsDelta struct {
		Type           string `json:"type"`
		ItemID         string `json:"item_id"`
		OutputIndex    int    `json:"output_index"`
		Delta          string `json:"delta"`
		SequenceNumber int    `json:"sequence_number"`
	}
	respAnnotation struct {
		Type       string `json:"type"`
		StartIndex int    `json:"start_index"`
		EndIndex   int    `json:"end_index"`
		URL        string `json:"url"`
		Title      string `json:"title"`
	}
)

// respRunner serves one scripted reply on the Responses wire.
type respRunner struct {
	runner
	seq    int
	output []map[string]any // finished output items, for the final response
	// msg is the open message item, if any.
	msg        map[string]any
	msgIndex   int
	msgText    strings.Builder
	msgNotes   []respAnnotation
	calls      int
	searches   int
	reasonings int
	// quiet builds the items without writing events (a non-streaming
	// reply).
	quiet bool
}

func (r *respRunner) serve() {
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
	if !r.send("response.created", map[string]any{"response": r.response("in_progress")}) ||
		!r.send("response.in_progress", map[string]any{"response": r.response("in_progress")}) {
		return
	}
	for _, st := range r.plan.steps {
		if !r.step(st) {
			return
		}
	}
	if r.plan.noDone {
		return
	}
	if !r.closeMessage() {
		return
	}
	typ, resp := r.final()
	r.send(typ, map[string]any{"response": resp})
}

// final is the terminal event's type and response object.
func (r *respRunner) final() (string, map[string]any) {
	if t := r.plan.terminal; t != nil {
		if t.kind == kindFailed {
			resp := r.response("failed")
			resp["error"] = map[string]any{"code": t.a, "message": t.b}
			return "response.failed", resp
		}
		resp := r.response("incomplete")
		resp["incomplete_details"] = map[string]any{"reason": t.a}
		return "response.incomplete", resp
	}
	return "response.completed", r.response("completed")
}

// response renders the response object with the output so far.
func (r *respRunner) response(status string) map[string]any {
	out := r.output
	if out == nil {
		out = []map[string]any{}
	}
	resp := map[string]any{
		"id": r.id, "object": "response", "created_at": 0, "status": status, "model": r.req.Model,
		"output": out, "error": nil, "incomplete_details": nil,
	}
	if u := r.plan.usage; u != nil && status != "in_progress" {
		var cached int64 // OpenAI always says, 0 when nothing was cached
		if u.cache != nil {
			cached = *u.cache
		}
		resp["usage"] = map[string]any{"input_tokens": u.in, "output_tokens": u.out, "total_tokens": u.in + u.out,
			"input_tokens_details": map[string]any{"cached_tokens": cached}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	}
	return resp
}

// send writes one event, with its type and sequence number set.
func (r *respRunner) send(typ string, fields map[string]any) bool {
	fields["type"] = typ
	fields["sequence_number"] = r.seq
	r.seq++
	return r.typedEvent(typ, mustJSON(fields))
}

// typedEvent writes "event: <typ>" and "data: <payload>", after the pace.
func (r *respRunner) typedEvent(typ string, payload []byte) bool {
	if r.quiet {
		return true
	}
	if r.pace > 0 && !r.wait(r.pace) {
		return false
	}
	r.buf = respFrame(r.buf[:0], typ, payload)
	if !r.write(r.buf) {
		return false
	}
	r.flush()
	return true
}

func respFrame(dst []byte, typ string, payload []byte) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, typ...)
	dst = append(dst, '\n')
	return frame(dst, payload)
}

func (r *respRunner) step(st Step) bool {
	switch st.kind {
	case kindText:
		for _, c := range st.strs {
			if !r.text(c) {
				return false
			}
		}
	case kindRepeat:
		return r.repeat(st.n, st.a)
	case kindCitation:
		if !r.openMessage() {
			return false
		}
		n := r.msgText.Len()
		a := respAnnotation{Type: "url_citation", StartIndex: n, EndIndex: n, URL: st.a, Title: st.b}
		r.msgNotes = append(r.msgNotes, a)
		return r.send("response.output_text.annotation.added", map[string]any{
			"item_id": r.msg["id"], "output_index": r.msgIndex, "content_index": 0,
			"annotation_index": len(r.msgNotes) - 1, "annotation": a})
	case kindToolCall:
		return r.toolCall(st)
	case kindWebSearch:
		return r.webSearch(st.a)
	case kindReasoning:
		return r.reasoning(st.a, st.b)
	case kindFinish:
		// finish_reason is a chat field; the Responses reply ends with
		// its terminal event.
	case kindEvent:
		// Verbatim, with the event type taken from the payload.
		var t struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(st.a), &t)
		if t.Type == "" {
			return r.event([]byte(st.a))
		}
		return r.typedEvent(t.Type, []byte(st.a))
	default:
		return r.runner.step(st)
	}
	return true
}

// openMessage starts a message item unless one is open.
func (r *respRunner) openMessage() bool {
	if r.msg != nil {
		return true
	}
	r.msgIndex = len(r.output)
	r.msg = map[string]any{"id": "msg_fake_" + strconv.Itoa(r.msgIndex), "type": "message", "status": "in_progress",
		"role": "assistant", "content": []any{}}
	r.msgText.Reset()
	r.msgNotes = nil
	// The item goes into the output now, so later items follow it.
	r.output = append(r.output, nil)
	return r.send("response.output_item.added", map[string]any{"output_index": r.msgIndex, "item": r.msg}) &&
		r.send("response.content_part.added", map[string]any{"item_id": r.msg["id"], "output_index": r.msgIndex,
			"content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
}

func (r *respRunner) textDelta(c string) []byte {
	ev := respTextDelta{Type: "response.output_text.delta", ItemID: r.msg["id"].(string), OutputIndex: r.msgIndex,
		Delta: c, SequenceNumber: r.seq, Logprobs: []string{}}
	r.seq++
	return mustJSON(ev)
}

func (r *respRunner) text(c string) bool {
	if !r.openMessage() {
		return false
	}
	r.msgText.WriteString(c)
	return r.typedEvent("response.output_text.delta", r.textDelta(c))
}

// repeat writes n deltas of chunk from one encoding of the event (so they
// share one sequence_number), batched as on the chat wire.
func (r *respRunner) repeat(n int, chunk string) bool {
	if n <= 0 {
		return true
	}
	if !r.openMessage() {
		return false
	}
	r.msgText.WriteString(strings.Repeat(chunk, n))
	if r.quiet {
		return true
	}
	if r.pace > 0 {
		for ; n > 0; n-- {
			if !r.typedEvent("response.output_text.delta", r.textDelta(chunk)) {
				return false
			}
		}
		return true
	}
	ev := respFrame(nil, "response.output_text.delta", r.textDelta(chunk))
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

// closeMessage finishes the open message item, if any.
func (r *respRunner) closeMessage() bool {
	if r.msg == nil {
		return true
	}
	notes := r.msgNotes
	if notes == nil {
		notes = []respAnnotation{}
	}
	part := map[string]any{"type": "output_text", "text": r.msgText.String(), "annotations": notes}
	id := r.msg["id"]
	done := map[string]any{"id": id, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
	r.output[r.msgIndex] = done
	r.msg = nil
	return r.send("response.output_text.done", map[string]any{"item_id": id, "output_index": r.msgIndex, "content_index": 0, "text": part["text"]}) &&
		r.send("response.content_part.done", map[string]any{"item_id": id, "output_index": r.msgIndex, "content_index": 0, "part": part}) &&
		r.send("response.output_item.done", map[string]any{"output_index": r.msgIndex, "item": done})
}

func (r *respRunner) toolCall(st Step) bool {
	if !r.closeMessage() {
		return false
	}
	idx := len(r.output)
	r.calls++
	id := "fc_fake_" + strconv.Itoa(r.calls)
	item := map[string]any{"id": id, "type": "function_call", "status": "in_progress", "call_id": st.a, "name": st.b, "arguments": ""}
	r.output = append(r.output, nil)
	if !r.send("response.output_item.added", map[string]any{"output_index": idx, "item": item}) {
		return false
	}
	for _, f := range st.strs {
		ev := respArgsDelta{Type: "response.function_call_arguments.delta", ItemID: id, OutputIndex: idx, Delta: f, SequenceNumber: r.seq}
		r.seq++
		if !r.typedEvent(ev.Type, mustJSON(ev)) {
			return false
		}
	}
	args := strings.Join(st.strs, "")
	done := map[string]any{"id": id, "type": "function_call", "status": "completed", "call_id": st.a, "name": st.b, "arguments": args}
	r.output[idx] = done
	return r.send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": idx, "arguments": args}) &&
		r.send("response.output_item.done", map[string]any{"output_index": idx, "item": done})
}

func (r *respRunner) webSearch(query string) bool {
	if !r.closeMessage() {
		return false
	}
	idx := len(r.output)
	r.searches++
	id := "ws_fake_" + strconv.Itoa(r.searches)
	r.output = append(r.output, nil)
	done := map[string]any{"id": id, "type": "web_search_call", "status": "completed",
		"action": map[string]any{"type": "search", "query": query}}
	r.output[idx] = done
	return r.send("response.output_item.added", map[string]any{"output_index": idx,
		"item": map[string]any{"id": id, "type": "web_search_call", "status": "in_progress"}}) &&
		r.send("response.web_search_call.in_progress", map[string]any{"item_id": id, "output_index": idx}) &&
		r.send("response.web_search_call.searching", map[string]any{"item_id": id, "output_index": idx}) &&
		r.send("response.web_search_call.completed", map[string]any{"item_id": id, "output_index": idx}) &&
		r.send("response.output_item.done", map[string]any{"output_index": idx, "item": done})
}

func (r *respRunner) reasoning(summary, encrypted string) bool {
	if !r.closeMessage() {
		return false
	}
	idx := len(r.output)
	r.reasonings++
	id := "rs_fake_" + strconv.Itoa(r.reasonings)
	r.output = append(r.output, nil)
	parts := []any{}
	if summary != "" {
		parts = append(parts, map[string]any{"type": "summary_text", "text": summary})
	}
	var enc any
	if encrypted != "" {
		enc = encrypted
	}
	done := map[string]any{"id": id, "type": "reasoning", "summary": parts, "encrypted_content": enc}
	r.output[idx] = done
	if !r.send("response.output_item.added", map[string]any{"output_index": idx,
		"item": map[string]any{"id": id, "type": "reasoning", "summary": []any{}, "encrypted_content": nil}}) {
		return false
	}
	if summary != "" {
		part := map[string]any{"type": "summary_text", "text": summary}
		if !r.send("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": idx, "summary_index": 0,
			"part": map[string]any{"type": "summary_text", "text": ""}}) ||
			!r.send("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": idx, "summary_index": 0, "delta": summary}) ||
			!r.send("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": idx, "summary_index": 0, "text": summary}) ||
			!r.send("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": idx, "summary_index": 0, "part": part}) {
			return false
		}
	}
	return r.send("response.output_item.done", map[string]any{"output_index": idx, "item": done})
}

// serveWhole answers a non-streaming request with the final response
// object built from the same script.
func (r *respRunner) serveWhole() {
	var raw []byte
	isRaw := false
	r.quiet = true // the items are built as for a stream, without events
	for _, st := range r.plan.steps {
		switch st.kind {
		case kindText, kindRepeat, kindCitation, kindToolCall, kindWebSearch, kindReasoning:
			r.step(st)
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
	r.closeMessage()
	r.quiet = false
	setDefault(r.w.Header(), "Content-Type", "application/json")
	r.w.WriteHeader(http.StatusOK)
	if isRaw {
		r.write(raw)
		return
	}
	_, resp := r.final()
	r.write(mustJSON(resp))
}
