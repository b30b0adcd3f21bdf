package frame

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func sample() Frame {
	return Frame{
		SeqID: 7, LogID: 1 << 40, Service: 42, Method: MethodData,
		Headers:         []Header{{HeaderType, TypeEvent}, {HeaderMessageID, "m1"}, {HeaderSum, "2"}, {HeaderSeq, "1"}},
		PayloadEncoding: "json", PayloadType: "event",
		Payload:  []byte(`{"schema":"2.0"}`),
		LogIDNew: "log-new",
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, f := range []Frame{sample(), {Service: -1, Method: MethodControl, Headers: []Header{{HeaderType, TypePing}}}} {
		got, err := Unmarshal(f.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, f) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, f)
		}
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	f := sample()
	if f.HeaderInt(HeaderSum, 1) != 2 || f.HeaderInt("absent", 1) != 1 || f.HeaderInt(HeaderType, 9) != 9 {
		t.Fatal("HeaderInt")
	}
	f.SetHeader(HeaderSeq, "0")
	f.SetHeader(HeaderBizRT, "12")
	if f.Header(HeaderSeq) != "0" || f.Header(HeaderBizRT) != "12" || len(f.Headers) != 5 {
		t.Fatalf("SetHeader: %+v", f.Headers)
	}
}

// A hand-built encoding with an unknown field and fields out of order
// decodes as the platform meant it.
func TestUnknownFieldsAndOrder(t *testing.T) {
	t.Parallel()
	var b []byte
	b = protowire.AppendTag(b, 8, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte("p"))
	b = protowire.AppendTag(b, 4, protowire.VarintType)
	b = protowire.AppendVarint(b, 1)
	b = protowire.AppendTag(b, 99, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, 5)
	b = protowire.AppendTag(b, 3, protowire.VarintType)
	b = protowire.AppendVarint(b, 2)
	b = protowire.AppendTag(b, 2, protowire.VarintType)
	b = protowire.AppendVarint(b, 3)
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, 4)
	f, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if f.SeqID != 4 || f.LogID != 3 || f.Service != 2 || f.Method != 1 || string(f.Payload) != "p" {
		t.Fatalf("%+v", f)
	}
}

func TestMalformed(t *testing.T) {
	t.Parallel()
	good := sample().Marshal()
	noMethod := Frame{SeqID: 1}
	enc := noMethod.Marshal()
	// Drop field 4 (its tag and one-byte value are the last two bytes).
	enc = enc[:len(enc)-2]
	wrongType := protowire.AppendTag(nil, 1, protowire.BytesType)
	wrongType = protowire.AppendBytes(wrongType, []byte("x"))
	for name, b := range map[string][]byte{
		"truncated":    good[:len(good)-3],
		"missing":      enc,
		"wrong type":   wrongType,
		"bad tag":      {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"too big":      bytes.Repeat([]byte{0}, MaxFrameBytes+1),
		"empty header": append(append([]byte{}, good...), protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType), nil)...),
	} {
		if _, err := Unmarshal(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	s := sample()
	f.Add(s.Marshal())
	f.Add((&Frame{Headers: []Header{{HeaderType, TypePing}}}).Marshal())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := Unmarshal(b)
		if err != nil {
			return
		}
		// What decodes re-encodes to something that decodes the same.
		again, err := Unmarshal(fr.Marshal())
		if err != nil {
			t.Fatalf("re-decoding: %v", err)
		}
		if !reflect.DeepEqual(normalize(again), normalize(fr)) {
			t.Fatalf("re-decoded frame differs:\n%+v\n%+v", again, fr)
		}
	})
}

// normalize makes an empty payload and an absent one equal: proto2 bytes
// that were present but empty decode to an empty slice.
func normalize(f Frame) Frame {
	if len(f.Payload) == 0 {
		f.Payload = nil
	}
	return f
}

func BenchmarkUnmarshal(b *testing.B) {
	s := sample()
	s.Payload = bytes.Repeat([]byte("x"), 2048)
	enc := s.Marshal()
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal(enc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshal(b *testing.B) {
	s := sample()
	s.Payload = bytes.Repeat([]byte("x"), 2048)
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Marshal()
	}
}
