package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// DecodeError is a client frame the server refuses. Code is invalid_json or
// invalid_request; RequestID is the frame's request_id when one could be
// read, so the error can be matched to the request.
type DecodeError struct {
	Code      ErrorCode
	RequestID string
	Message   string
}

func (e *DecodeError) Error() string { return string(e.Code) + ": " + e.Message }

// probe reads the envelope before the typed decode.
type probe struct {
	Type      json.RawMessage `json:"type"`
	RequestID json.RawMessage `json:"request_id"`
}

// DecodeClientMessage decodes one client frame. Unknown fields are ignored.
// It returns a *DecodeError for a frame that is not JSON, not an object,
// lacks a string type or request_id, names an unknown type, has a field
// of the wrong JSON type, or breaks the strict member rules (strict.go): a
// member given twice in one object, or a documented member spelled with
// other letter case.
//
// Every field without omitempty in the message's Go type is required (the
// JSON Schema says the same); a missing or null one is refused, naming it.
// A frame that is not valid UTF-8 is invalid_json.
func DecodeClientMessage(frame []byte) (ClientMessage, error) {
	if !utf8.Valid(frame) {
		return nil, &DecodeError{Code: ErrInvalidJSON, Message: "the frame is not valid UTF-8; send UTF-8 JSON"}
	}
	kind, reqID, fields, err := decodeClientEnvelope(frame)
	if err != nil {
		return nil, err
	}
	m := NewClientMessage(kind)
	var t reflect.Type
	if m != nil {
		t = reflect.TypeOf(m).Elem()
	}
	if me := checkMembers(frame, t); me != nil {
		if me.touchesRequestID() {
			reqID = "" // which of its values would the answer carry?
		}
		return nil, &DecodeError{Code: ErrInvalidRequest, RequestID: reqID, Message: me.message(kind)}
	}
	if m == nil {
		return nil, &DecodeError{Code: ErrInvalidRequest, RequestID: reqID,
			Message: fmt.Sprintf("unknown message type %q", kind)}
	}
	if err := json.Unmarshal(frame, m); err != nil {
		return nil, &DecodeError{Code: ErrInvalidRequest, RequestID: reqID,
			Message: fmt.Sprintf("%s: %s", kind, describeUnmarshalError(err))}
	}
	if missing := missingRequired(fields, m); len(missing) > 0 {
		return nil, &DecodeError{Code: ErrInvalidRequest, RequestID: reqID,
			Message: fmt.Sprintf("%s is missing %s", kind, quoteJoin(missing))}
	}
	return m, nil
}

// RequiredFields returns the JSON names of the fields a client message of
// type kind must carry besides type and request_id.
func RequiredFields(kind string) []string {
	m := NewClientMessage(kind)
	if m == nil {
		return nil
	}
	return requiredOf(reflect.TypeOf(m).Elem())
}

var requiredCache sync.Map // reflect.Type → []string

func requiredOf(t reflect.Type) []string {
	if v, ok := requiredCache.Load(t); ok {
		return v.([]string)
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, requiredOf(f.Type)...)
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || name == "request_id" || strings.Contains(opts, "omitempty") {
			continue
		}
		out = append(out, name)
	}
	requiredCache.Store(t, out)
	return out
}

// missingRequired returns the required fields of m that the frame's
// members lack or set to null.
func missingRequired(fields map[string]json.RawMessage, m ClientMessage) []string {
	req := requiredOf(reflect.TypeOf(m).Elem())
	var missing []string
	for _, k := range req {
		if v, ok := fields[k]; !ok || string(v) == "null" {
			missing = append(missing, k)
		}
	}
	return missing
}

func quoteJoin(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	if len(q) == 1 {
		return "the required field " + q[0]
	}
	return "the required fields " + strings.Join(q, ", ")
}

// DecodeEvent decodes one server frame, for clients.
func DecodeEvent(frame []byte) (Event, error) {
	kind, _, err := decodeEnvelope(frame, false)
	if err != nil {
		return nil, err
	}
	e := NewEvent(kind)
	if e == nil {
		return nil, &DecodeError{Code: ErrInvalidRequest, Message: fmt.Sprintf("unknown event type %q", kind)}
	}
	if err := json.Unmarshal(frame, e); err != nil {
		return nil, &DecodeError{Code: ErrInvalidRequest, Message: fmt.Sprintf("%s: %s", kind, describeUnmarshalError(err))}
	}
	return e, nil
}

// PeekType returns the "type" of a frame, or "" when it has none.
func PeekType(frame []byte) string {
	var p probe
	if json.Unmarshal(frame, &p) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(p.Type, &s) != nil {
		return ""
	}
	return s
}

func decodeEnvelope(frame []byte, needRequestID bool) (kind, reqID string, err error) {
	if !json.Valid(frame) {
		return "", "", errNotJSON
	}
	if !isObject(frame) {
		return "", "", errNotObject
	}
	var p probe
	if err := json.Unmarshal(frame, &p); err != nil {
		return "", "", &DecodeError{Code: ErrInvalidRequest, Message: describeUnmarshalError(err)}
	}
	return checkProbe(p, needRequestID)
}

var (
	errNotJSON   = &DecodeError{Code: ErrInvalidJSON, Message: "the frame is not valid JSON; send one JSON object per line"}
	errNotObject = &DecodeError{Code: ErrInvalidRequest, Message: "the frame is JSON but not an object; send one JSON object per line"}
)

func isObject(frame []byte) bool {
	trimmed := bytes.TrimLeft(frame, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{'
}

// decodeClientEnvelope reads a client frame's members once: the envelope
// comes from them, and so does the required-member check.
func decodeClientEnvelope(frame []byte) (kind, reqID string, fields map[string]json.RawMessage, err error) {
	if !isObject(frame) {
		if json.Valid(frame) {
			return "", "", nil, errNotObject
		}
		return "", "", nil, errNotJSON
	}
	if err := json.Unmarshal(frame, &fields); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return "", "", nil, errNotJSON
		}
		return "", "", nil, &DecodeError{Code: ErrInvalidRequest, Message: describeUnmarshalError(err)}
	}
	kind, reqID, err = checkProbe(probe{Type: fields["type"], RequestID: fields["request_id"]}, true)
	return kind, reqID, fields, err
}

func checkProbe(p probe, needRequestID bool) (kind, reqID string, err error) {
	if len(p.RequestID) > 0 && string(p.RequestID) != "null" {
		if json.Unmarshal(p.RequestID, &reqID) != nil {
			return "", "", &DecodeError{Code: ErrInvalidRequest,
				Message: "request_id must be a string, such as \"1\""}
		}
	}
	if len(p.Type) == 0 || string(p.Type) == "null" {
		return "", reqID, &DecodeError{Code: ErrInvalidRequest, RequestID: reqID,
			Message: "the frame has no \"type\"; every message needs one, such as \"turn.start\""}
	}
	if json.Unmarshal(p.Type, &kind) != nil || kind == "" {
		return "", reqID, &DecodeError{Code: ErrInvalidRequest, RequestID: reqID,
			Message: "\"type\" must be a non-empty string, such as \"turn.start\""}
	}
	if needRequestID && reqID == "" {
		return kind, "", &DecodeError{Code: ErrInvalidRequest,
			Message: fmt.Sprintf("%s has no request_id; every client message needs a non-empty string request_id", kind)}
	}
	return kind, reqID, nil
}

func describeUnmarshalError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if field := jsonFieldPath(te.Field); field != "" {
			return fmt.Sprintf("field %q must be %s, not JSON %s", field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return fmt.Sprintf("expected %s, not JSON %s", jsonKind(te.Type.Kind().String()), te.Value)
	}
	return err.Error()
}

// jsonFieldPath drops the Go names of embedded structs, such as
// "SessionHeader", that encoding/json puts in an error's field path: every
// member name of the protocol is lower case.
func jsonFieldPath(path string) string {
	if path == "" {
		return ""
	}
	parts := strings.Split(path, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" && p[0] >= 'A' && p[0] <= 'Z' {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, ".")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32", "uint64", "uint32", "uint":
		return "an integer"
	case "float64", "float32":
		return "a number"
	case "struct", "map", "ptr":
		return "an object"
	case "slice", "array":
		return "an array"
	}
	return goKind
}
