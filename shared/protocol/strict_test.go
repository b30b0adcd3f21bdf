package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStrictMembers(t *testing.T) {
	t.Parallel()
	many := func(dup string) string {
		var b strings.Builder
		b.WriteString(`{"type":"turn.start","request_id":"3","session_id":"s","prompt":"p","x":{`)
		for i := range 100 {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		b.WriteString(`"` + dup + `":0}}`)
		return b.String()
	}
	cases := []struct {
		name  string
		frame string
		reqID string // the error's request_id
		want  string // substring of the message; "" means the frame is accepted
	}{
		{"plain", `{"type":"turn.start","request_id":"3","session_id":"s","prompt":"p"}`, "", ""},
		{"duplicate prompt", `{"type":"turn.start","request_id":"3","session_id":"s","prompt":"a","prompt":"b"}`, "3", `turn.start: the member "prompt" appears twice`},
		{"duplicate spelled with an escape", `{"type":"turn.start","request_id":"3","session_id":"s","prompt":"a","\u0070rompt":"b"}`, "3", `the member "prompt" appears twice`},
		{"duplicate type", `{"type":"session.clear","request_id":"3","session_id":"s","type":"turn.start","prompt":"p"}`, "3", `the member "type" appears twice`},
		{"duplicate request_id", `{"type":"turn.start","request_id":"3","request_id":"4","session_id":"s","prompt":"p"}`, "", `the member "request_id" appears twice`},
		{"duplicate in a nested object", `{"type":"initialize","request_id":"1","protocol_version":3,"client":{"name":"a","name":"b"}}`, "1", `the member "client.name" appears twice`},
		{"duplicate in an unknown member", `{"type":"turn.start","request_id":"3","session_id":"s","prompt":"p","future":[{"a":1},{"b":1,"b":2}]}`, "3", `the member "future[1].b" appears twice`},
		{"duplicate among many members", many("k42"), "3", `the member "x.k42" appears twice`},
		{"many members without a duplicate", many("k100"), "", ""},
		{"same name in sibling objects", `{"type":"turn.start","request_id":"3","session_id":"s","prompt":"p","a":{"n":1},"b":{"n":1}}`, "", ""},
		{"wrong case", `{"type":"turn.start","request_id":"3","session_id":"s","Prompt":"p"}`, "3", `"Prompt" is not a member of turn.start, whose member names are case-sensitive; send "prompt"`},
		{"wrong case beside the right one", `{"type":"turn.start","request_id":"3","session_id":"s","prompt":"a","PROMPT":"b"}`, "3", `send "prompt"`},
		{"wrong case request_id", `{"type":"turn.start","request_id":"3","Request_ID":"4","session_id":"s","prompt":"p"}`, "", `"Request_ID" is not a member`},
		{"wrong case type", `{"type":"turn.start","Type":"session.clear","request_id":"3","session_id":"s","prompt":"p"}`, "3", `send "type"`},
		{"Unicode folding", `{"type":"turn.start","request_id":"3","ſession_id":"s","session_id":"s","prompt":"p"}`, "3", `send "session_id"`},
		{"wrong case nested", `{"type":"session.start","request_id":"2","cwd":"/w","channel":{"Platform":"x","platform":"y"}}`, "2", `"channel.Platform" is not a member`},
		{"unknown members of any case", `{"type":"turn.start","request_id":"3","session_id":"s","prompt":"p","Future":1,"future":2}`, "", ""},
		{"case inside unknown members is free", `{"type":"turn.start","request_id":"3","session_id":"s","prompt":"p","x":{"Prompt":1}}`, "", ""},
		{"unknown type still checks duplicates", `{"type":"nope","request_id":"3","a":1,"a":2}`, "3", `nope: the member "a" appears twice`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeClientMessage([]byte(tc.frame))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("decoded %#v (err %v), want an invalid_request", m, err)
			}
			if de.Code != ErrInvalidRequest || !strings.Contains(de.Message, tc.want) || de.RequestID != tc.reqID {
				t.Fatalf("error = %+v, want invalid_request with request_id %q containing %q", de, tc.reqID, tc.want)
			}
		})
	}
}

// referenceMembers applies the strict member rules with encoding/json's
// tokenizer, independently of the scanner: it returns the first refused
// member path, or "".
func referenceMembers(frame []byte, t reflect.Type) string {
	dec := json.NewDecoder(bytes.NewReader(frame))
	var walk func(t reflect.Type, path string, top bool) (string, bool)
	walk = func(t reflect.Type, path string, top bool) (string, bool) {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		switch tok {
		case json.Delim('{'):
			var m *structMembers
			if t != nil && t.Kind() == reflect.Struct {
				m = membersOf(t, top)
			}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", false
				}
				name := kt.(string)
				member := name
				if path != "" {
					member = path + "." + name
				}
				if seen[name] {
					return member, true
				}
				seen[name] = true
				var vt reflect.Type
				if m != nil {
					var want string
					if vt, want = m.lookup([]byte(name)); want != "" {
						return member, true
					}
				} else if t != nil && t.Kind() == reflect.Map {
					vt = t.Elem()
				}
				if bad, ok := walk(vt, member, false); ok {
					return bad, true
				}
			}
			dec.Token()
		case json.Delim('['):
			var elem reflect.Type
			if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
				elem = t.Elem()
			}
			for n := 0; dec.More(); n++ {
				if bad, ok := walk(elem, fmt.Sprintf("%s[%d]", path, n), false); ok {
					return bad, true
				}
			}
			dec.Token()
		}
		return "", false
	}
	bad, _ := walk(t, "", true)
	return bad
}

// FuzzStrictMembers checks the member scanner against the reference on
// every valid JSON object, for each client message type and for none.
func FuzzStrictMembers(f *testing.F) {
	for _, s := range []string{
		`{"type":"turn.start","request_id":"3","session_id":"s","prompt":"p"}`,
		`{"a":1,"a":2}`,
		`{"a":{"b":[{"c":1,"c":2}]}}`,
		`{"\u0061":1,"a":2}`,
		`{"type":"initialize","request_id":"1","protocol_version":3,"client":{"name":"a","Name":"b"}}`,
		`{"type":"session.start","request_id":"2","cwd":"/w","channel":{"platform":"x"},"ſ":1}`,
		`{"s":"a\"b\\","t":"\"","u":[1,2.5e3,true,null,"x"]}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	kinds := append([]string{""}, ClientMessageTypes()...)
	f.Fuzz(func(t *testing.T, frame []byte, k uint8) {
		// DecodeClientMessage refuses invalid UTF-8 before the scanner
		// runs.
		if !utf8.Valid(frame) || !json.Valid(frame) || !isObject(frame) {
			return
		}
		var typ reflect.Type
		if m := NewClientMessage(kinds[int(k)%len(kinds)]); m != nil {
			typ = reflect.TypeOf(m).Elem()
		}
		got := ""
		if me := checkMembers(frame, typ); me != nil {
			got = me.path
		}
		if want := referenceMembers(frame, typ); got != want {
			t.Fatalf("scanner refuses %q, reference %q, for %s", got, want, frame)
		}
	})
}

// BenchmarkCheckMembers measures the strict member check alone on a
// typical frame and on a frame with a 256 KiB prompt.
func BenchmarkCheckMembers(b *testing.B) {
	for _, size := range []int{70, 256 << 10} {
		frame := []byte(`{"type":"turn.start","request_id":"3","session_id":"3f0c6f0e-0d7e-4b3a-9f51-8c1f0f6f2c11","prompt":"` + strings.Repeat("a\\n", size/3) + `"}`)
		typ := reflect.TypeOf(TurnStart{})
		b.Run(fmt.Sprintf("prompt=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				if me := checkMembers(frame, typ); me != nil {
					b.Fatal(me)
				}
			}
		})
	}
}
