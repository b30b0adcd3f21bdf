package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/provider"

	"github.com/scv-cli/scv/shared/textcut"
)

// responsesWire is the Responses format: POST /responses with the history
// as input items, and a stream of typed events ending in
// response.completed (or response.incomplete, or response.failed).
//
// The request body is this package's own small types (respRequest),
// written as github.com/openai/openai-go/v3's ResponseNewParams wrote it:
// a test checks the two against each other. openai-go itself is not
// linked: its packages were half of scv-server's binary, and their init
// and pages were most of the server's start-up time and resident memory
// (issue 23, docs/performance.md). The stream is read by this package, as
// on the chat wire: the same HTTP layer, SSE reader and limits, with a
// decoder of its own events (decodeEvent) instead of openai-go's, which
// decodes every event into its large union type.
//
// What the decoder reads:
//
//   - response.output_text.delta and response.refusal.delta: streamed
//     text. A message item that arrives only whole (output_item.done with
//     no deltas before it) has its text streamed then;
//   - function_call items (output_item.added/done) and
//     response.function_call_arguments.delta/done: tool calls, by item id
//     (by output_index for events without one), ordered by output_index;
//     the whole arguments of a done event replace what the deltas added
//     up to. The call's id is the item's call_id, which
//     function_call_output items answer;
//   - url_citation annotations (annotation.added, and those in done
//     content parts and message items): after the reply completes, the
//     cited URLs that the text does not contain are streamed as a final
//     "Sources:" list, deduplicated, in citation order, with titles, and
//     within the assistant text limit;
//   - response.completed: usage and the end; response.incomplete: the
//     same, with finish reason "length" for max_output_tokens (else the
//     reason given); response.failed and "error" events: a provider_error
//     with the provider's message;
//   - reasoning items (output_item.done): kept, when they carry
//     encrypted_content, as Response.Reasoning ({type, id, summary,
//     encrypted_content}, at most Limits.ReasoningItemBytes each, else
//     dropped with a warning). The loop stores them on the assistant
//     message, and the next request sends them back right before that
//     message's text and calls: with store false this is how a reasoning
//     model keeps its reasoning across tool calls. Requests therefore ask
//     for include ["reasoning.encrypted_content"]; a model that refuses
//     it with a 400 naming "encrypted" or "include" (OpenAI's models
//     without reasoning do) gets the request again without it and
//     without reasoning items, and so do its later requests;
//   - web_search_call items are the provider's own searches, not SCV tool
//     calls: only logged. Every other event is ignored.
//
// The same limits apply as on the chat wire. A done or completed event
// repeats the reply's text in one event, so a reply whose text nears the
// 1 MiB assistant limit also nears the 1 MiB SSE event limit; whichever is
// passed first fails it.
type responsesWire struct{}

func (responsesWire) encode(p *Provider, req provider.Request) (string, []byte, error) {
	body, err := p.buildResponsesRequest(req)
	if err != nil {
		return "", nil, err
	}
	data, err := json.Marshal(body)
	if err != nil {
		return "", nil, p.wrapf(provider.CodeProviderError, err, "request failed: %v", err)
	}
	return "/responses", data, nil
}

// respRequest is the body of a streaming POST /responses. Its members
// are written in the order openai-go's ResponseNewParams wrote them
// (testdata/responses_request.json); TestResponsesRequestMatchesOpenAIGo
// checks that the body means what the official client's would.
type respRequest struct {
	Instructions string   `json:"instructions,omitempty"`
	Store        bool     `json:"store"`
	Include      []string `json:"include,omitempty"`
	// Input holds respMessage, json.RawMessage (a reasoning item sent
	// back as the model produced it), respFunctionCall and
	// respFunctionCallOutput items.
	Input  []any  `json:"input"`
	Model  string `json:"model"`
	Tools  []any  `json:"tools,omitempty"`
	Stream bool   `json:"stream"`
}

// respMessage is an input message item ("easy input message").
type respMessage struct {
	Content string `json:"content"`
	Role    string `json:"role"`
	Type    string `json:"type"`
}

// respFunctionCall is a function_call input item: a call the model made.
type respFunctionCall struct {
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Type      string `json:"type"`
}

// respFunctionCallOutput is a function_call_output input item: a call's
// result.
type respFunctionCallOutput struct {
	Output string `json:"output"`
	CallID string `json:"call_id"`
	Type   string `json:"type"`
}

// respFunctionTool is a function tool.
type respFunctionTool struct {
	Strict      bool           `json:"strict"`
	Parameters  map[string]any `json:"parameters"`
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Type        string         `json:"type"`
}

// respHostedTool is a tool the provider runs itself (web_search).
type respHostedTool struct {
	Type string `json:"type"`
}

// buildResponsesRequest maps a provider.Request to a streaming Responses
// request.
func (p *Provider) buildResponsesRequest(req provider.Request) (respRequest, error) {
	var body respRequest
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	if model == "" {
		return body, p.errorf(provider.CodeProviderError, "no model configured")
	}
	// Reasoning is asked for and sent back encrypted, as store is false,
	// unless the model has shown it cannot take it.
	replay := p.encryptedReasoning(model)
	items, err := p.responsesInput(req.Messages, replay)
	if err != nil {
		return body, err
	}
	tools, err := p.responsesTools(req)
	if err != nil {
		return body, err
	}
	body.Model = model
	body.Instructions = req.System
	body.Input = items
	body.Tools = tools
	// SCV sends the whole history each time and never refers to a stored
	// response, so nothing is kept on the provider's side.
	body.Store = false
	if replay {
		body.Include = []string{"reasoning.encrypted_content"}
	}
	body.Stream = true
	return body, nil
}

// responsesInput maps the history to input items; replay sends an
// assistant message's reasoning items back before it.
func (p *Provider) responsesInput(msgs []provider.Message, replay bool) ([]any, error) {
	items := make([]any, 0, len(msgs))
	message := func(role, text string) respMessage {
		return respMessage{Content: text, Role: role, Type: "message"}
	}
	for i, m := range msgs {
		switch m.Role {
		case provider.RoleSystem:
			items = append(items, message("system", m.Content))
		case provider.RoleUser:
			items = append(items, message("user", m.Content))
		case provider.RoleAssistant:
			// An assistant turn that only called tools has no message item:
			// its calls are items of their own.
			// Its reasoning items go first, as the model produced them:
			// they must precede the calls they led to.
			if replay {
				for _, r := range m.Reasoning {
					if !json.Valid(r) {
						// Not what a reply produced (a damaged log):
						// the model can do without it.
						continue
					}
					items = append(items, r)
				}
			}
			if m.Content != "" {
				items = append(items, message("assistant", m.Content))
			}
			for _, tc := range m.ToolCalls {
				items = append(items, respFunctionCall{Arguments: tc.Arguments, CallID: tc.ID, Name: tc.Name, Type: "function_call"})
			}
		case provider.RoleTool:
			out := m.Content
			if out == "" {
				// As on the chat wire: an empty output reads as a missing one.
				out = "(no output)"
			}
			items = append(items, respFunctionCallOutput{Output: out, CallID: m.ToolCallID, Type: "function_call_output"})
		default:
			return nil, p.errorf(provider.CodeProviderError, "message %d has unknown role %q", i, m.Role)
		}
	}
	return items, nil
}

// responsesTools maps the request's tools to function tools, plus the
// hosted web search when the request asks for it.
func (p *Provider) responsesTools(req provider.Request) ([]any, error) {
	var tools []any
	for _, t := range req.Tools {
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		if len(t.Parameters) > 0 {
			schema = nil
			if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
				return nil, p.errorf(provider.CodeProviderError, "tool %q: its parameters are not a JSON object", t.Name)
			}
		}
		tools = append(tools, respFunctionTool{
			// The Responses API makes function tools strict by default,
			// which needs schemas SCV's tools do not have (every property
			// required, no optional fields).
			Strict:      false,
			Parameters:  schema,
			Name:        t.Name,
			Description: t.Description,
			Type:        "function",
		})
	}
	if req.HostedWebSearch {
		tools = append(tools, respHostedTool{Type: "web_search"})
	}
	return tools, nil
}

func (responsesWire) decoder(p *Provider, h provider.Handler) streamDecoder {
	rh, _ := h.(provider.ReasoningHandler)
	return &responsesDecoder{p: p, acc: newAccumulator(p, h), reasoner: rh, calls: map[string]*toolAcc{}, streamed: map[string]bool{}, cited: map[string]bool{},
		reasoningAt: map[string]int{}}
}

// responsesDecoder turns Responses events into a Response.
type responsesDecoder struct {
	p   *Provider
	acc *accumulator
	// reasoner takes the reasoning summary deltas; nil: they are skipped.
	reasoner provider.ReasoningHandler
	ev       respEvent // reused between events

	// calls are the function calls by item id ("#<output_index>" for an
	// item without one).
	calls map[string]*toolAcc
	// streamed holds the message items whose text came as deltas, so
	// their output_item.done does not repeat it.
	streamed map[string]bool
	cites    []citation
	cited    map[string]bool
	terminal bool
	// reasoning are the kept reasoning items, in output order, and
	// reasoningAt their index by item id.
	reasoning   []json.RawMessage
	reasoningAt map[string]int
}

// citation is a url_citation annotation.
type citation struct{ url, title string }

// event reads one event. The Responses API names each SSE event after
// the type its data declares; a named event the decoder does not read (a
// lifecycle event, a keep-alive ping, a vendor's own event) is ignored
// without decoding its data, which need not be JSON. An unnamed event (or
// one named "message", the SSE default) is decoded and read by its type.
func (d *responsesDecoder) event(name, data []byte) (bool, error) {
	if len(name) > 0 && string(name) != "message" {
		if _, ok := respHandlers[string(name)]; !ok {
			return false, nil
		}
	}
	ev := &d.ev
	if err := decodeEvent(data, ev); err != nil {
		if string(name) == "error" {
			return false, d.p.errorf(provider.CodeProviderError, "provider reported an error in the stream: %s", providerMessage(data))
		}
		return false, d.p.wrapf(provider.CodeProviderError, err, "malformed stream: %v", err)
	}
	if h := respHandlers[ev.Type]; h != nil {
		return h(d, ev)
	}
	// Lifecycle events (response.created, content_part.added, the
	// web_search_call progress events, reasoning summary parts, whose
	// text the reasoning item's done event repeats...) carry nothing
	// else the Response needs. (Reasoning summary deltas go to a
	// handler that shows reasoning, reasoningDelta.)
	return false, nil
}

// respHandlers are the events the decoder reads, by type.
var respHandlers = map[string]func(*responsesDecoder, *respEvent) (done bool, err error){
	"response.output_text.delta":             (*responsesDecoder).textDelta,
	"response.refusal.delta":                 (*responsesDecoder).textDelta,
	"response.reasoning_summary_text.delta":  (*responsesDecoder).reasoningDelta,
	"response.function_call_arguments.delta": (*responsesDecoder).arguments,
	"response.function_call_arguments.done":  (*responsesDecoder).arguments,
	"response.output_item.added":             (*responsesDecoder).itemEvent,
	"response.output_item.done":              (*responsesDecoder).itemEvent,
	"response.output_text.annotation.added":  (*responsesDecoder).annotation,
	"response.content_part.done":             (*responsesDecoder).partDone,
	"response.completed":                     (*responsesDecoder).completed,
	"response.incomplete":                    (*responsesDecoder).completed,
	"response.failed":                        (*responsesDecoder).failed,
	"error":                                  (*responsesDecoder).errorEvent,
}

// textDelta streams text; a refusal is what the model says instead of an
// answer, so it is shown too.
func (d *responsesDecoder) textDelta(ev *respEvent) (bool, error) {
	d.streamed[ev.ItemID] = true
	return false, d.acc.addText(ev.Delta)
}

// reasoningDelta streams the reasoning summary's text to a handler that
// takes it; the reasoning item's done event carries the whole item kept
// for the next request.
func (d *responsesDecoder) reasoningDelta(ev *respEvent) (bool, error) {
	if d.reasoner == nil || ev.Delta == "" {
		return false, nil
	}
	return false, d.reasoner.OnReasoning(ev.Delta)
}

// arguments adds a delta of a call's arguments, or sets them whole on
// the done event.
func (d *responsesDecoder) arguments(ev *respEvent) (bool, error) {
	t, err := d.call(ev.ItemID, ev.OutputIndex, nil)
	if err != nil {
		return false, err
	}
	if ev.Type == "response.function_call_arguments.done" {
		return false, d.setArgs(t, ev.Arguments)
	}
	return false, d.acc.appendArgs(t, ev.Delta)
}

func (d *responsesDecoder) itemEvent(ev *respEvent) (bool, error) { return false, d.item(ev) }

func (d *responsesDecoder) annotation(ev *respEvent) (bool, error) {
	if a := ev.Annotation; a != nil {
		d.cite(*a)
	}
	return false, nil
}

func (d *responsesDecoder) partDone(ev *respEvent) (bool, error) {
	if pt := ev.Part; pt != nil {
		for _, a := range pt.Annotations {
			d.cite(a)
		}
	}
	return false, nil
}

func (d *responsesDecoder) completed(ev *respEvent) (bool, error) { return true, d.complete(ev) }

func (d *responsesDecoder) failed(ev *respEvent) (bool, error) {
	msg := "the response failed"
	if r := ev.Response; r != nil {
		if m := errorText(r.Error); m != "" {
			msg = m
		}
	}
	return false, d.p.errorf(provider.CodeProviderError, "provider reported an error in the stream: %s", msg)
}

func (d *responsesDecoder) errorEvent(ev *respEvent) (bool, error) {
	msg := errorText(ev.Error)
	if msg == "" {
		msg = rawText(ev.Message)
		if c := rawText(ev.Code); c != "" && msg != "" {
			msg += " (" + c + ")"
		} else if msg == "" {
			msg = c
		}
	}
	if msg == "" {
		msg = "unknown error"
	}
	return false, d.p.errorf(provider.CodeProviderError, "provider reported an error in the stream: %s", msg)
}

// item handles output_item.added and output_item.done.
func (d *responsesDecoder) item(ev *respEvent) error {
	it := ev.Item
	if it == nil {
		return nil
	}
	switch it.Type {
	case "function_call":
		t, err := d.call(it.ID, ev.OutputIndex, it)
		if err != nil {
			return err
		}
		return d.setArgs(t, it.Arguments)
	case "message":
		if ev.Type != "response.output_item.done" {
			return nil
		}
		for _, c := range it.Content {
			for _, a := range c.Annotations {
				d.cite(a)
			}
		}
		if d.streamed[it.ID] {
			return nil
		}
		// A server that sent the message whole, without deltas.
		for _, c := range it.Content {
			if err := d.acc.addText(c.Text); err != nil {
				return err
			}
			if err := d.acc.addText(c.Refusal); err != nil {
				return err
			}
		}
		d.streamed[it.ID] = true
	case "reasoning":
		// Only the done item's encrypted content is whole.
		if ev.Type == "response.output_item.done" {
			d.reason(it)
		}
	case "web_search_call":
		// The provider runs hosted searches itself: not an SCV tool call.
		if ev.Type == "response.output_item.done" {
			q := ""
			if it.Action != nil {
				q = it.Action.Query
			}
			d.p.log.Debug("provider ran a hosted web search", "status", it.Status, "query_bytes", len(q))
		}
	}
	return nil
}

// reasoningItem is what is kept of a reasoning item: what the next
// request needs to send it back.
type reasoningItem struct {
	Type             string          `json:"type"`
	ID               string          `json:"id"`
	Summary          json.RawMessage `json:"summary"`
	EncryptedContent string          `json:"encrypted_content"`
}

// reason keeps a reasoning item for Response.Reasoning. The item's bytes
// came in the body, so they count toward the response limit; each kept
// item is also bounded by Limits.ReasoningItemBytes. An item that cannot
// be kept is dropped rather than failing the reply: the model then works
// without its earlier reasoning, as it did before SCV sent it back.
func (d *responsesDecoder) reason(it *respItem) {
	if it.ID == "" || it.EncryptedContent == "" {
		// Without its encrypted content the item refers to state the
		// provider kept, and with store false it kept none: sending it
		// back would fail the next request.
		return
	}
	summary := it.Summary
	if t := bytes.TrimSpace(summary); len(t) == 0 || t[0] != '[' {
		summary = json.RawMessage("[]")
	}
	raw, err := json.Marshal(reasoningItem{Type: "reasoning", ID: it.ID, Summary: summary, EncryptedContent: it.EncryptedContent})
	if err != nil {
		d.p.log.Warn("reasoning item dropped: it cannot be encoded", "error", err)
		return
	}
	if lim := d.acc.lim.ReasoningItemBytes; len(raw) > lim {
		d.p.log.Warn("reasoning item dropped: it exceeds the reasoning item limit", "bytes", len(raw), "limit", lim)
		return
	}
	if i, ok := d.reasoningAt[it.ID]; ok {
		d.reasoning[i] = raw
		return
	}
	d.reasoningAt[it.ID] = len(d.reasoning)
	d.reasoning = append(d.reasoning, raw)
}

// call returns the function call of an item, starting it if it is new.
// it, when not nil, is the item itself, which names the call.
func (d *responsesDecoder) call(itemID string, index optInt, it *respItem) (*toolAcc, error) {
	byIndex := "#" + strconv.Itoa(index.V)
	key := itemID
	if key == "" {
		key = byIndex
	}
	t := d.calls[key]
	if t == nil && itemID != "" && index.Set {
		// Events without an item id started this call by its index.
		if t = d.calls[byIndex]; t != nil {
			d.calls[key] = t
		}
	}
	if t == nil {
		idx := len(d.acc.calls)
		if index.Set {
			idx = index.V
		}
		var err error
		if t, err = d.acc.newCall(idx); err != nil {
			return nil, err
		}
		d.calls[key] = t
	}
	if it != nil {
		if t.id == "" {
			t.id = it.CallID
		}
		if t.name == "" {
			t.name = it.Name
		}
	}
	return t, nil
}

// setArgs makes args a call's arguments when the server sent them whole
// (an arguments.done or output_item.done event): they are the final text,
// whatever the deltas added up to.
func (d *responsesDecoder) setArgs(t *toolAcc, args string) error {
	if args == "" || args == t.args.String() {
		return nil
	}
	t.args.Reset()
	return d.acc.appendArgs(t, args)
}

func (d *responsesDecoder) cite(a respAnnotation) {
	if a.Type != "url_citation" || d.cited[a.URL] || !citableURL(a.URL) {
		return
	}
	d.cited[a.URL] = true
	d.cites = append(d.cites, citation{url: a.URL, title: a.Title})
}

// maxCitationURL bounds a cited URL; longer ones are not listed.
const maxCitationURL = 2048

// maxCitationTitle bounds a citation's title.
const maxCitationTitle = 200

// citableURL accepts an absolute http(s) URL of one line.
func citableURL(s string) bool {
	if len(s) > maxCitationURL || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// complete handles response.completed and response.incomplete: usage,
// the finish reason, and the Sources list.
func (d *responsesDecoder) complete(ev *respEvent) error {
	d.terminal = true
	a := d.acc
	a.finish = "stop"
	if len(a.calls) > 0 {
		a.finish = "tool_calls"
	}
	if r := ev.Response; r != nil {
		if u := r.Usage; u != nil {
			a.usage = &provider.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
			if det := u.InputTokensDetails; det != nil {
				a.usage.CachedInputTokens = det.CachedTokens
			}
		}
		if ev.Type == "response.incomplete" {
			a.finish = "incomplete"
			if det := r.IncompleteDetails; det != nil {
				switch det.Reason {
				case "max_output_tokens":
					a.finish = "length"
				case "":
				default:
					a.finish = det.Reason
				}
			}
		}
	}
	return d.sources()
}

// sources streams, after the answer, a list of the cited URLs that the
// answer does not already contain. It stays within the assistant text
// limit: entries that do not fit are left out rather than failing a
// finished answer.
func (d *responsesDecoder) sources() error {
	a := d.acc
	text := a.text.String()
	var b strings.Builder
	for _, c := range d.cites {
		if strings.Contains(text, c.url) {
			continue
		}
		title := bound(c.title)
		if len(title) > maxCitationTitle {
			title = textcut.Prefix(title, maxCitationTitle) + "…"
		}
		entry := "- " + c.url + "\n"
		if title != "" {
			entry = "- " + title + ": " + c.url + "\n"
		}
		head := ""
		if b.Len() == 0 {
			head = sourcesHead(text)
		}
		if n := len(head) + len(entry); a.text.Len()+b.Len()+n > a.lim.AssistantBytes {
			d.p.log.Warn("cited sources left out: the assistant text limit is reached", "sources", len(d.cites))
			break
		}
		b.WriteString(head)
		b.WriteString(entry)
	}
	if b.Len() == 0 {
		return nil
	}
	return a.addText(strings.TrimSuffix(b.String(), "\n"))
}

// sourcesHead starts the Sources list on a paragraph of its own.
func sourcesHead(text string) string {
	switch {
	case text == "" || strings.HasSuffix(text, "\n\n"):
		return "Sources:\n"
	case strings.HasSuffix(text, "\n"):
		return "\nSources:\n"
	}
	return "\n\nSources:\n"
}

// end succeeds only after a terminal event: a stream cut before
// response.completed is a provider error, never a truncated reply.
func (d *responsesDecoder) end(bool) (*provider.Response, error) {
	if !d.terminal {
		return nil, d.p.errorf(provider.CodeProviderError, "stream ended early: no response.completed event")
	}
	r := d.acc.response()
	r.Reasoning = d.reasoning
	return r, nil
}

// errorText is the message of an error object ({"message": ...}), a
// string error, or "" for null or absent.
func errorText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var obj struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		switch {
		case obj.Message != "" && rawText(obj.Code) != "":
			return fmt.Sprintf("%s (%s)", obj.Message, rawText(obj.Code))
		case obj.Message != "":
			return obj.Message
		}
	}
	if s := rawText(raw); s != "" {
		return s
	}
	return string(raw)
}

// rawText is a JSON string's text, another value's JSON, or "" for null.
func rawText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// requestModel is the model req is sent to.
func (p *Provider) requestModel(req provider.Request) string {
	if req.Model != "" {
		return req.Model
	}
	return p.cfg.Model
}

// encryptedReasoning reports whether requests to model ask for encrypted
// reasoning and send back the reasoning items of the history.
func (p *Provider) encryptedReasoning(model string) bool {
	if _, ok := p.wire.(responsesWire); !ok {
		return false
	}
	_, plain := p.plainModels.Load(model)
	return !plain
}

// rejectsEncryptedReasoning reports whether err is the provider refusing
// the encrypted reasoning of a request to model: a 400 naming it or the
// include parameter. Models without reasoning refuse the include
// ("Encrypted content is not supported with this model."), and a
// reasoning item another model or account produced cannot be decrypted;
// either way the request can be made without it.
func (p *Provider) rejectsEncryptedReasoning(model string, err error) bool {
	pe, ok := provider.AsError(err)
	if !ok || pe.Status != http.StatusBadRequest || !p.encryptedReasoning(model) {
		return false
	}
	msg := strings.ToLower(pe.Message)
	return strings.Contains(msg, "encrypted") || strings.Contains(msg, "include")
}
