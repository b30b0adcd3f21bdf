package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"
)

// ErrFrameTooLarge reports a frame over its limit.
type ErrFrameTooLarge struct {
	Size  int // bytes seen, at least Limit+1
	Limit int
}

func (e *ErrFrameTooLarge) Error() string {
	return fmt.Sprintf("frame of %d bytes is over the %d-byte limit", e.Size, e.Limit)
}

// AppendEvent appends the JSON encoding of e, without a newline, to dst.
// The "type" member comes first.
func AppendEvent(dst []byte, e Event) ([]byte, error) {
	// The delta is the one event on the hot path of a turn; encode it by
	// hand so a frame costs no allocation beyond its buffer.
	if d, ok := e.(*AssistantDelta); ok {
		if d == nil {
			return dst, errNilEvent(TypeAssistantDelta)
		}
		return appendDelta(dst, d), nil
	}
	return appendTyped(dst, e.Kind(), withEmptyLists(e))
}

// EncodeEvent returns the JSON encoding of e without a newline.
func EncodeEvent(e Event) ([]byte, error) {
	var dst []byte
	if d, ok := e.(*AssistantDelta); ok && d != nil {
		// Size the buffer for the frame so that it takes one allocation
		// unless the content needs heavy escaping.
		n := len(`{"type":"assistant.delta","request_id":"","session_id":"","turn_id":"","seq":18446744073709551615,"content":""}`)
		n += len(d.RequestID) + len(d.SessionID) + len(d.TurnID)
		n += len(d.Content) + len(d.Content)/8
		dst = make([]byte, 0, n)
	}
	return AppendEvent(dst, e)
}

// EncodeClientMessage returns the JSON encoding of m without a newline.
func EncodeClientMessage(m ClientMessage) ([]byte, error) {
	return appendTyped(nil, m.Kind(), m)
}

func errNilEvent(kind string) error {
	return fmt.Errorf("encoding %s: nil message", kind)
}

// jsonEncoder is a reusable encoding/json encoder that does not escape
// HTML, so every frame escapes strings the way appendString does.
type jsonEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var jsonEncoders = sync.Pool{New: func() any {
	e := new(jsonEncoder)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxPooledEncoderBytes keeps a rare huge frame from pinning its buffer.
const maxPooledEncoderBytes = 64 << 10

func appendTyped(dst []byte, kind string, v any) ([]byte, error) {
	e := jsonEncoders.Get().(*jsonEncoder)
	defer func() {
		if e.buf.Cap() <= maxPooledEncoderBytes {
			jsonEncoders.Put(e)
		}
	}()
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return dst, fmt.Errorf("encoding %s: %w", kind, err)
	}
	body := bytes.TrimSpace(e.buf.Bytes())
	if len(body) < 2 || body[0] != '{' {
		// A nil pointer encodes as null.
		return dst, errNilEvent(kind)
	}
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, kind)
	if len(body) == 2 { // "{}"
		return append(dst, '}'), nil
	}
	dst = append(dst, ',')
	return append(dst, body[1:]...), nil
}

func appendDelta(dst []byte, d *AssistantDelta) []byte {
	dst = append(dst, `{"type":"assistant.delta"`...)
	if d.RequestID != "" {
		dst = append(dst, `,"request_id":`...)
		dst = appendString(dst, d.RequestID)
	}
	dst = append(dst, `,"session_id":`...)
	dst = appendString(dst, d.SessionID)
	dst = append(dst, `,"turn_id":`...)
	dst = appendString(dst, d.TurnID)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, d.Seq, 10)
	dst = append(dst, `,"content":`...)
	dst = appendString(dst, d.Content)
	return append(dst, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json does (as of
// Go 1.22, which writes \b and \f short escapes), minus HTML escaping:
// each invalid UTF-8 byte becomes \ufffd, and U+2028/U+2029 are escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// withEmptyLists returns e with its nil list members made empty: a list
// member is [] on the wire, never null.
func withEmptyLists(e Event) Event {
	switch v := e.(type) {
	case *QueueSnapshot:
		if v != nil && v.Entries == nil {
			c := *v
			c.Entries = []QueueEntry{}
			return &c
		}
	case *SessionReplay:
		if v != nil && v.Items == nil {
			c := *v
			c.Items = []ReplayItem{}
			return &c
		}
	case *SessionListed:
		if v != nil && v.Sessions == nil {
			c := *v
			c.Sessions = []SessionSummary{}
			return &c
		}
	case *RulesListed:
		if v != nil && v.Rules == nil {
			c := *v
			c.Rules = []Rule{}
			return &c
		}
	case *SessionAttached:
		if v != nil && (v.Queue == nil || v.PendingApprovals == nil) {
			c := *v
			if c.Queue == nil {
				c.Queue = []QueueEntry{}
			}
			if c.PendingApprovals == nil {
				c.PendingApprovals = []ApprovalRequested{}
			}
			return &c
		}
	case *SessionModel:
		if v != nil && v.Models == nil {
			c := *v
			c.Models = []ModelInfo{}
			return &c
		}
	case *DaemonStatusReported:
		if v != nil && v.Sessions == nil {
			c := *v
			c.Sessions = []LiveSession{}
			return &c
		}
	}
	return e
}
