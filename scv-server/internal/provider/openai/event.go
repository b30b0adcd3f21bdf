package openai

import (
	"encoding/json"
	"unicode/utf8"
)

// respEvent is the part of a Responses stream event this package uses.
// Its JSON tags are what encoding/json decodes; decodeEvent's fast path
// produces the same values for the events it handles.
type respEvent struct {
	Type        string `json:"type"`
	Delta       string `json:"delta"`
	ItemID      string `json:"item_id"`
	OutputIndex optInt `json:"output_index"`
	// Arguments is the whole text of response.function_call_arguments.done.
	Arguments  string          `json:"arguments"`
	Item       *respItem       `json:"item"`
	Part       *respContent    `json:"part"`
	Annotation *respAnnotation `json:"annotation"`
	Response   *respResponse   `json:"response"`
	// An "error" event has code and message at the top level; some
	// servers nest them in error.
	Message json.RawMessage `json:"message"`
	Code    json.RawMessage `json:"code"`
	Error   json.RawMessage `json:"error"`
}

// respItem is an output item: a message, a function_call, a
// web_search_call, a reasoning item...
type respItem struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	CallID    string        `json:"call_id"`
	Name      string        `json:"name"`
	Arguments string        `json:"arguments"`
	Status    string        `json:"status"`
	Content   []respContent `json:"content"`
	Action    *struct {
		Query string `json:"query"`
	} `json:"action"`
	// EncryptedContent and Summary are a reasoning item's.
	EncryptedContent string          `json:"encrypted_content"`
	Summary          json.RawMessage `json:"summary"`
}

// respContent is a content part of a message item.
type respContent struct {
	Type        string           `json:"type"`
	Text        string           `json:"text"`
	Refusal     string           `json:"refusal"`
	Annotations []respAnnotation `json:"annotations"`
}

// respAnnotation is an annotation of output text; url_citation is the one
// used.
type respAnnotation struct {
	Type  string `json:"type"`
	URL   string `json:"url"`
	Title string `json:"title"`
}

// respResponse is the response object of the terminal events.
type respResponse struct {
	Status            string          `json:"status"`
	Usage             *respUsage      `json:"usage"`
	Error             json.RawMessage `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

type respUsage struct {
	InputTokens        int64         `json:"input_tokens"`
	OutputTokens       int64         `json:"output_tokens"`
	InputTokensDetails *tokenDetails `json:"input_tokens_details"`
}

// respEventKeys are respEvent's JSON keys: the fast path leaves an event
// with any key that folds to one of them, other than those it decodes, to
// encoding/json.
var respEventKeys = []string{"type", "delta", "item_id", "output_index", "arguments", "item", "part", "annotation", "response", "message", "code", "error"}

// decodeEvent decodes one event's data into ev, reusing nothing of what
// it held.
//
// The events of nearly every byte of a reply are the text and argument
// deltas: {"type":...,"item_id":...,"output_index":...,"content_index":...,
// "delta":...,"sequence_number":...,"logprobs":[]}. A hand-written parser
// (the chat wire's chunkDecoder) decodes those without reflection; any
// other event, and anything the parser is not sure of, goes to
// encoding/json, whose result or error then stands. FuzzEvent checks the
// two agree.
//
// The type and item id of consecutive deltas are the same strings: the
// previous event's are reused rather than allocated again.
func decodeEvent(data []byte, ev *respEvent) error {
	prevType, prevItem := ev.Type, ev.ItemID
	*ev = respEvent{}
	d := chunkDecoder{data: data}
	if d.event(ev, prevType, prevItem) {
		return nil
	}
	*ev = respEvent{}
	return json.Unmarshal(data, ev)
}

func (d *chunkDecoder) event(ev *respEvent, prevType, prevItem string) bool {
	d.ws()
	var seen uint8
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "type":
			return once(&seen, 1) && d.strReuse(&ev.Type, prevType)
		case "delta":
			return once(&seen, 2) && d.str(&ev.Delta)
		case "item_id":
			return once(&seen, 4) && d.strReuse(&ev.ItemID, prevItem)
		case "output_index":
			if !once(&seen, 8) {
				return false
			}
			if d.literal("null") {
				ev.OutputIndex = optInt{}
				return true
			}
			ev.OutputIndex.Set = true
			return d.intValue(&ev.OutputIndex.V)
		}
		return d.skipUnknown(key, respEventKeys...)
	})
	return ok && d.end()
}

// strReuse is str, setting *dst to prev, without allocating, when the
// string is prev.
func (d *chunkDecoder) strReuse(dst *string, prev string) bool {
	if i := d.i; prev != "" && len(d.data)-i >= len(prev)+2 && d.data[i] == '"' &&
		d.data[i+1+len(prev)] == '"' && string(d.data[i+1:i+1+len(prev)]) == prev &&
		!containsEscapeOrControl(prev) {
		d.i += len(prev) + 2
		*dst = prev
		return true
	}
	return d.str(dst)
}

// containsEscapeOrControl reports whether s, as the bytes of a JSON
// string, would not be the string itself.
func containsEscapeOrControl(s string) bool {
	for i := range len(s) {
		if c := s[i]; c == '\\' || c == '"' || c < ' ' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}
