package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
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
		return appendDelta(dst, d), nil
	}
	return appendTyped(dst, e.Kind(), e)
}

// EncodeEvent returns the JSON encoding of e without a newline.
func EncodeEvent(e Event) ([]byte, error) {
	return AppendEvent(nil, e)
}

// EncodeClientMessage returns the JSON encoding of m without a newline.
func EncodeClientMessage(m ClientMessage) ([]byte, error) {
	return appendTyped(nil, m.Kind(), m)
}

func appendTyped(dst []byte, kind string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("encoding %s: %w", kind, err)
	}
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, kind)
	body = bytes.TrimSpace(body)
	if len(body) <= 2 { // "{}"
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

// appendString appends s as a JSON string the way encoding/json does, minus
// HTML escaping: invalid UTF-8 becomes U+FFFD, and U+2028/U+2029 are escaped.
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
