package protocol

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeClientMessageErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		frame   string
		code    ErrorCode
		reqID   string
		message []string // substrings the message must contain
	}{
		{"not JSON", `hello`, ErrInvalidJSON, "", []string{"not valid JSON"}},
		{"truncated object", `{"type":"turn.start","request_id":"1"`, ErrInvalidJSON, "", nil},
		{"two values", `{"type":"session.clear","request_id":"1","session_id":"s"} {}`, ErrInvalidJSON, "", nil},
		{"empty frame", ``, ErrInvalidJSON, "", nil},
		{"whitespace only", "  \t", ErrInvalidJSON, "", nil},
		{"trailing comma", `{"type":"turn.start",}`, ErrInvalidJSON, "", nil},
		{"single quotes", `{'type':'turn.start'}`, ErrInvalidJSON, "", nil},
		{"JSON array", `[{"type":"turn.start","request_id":"1"}]`, ErrInvalidRequest, "", []string{"not an object"}},
		{"JSON number", `42`, ErrInvalidRequest, "", []string{"not an object"}},
		{"JSON string", `"turn.start"`, ErrInvalidRequest, "", []string{"not an object"}},
		{"JSON null", `null`, ErrInvalidRequest, "", []string{"not an object"}},
		{"JSON true", `true`, ErrInvalidRequest, "", []string{"not an object"}},
		{"missing type", `{"request_id":"7","prompt":"hi"}`, ErrInvalidRequest, "7", []string{`no "type"`}},
		{"null type", `{"type":null,"request_id":"7"}`, ErrInvalidRequest, "7", []string{`no "type"`}},
		{"numeric type", `{"type":5,"request_id":"7"}`, ErrInvalidRequest, "7", []string{`"type" must be a non-empty string`}},
		{"object type", `{"type":{},"request_id":"7"}`, ErrInvalidRequest, "7", []string{`"type" must be a non-empty string`}},
		{"empty type", `{"type":"","request_id":"7"}`, ErrInvalidRequest, "7", []string{`"type" must be a non-empty string`}},
		{"missing request_id", `{"type":"turn.start","session_id":"s","prompt":"hi"}`, ErrInvalidRequest, "", []string{"turn.start has no request_id"}},
		{"null request_id", `{"type":"turn.start","request_id":null}`, ErrInvalidRequest, "", []string{"no request_id"}},
		{"empty request_id", `{"type":"turn.start","request_id":""}`, ErrInvalidRequest, "", []string{"no request_id"}},
		{"numeric request_id", `{"type":"turn.start","request_id":3,"session_id":"s","prompt":"hi"}`, ErrInvalidRequest, "", []string{"request_id must be a string"}},
		{"boolean request_id", `{"type":"turn.start","request_id":true}`, ErrInvalidRequest, "", []string{"request_id must be a string"}},
		{"unknown type", `{"type":"turn.pause","request_id":"8"}`, ErrInvalidRequest, "8", []string{`unknown message type "turn.pause"`}},
		{"event type sent by a client", `{"type":"turn.started","request_id":"8"}`, ErrInvalidRequest, "8", []string{"unknown message type"}},
		{"numeric prompt", `{"type":"turn.start","request_id":"9","session_id":"s","prompt":5}`, ErrInvalidRequest, "9", []string{"turn.start", `field "prompt"`, "must be a string", "number"}},
		{"string protocol_version", `{"type":"initialize","request_id":"1","protocol_version":"3","client":{"name":"x"}}`, ErrInvalidRequest, "1", []string{`field "protocol_version"`, "an integer", "string"}},
		{"fractional revision", `{"type":"queue.remove","request_id":"1","session_id":"s","queue_id":"q","revision":1.5}`, ErrInvalidRequest, "1", []string{`field "revision"`, "an integer"}},
		{"string approved", `{"type":"approval.resolve","request_id":"1","session_id":"s","approval_id":"a","approved":"yes"}`, ErrInvalidRequest, "1", []string{`field "approved"`, "a boolean"}},
		{"nested field", `{"type":"initialize","request_id":"1","protocol_version":3,"client":{"name":7}}`, ErrInvalidRequest, "1", []string{`field "client.name"`, "a string"}},
		{"string client", `{"type":"initialize","request_id":"1","protocol_version":3,"client":"scv-tui"}`, ErrInvalidRequest, "1", []string{`field "client"`, "an object"}},
		{"string delegation_depth", `{"type":"session.start","request_id":"2","cwd":"/w","delegation_depth":"1"}`, ErrInvalidRequest, "2", []string{`field "delegation_depth"`, "an integer"}},
		{"numeric tools", `{"type":"session.start","request_id":"2","cwd":"/w","tools":0}`, ErrInvalidRequest, "2", []string{`field "tools"`, "a boolean"}},
		{"array channel", `{"type":"session.start","request_id":"2","cwd":"/w","channel":[]}`, ErrInvalidRequest, "2", []string{`field "channel"`, "an object"}},
		{"object session_id", `{"type":"session.clear","request_id":"6","session_id":{}}`, ErrInvalidRequest, "6", []string{`field "session_id"`, "a string"}},
		{"missing approved", `{"type":"approval.resolve","request_id":"1","session_id":"s","approval_id":"a"}`, ErrInvalidRequest, "1", []string{"approval.resolve is missing", `"approved"`}},
		{"null paused", `{"type":"session.pause","request_id":"1","session_id":"s","paused":null}`, ErrInvalidRequest, "1", []string{`"paused"`}},
		{"missing revision and prompt", `{"type":"queue.update","request_id":"1","session_id":"s","queue_id":"q"}`, ErrInvalidRequest, "1", []string{`fields "revision", "prompt"`}},
		{"missing prompt", `{"type":"turn.start","request_id":"1","session_id":"s"}`, ErrInvalidRequest, "1", []string{`"prompt"`}},
		{"missing protocol_version", `{"type":"initialize","request_id":"1","client":{"name":"x"}}`, ErrInvalidRequest, "1", []string{`"protocol_version"`}},
		{"invalid UTF-8", "{\"type\":\"turn.start\",\"request_id\":\"1\",\"session_id\":\"s\",\"prompt\":\"\xff\"}", ErrInvalidJSON, "", []string{"UTF-8"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := DecodeClientMessage([]byte(tc.frame))
			if err == nil {
				t.Fatalf("decoded %#v, want a %s error", m, tc.code)
			}
			if m != nil {
				t.Errorf("message %#v returned with an error", m)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			if de.Code != tc.code {
				t.Errorf("code %s, want %s (%s)", de.Code, tc.code, de.Message)
			}
			if de.RequestID != tc.reqID {
				t.Errorf("request id %q, want %q", de.RequestID, tc.reqID)
			}
			for _, s := range tc.message {
				if !strings.Contains(de.Message, s) {
					t.Errorf("message %q does not contain %q", de.Message, s)
				}
			}
			if got, want := err.Error(), string(tc.code)+": "+de.Message; got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
		})
	}
}

func TestDecodeClientMessageIgnoresUnknownFields(t *testing.T) {
	t.Parallel()
	m, err := DecodeClientMessage([]byte(`{"type":"turn.start","request_id":"3","session_id":"s","prompt":"hi",` +
		`"future":{"nested":[1,2,{"x":null}]},"attachments":[],"priority":9}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &TurnStart{RequestID: "3", SessionID: "s", Prompt: "hi"}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %#v, want %#v", m, want)
	}
	// Unknown members of nested objects are ignored too.
	m, err = DecodeClientMessage([]byte(`{"type":"initialize","request_id":"1","protocol_version":3,"client":{"name":"x","os":"linux"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.(*Initialize); got.Client.Name != "x" || got.ProtocolVersion != 3 {
		t.Errorf("got %#v", got)
	}
}

func TestDecodeClientMessageFields(t *testing.T) {
	t.Parallel()
	depth := 2
	no := false
	m, err := DecodeClientMessage([]byte(`  {"request_id":"2","type":"session.start","cwd":"/w","model":"m",` +
		`"delegation_depth":2,"auto_approve":true,"channel":{"platform":"p","account":"a","conversation":"c"},"tools":false}` + "\t"))
	if err != nil {
		t.Fatal(err)
	}
	want := &SessionStart{RequestID: "2", Cwd: "/w", Model: "m", DelegationDepth: &depth, AutoApprove: true,
		Channel: &Channel{Platform: "p", Account: "a", Conversation: "c"}, Tools: &no}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %#v, want %#v", m, want)
	}
	// Absent optional fields stay unset: nil pointers, not zero values.
	m, err = DecodeClientMessage([]byte(`{"type":"session.start","request_id":"2","cwd":"/w"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s := m.(*SessionStart); s.DelegationDepth != nil || s.Tools != nil || s.Channel != nil {
		t.Errorf("absent options decoded as set: %#v", s)
	}
}

func TestDecodeEventErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, frame string
		code        ErrorCode
		message     string
	}{
		{"not JSON", `{`, ErrInvalidJSON, "not valid JSON"},
		{"array", `[]`, ErrInvalidRequest, "not an object"},
		{"missing type", `{"session_id":"s"}`, ErrInvalidRequest, `no "type"`},
		{"numeric type", `{"type":1}`, ErrInvalidRequest, `"type" must be`},
		{"unknown type", `{"type":"turn.paused","session_id":"s"}`, ErrInvalidRequest, `unknown event type "turn.paused"`},
		{"client type", `{"type":"turn.start","request_id":"1"}`, ErrInvalidRequest, "unknown event type"},
		{"wrong field", `{"type":"assistant.delta","session_id":"s","turn_id":"t","seq":1,"content":5}`, ErrInvalidRequest, `field "content" must be a string`},
		// The embedded header's Go name stays out of the field path.
		{"embedded header field", `{"type":"session.trimmed","session_id":"s","seq":-1}`, ErrInvalidRequest, `field "seq" must be an integer`},
		{"nested array element", `{"type":"queue.snapshot","session_id":"s","seq":1,"entries":[{"revision":"x"}]}`, ErrInvalidRequest, `field "entries.revision"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeEvent([]byte(tc.frame))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("DecodeEvent = %#v, %v; want a *DecodeError", e, err)
			}
			if de.Code != tc.code || !strings.Contains(de.Message, tc.message) {
				t.Errorf("got %s %q, want %s containing %q", de.Code, de.Message, tc.code, tc.message)
			}
		})
	}
	// Events need no request_id.
	if _, err := DecodeEvent([]byte(`{"type":"session.cleared","session_id":"s","seq":3}`)); err != nil {
		t.Errorf("event without request_id: %v", err)
	}
}

func TestJSONFieldPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                       "",
		"prompt":                 "prompt",
		"client.name":            "client.name",
		"SessionHeader.seq":      "seq",
		"TurnHeader.turn_id":     "turn_id",
		"entry.Inner.queue_id":   "entry.queue_id",
		"SessionHeader":          "",
		"entries.revision":       "entries.revision",
		"TurnHeader.origin.jobs": "origin.jobs",
	} {
		if got := jsonFieldPath(in); got != want {
			t.Errorf("jsonFieldPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzDecodeClientMessage(f *testing.F) {
	for _, g := range readGolden(f, clientGolden) {
		f.Add(g.text)
	}
	for _, s := range []string{
		``, `{}`, `[]`, `null`, `"x"`, `{"type":"turn.start"}`, `{"type":5,"request_id":"1"}`,
		`{"type":"turn.start","request_id":"1","prompt":5}`,
		`{"type":"turn.start","request_id":"1","TYPE":"session.clear","Prompt":"\ud800"}`,
		`{"type":"session.start","request_id":"1","delegation_depth":1e400}`,
		"{\"type\":\"turn.start\",\"request_id\":\"1\",\"prompt\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		m, err := DecodeClientMessage(frame)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			if de.Code != ErrInvalidJSON && de.Code != ErrInvalidRequest {
				t.Fatalf("code %q", de.Code)
			}
			if m != nil {
				t.Fatalf("message %#v returned with an error", m)
			}
			return
		}
		if m.Request() == "" {
			t.Fatalf("decoded %#v without a request_id", m)
		}
		out, err := EncodeClientMessage(m)
		if err != nil {
			t.Fatalf("re-encoding %#v: %v", m, err)
		}
		if !strings.HasPrefix(string(out), `{"type":`) {
			t.Fatalf("re-encoding does not start with type: %s", out)
		}
		m2, err := DecodeClientMessage(out)
		if err != nil {
			t.Fatalf("decoding the re-encoding %s: %v", out, err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip changed the message\nfirst  %#v\nsecond %#v\nvia %s", m, m2, out)
		}
	})
}

func BenchmarkDecodeClientFrame(b *testing.B) {
	frame := []byte(`{"type":"turn.start","request_id":"3","session_id":"3f0c6f0e-0d7e-4b3a-9f51-8c1f0f6f2c11","prompt":"Fix the failing test in the parser package and run the tests again."}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := DecodeClientMessage(frame); err != nil {
			b.Fatal(err)
		}
	}
}
