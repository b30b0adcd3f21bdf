// Package frame encodes and decodes the protobuf Frame that Feishu's long
// connection carries in every binary WebSocket message (the pbbp2 schema of
// the open platform). The schema is small and stable, so it is written by
// hand over protowire rather than generated: no codegen step, no runtime
// reflection, and a decoder that is easy to fuzz.
package frame

import (
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Methods of a frame (field 4).
const (
	// MethodControl carries ping and pong.
	MethodControl int32 = 0
	// MethodData carries events and card callbacks, and their acks.
	MethodData int32 = 1
)

// Header keys the long connection uses.
const (
	HeaderType      = "type"
	HeaderMessageID = "message_id"
	HeaderTraceID   = "trace_id"
	HeaderSum       = "sum"
	HeaderSeq       = "seq"
	HeaderTimestamp = "timestamp"
	HeaderBizRT     = "biz_rt"
)

// Values of the type header.
const (
	TypeEvent = "event"
	TypeCard  = "card"
	TypePing  = "ping"
	TypePong  = "pong"
)

// MaxFrameBytes bounds what Unmarshal accepts; a Feishu frame carries at
// most one chunk of an event, far below this.
const MaxFrameBytes = 4 << 20

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed frame")

// Header is one key/value pair of a frame.
type Header struct {
	Key   string
	Value string
}

// Frame is one message of the long connection.
type Frame struct {
	SeqID           uint64   // field 1
	LogID           uint64   // field 2
	Service         int32    // field 3: the service_id of the connection URL
	Method          int32    // field 4: MethodControl or MethodData
	Headers         []Header // field 5
	PayloadEncoding string   // field 6
	PayloadType     string   // field 7
	Payload         []byte   // field 8: JSON
	LogIDNew        string   // field 9
}

// Header returns the value of the first header named key, or "".
func (f Frame) Header(key string) string {
	for _, h := range f.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return ""
}

// HeaderInt returns the header named key as an int, or def when it is
// absent or not a number.
func (f Frame) HeaderInt(key string, def int) int {
	n, err := strconv.Atoi(f.Header(key))
	if err != nil {
		return def
	}
	return n
}

// SetHeader replaces the header named key, or appends it.
func (f *Frame) SetHeader(key, value string) {
	for i := range f.Headers {
		if f.Headers[i].Key == key {
			f.Headers[i].Value = value
			return
		}
	}
	f.Headers = append(f.Headers, Header{Key: key, Value: value})
}

// Marshal encodes f. The four required proto2 fields are always written.
func (f Frame) Marshal() []byte {
	b := make([]byte, 0, 32+len(f.Payload)+16*len(f.Headers))
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, f.SeqID)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, f.LogID)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(int64(f.Service)))
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(int64(f.Method)))
	for _, h := range f.Headers {
		var hb []byte
		hb = protowire.AppendTag(hb, 1, protowire.BytesType)
		hb = protowire.AppendString(hb, h.Key)
		hb = protowire.AppendTag(hb, 2, protowire.BytesType)
		hb = protowire.AppendString(hb, h.Value)
		b = protowire.AppendTag(b, 5, protowire.BytesType)
		b = protowire.AppendBytes(b, hb)
	}
	if f.PayloadEncoding != "" {
		b = protowire.AppendTag(b, 6, protowire.BytesType)
		b = protowire.AppendString(b, f.PayloadEncoding)
	}
	if f.PayloadType != "" {
		b = protowire.AppendTag(b, 7, protowire.BytesType)
		b = protowire.AppendString(b, f.PayloadType)
	}
	if f.Payload != nil {
		b = protowire.AppendTag(b, 8, protowire.BytesType)
		b = protowire.AppendBytes(b, f.Payload)
	}
	if f.LogIDNew != "" {
		b = protowire.AppendTag(b, 9, protowire.BytesType)
		b = protowire.AppendString(b, f.LogIDNew)
	}
	return b
}

// Unmarshal decodes b into f, replacing its contents. Unknown fields are
// skipped (the platform may add some); a missing required field, a wrong
// wire type for a known field or a truncated field is an error wrapping
// ErrMalformed. The payload is copied, so b may be reused.
func Unmarshal(b []byte) (Frame, error) {
	var f Frame
	if len(b) > MaxFrameBytes {
		return f, fmt.Errorf("%w: %d bytes, more than the %d allowed", ErrMalformed, len(b), MaxFrameBytes)
	}
	// Fields 1-4 are varints, 5-9 bytes.
	seen, err := eachField(b, "frame", func(num protowire.Number) protowire.Type {
		switch {
		case num >= 1 && num <= 4:
			return protowire.VarintType
		case num >= 5 && num <= 9:
			return protowire.BytesType
		}
		return -1
	}, f.set)
	if err != nil {
		return f, err
	}
	if seen&0b1111 != 0b1111 {
		return f, fmt.Errorf("%w: a required field (SeqID, LogID, service, method) is missing", ErrMalformed)
	}
	return f, nil
}

// set stores field num: v for a varint, raw for bytes.
func (f *Frame) set(num protowire.Number, v uint64, raw []byte) error {
	switch num {
	case 1:
		f.SeqID = v
	case 2:
		f.LogID = v
	case 3:
		f.Service = int32(v)
	case 4:
		f.Method = int32(v)
	case 5:
		h, err := unmarshalHeader(raw)
		if err != nil {
			return err
		}
		f.Headers = append(f.Headers, h)
	case 6:
		f.PayloadEncoding = string(raw)
	case 7:
		f.PayloadType = string(raw)
	case 8:
		f.Payload = append([]byte{}, raw...)
	case 9:
		f.LogIDNew = string(raw)
	}
	return nil
}

func unmarshalHeader(b []byte) (Header, error) {
	var h Header
	seen, err := eachField(b, "header", func(num protowire.Number) protowire.Type {
		if num == 1 || num == 2 {
			return protowire.BytesType
		}
		return -1
	}, func(num protowire.Number, _ uint64, raw []byte) error {
		if num == 1 {
			h.Key = string(raw)
		} else {
			h.Value = string(raw)
		}
		return nil
	})
	if err != nil {
		return h, err
	}
	if seen&0b11 != 0b11 {
		return h, fmt.Errorf("%w: a header lacks its key or value", ErrMalformed)
	}
	return h, nil
}

// eachField walks the fields of the message b. want gives the wire type of
// a known field number (-1: unknown, skipped); set receives each known
// field, a varint's value or a bytes field's contents (aliasing b). It
// returns a bit set of the known fields seen (bit n-1 for field n < 64).
func eachField(b []byte, what string, want func(protowire.Number) protowire.Type,
	set func(num protowire.Number, v uint64, raw []byte) error) (uint64, error) {
	var seen uint64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return seen, fmt.Errorf("%w: %s: bad tag: %w", ErrMalformed, what, protowire.ParseError(n))
		}
		b = b[n:]
		wt := want(num)
		if wt < 0 {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return seen, fmt.Errorf("%w: %s: unknown field %d: %w", ErrMalformed, what, num, protowire.ParseError(m))
			}
			b = b[m:]
			continue
		}
		if typ != wt {
			return seen, fmt.Errorf("%w: %s field %d has wire type %d, want %d", ErrMalformed, what, num, typ, wt)
		}
		var v uint64
		var raw []byte
		m := 0
		if wt == protowire.VarintType {
			v, m = protowire.ConsumeVarint(b)
		} else {
			raw, m = protowire.ConsumeBytes(b)
		}
		if m < 0 {
			return seen, fmt.Errorf("%w: %s field %d: %w", ErrMalformed, what, num, protowire.ParseError(m))
		}
		b = b[m:]
		if num < 64 {
			seen |= 1 << (num - 1)
		}
		if err := set(num, v, raw); err != nil {
			return seen, err
		}
	}
	return seen, nil
}
