package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func typicalDelta() *AssistantDelta {
	return &AssistantDelta{
		TurnHeader: TurnHeader{
			RequestID: "3",
			SessionID: "3f0c6f0e-0d7e-4b3a-9f51-8c1f0f6f2c11",
			TurnID:    "9b2d7c4a-5e61-4f0b-8a3e-2d9c1b7e6f40",
			Seq:       1234,
		},
		Content: "I found the issue: the parser drops the last token when the input ends without a newline.\n",
	}
}

// genericDelta encodes d through encoding/json, the path every other event
// takes, for comparison with the hand-written fast path.
func genericDelta(t testing.TB, d *AssistantDelta) []byte {
	t.Helper()
	out, err := appendTyped(nil, d.Kind(), d)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDeltaFastPathMatchesGeneric checks that the hand-written delta
// encoder writes exactly the bytes encoding/json would.
func TestDeltaFastPathMatchesGeneric(t *testing.T) {
	t.Parallel()
	deltas := []*AssistantDelta{
		typicalDelta(),
		{},
		{TurnHeader: TurnHeader{SessionID: "s", TurnID: "t", Seq: ^uint64(0)}, Content: "server-started turn"},
	}
	for _, s := range trickyStrings() {
		deltas = append(deltas, &AssistantDelta{
			TurnHeader: TurnHeader{RequestID: s, SessionID: s, TurnID: s, Seq: 7},
			Content:    s,
		})
	}
	for _, d := range deltas {
		got, err := EncodeEvent(d)
		if err != nil {
			t.Fatal(err)
		}
		if want := genericDelta(t, d); !bytes.Equal(got, want) {
			t.Errorf("fast path differs from encoding/json\n got %s\nwant %s", clip(got), clip(want))
		}
	}
}

// TestEncodeEventAllocs holds EncodeEvent of a typical delta to at most two
// allocations (in practice one: the frame itself).
func TestEncodeEventAllocs(t *testing.T) {
	d := typicalDelta()
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := EncodeEvent(d); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("EncodeEvent of a delta makes %.1f allocations, want at most 2", allocs)
	}
	// Content that needs escaping stays within the bound.
	d.Content = strings.Repeat("line with \"quotes\" and a tab\t\n", 20)
	allocs = testing.AllocsPerRun(1000, func() {
		if _, err := EncodeEvent(d); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("EncodeEvent of an escaped delta makes %.1f allocations, want at most 2", allocs)
	}
}

// TestAppendEventDeltaNoAllocs: appending a delta to a buffer with room
// allocates nothing.
func TestAppendEventDeltaNoAllocs(t *testing.T) {
	d := typicalDelta()
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(1000, func() {
		var err error
		buf, err = AppendEvent(buf[:0], d)
		if err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendEvent of a delta into a reused buffer makes %.1f allocations, want 0", allocs)
	}
}

// TestEncodeNoHTMLEscaping: every event escapes strings the same way, the
// fast path's way, which leaves <, > and & alone.
func TestEncodeNoHTMLEscaping(t *testing.T) {
	t.Parallel()
	const s = "<b>&amp;</b>"
	for _, e := range []Event{
		&AssistantDelta{Content: s},
		&AssistantCompleted{Content: s},
		&ToolProposed{Name: "x", Arguments: json.RawMessage(`{"html":"<b>&amp;</b>"}`)},
		&Error{Code: ErrInvalidRequest, Message: s},
	} {
		out, err := EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(out, []byte(s)) {
			t.Errorf("%s: %s does not carry %s unescaped", e.Kind(), out, s)
		}
	}
	out, err := EncodeClientMessage(&TurnStart{RequestID: "1", SessionID: "s", Prompt: s})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(s)) {
		t.Errorf("turn.start: %s does not carry %s unescaped", out, s)
	}
}

func TestEncodeNilMessage(t *testing.T) {
	t.Parallel()
	for _, e := range []Event{(*AssistantDelta)(nil), (*TurnCompleted)(nil), (*QueueSnapshot)(nil)} {
		out, err := AppendEvent([]byte("keep"), e)
		if err == nil {
			t.Errorf("%s: encoding a nil event gave %s", e.Kind(), out)
		}
		if string(out) != "keep" {
			t.Errorf("%s: the buffer changed to %q on error", e.Kind(), out)
		}
	}
	if out, err := EncodeClientMessage((*TurnStart)(nil)); err == nil {
		t.Errorf("encoding a nil message gave %s", out)
	}
}

func TestEncodeErrorsAreReported(t *testing.T) {
	t.Parallel()
	_, err := EncodeEvent(&ToolProposed{Name: "x", Arguments: json.RawMessage(`{not json`)})
	if err == nil || !strings.Contains(err.Error(), "tool.proposed") {
		t.Errorf("invalid arguments: err = %v", err)
	}
}

func TestEncodeEmptyQueueSnapshot(t *testing.T) {
	t.Parallel()
	e := &QueueSnapshot{SessionHeader: SessionHeader{SessionID: "s"}}
	out, err := EncodeEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"queue.snapshot","session_id":"s","seq":0,"entries":[]}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
	if e.Entries != nil {
		t.Error("encoding changed the event")
	}
}

func TestEncodeOmitsEmptyOptionalFields(t *testing.T) {
	t.Parallel()
	out, err := EncodeEvent(&TurnCompleted{TurnHeader: TurnHeader{SessionID: "s", TurnID: "t", Seq: 2}, Steps: 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"type":"turn.completed","session_id":"s","turn_id":"t","seq":2,"steps":1}`; string(out) != want {
		t.Errorf("got %s, want %s", out, want)
	}
}

func BenchmarkEncodeAssistantDelta(b *testing.B) {
	d := typicalDelta()
	b.Run("AppendEvent", func(b *testing.B) {
		buf := make([]byte, 0, 4096)
		b.ReportAllocs()
		for b.Loop() {
			var err error
			buf, err = AppendEvent(buf[:0], d)
			if err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("EncodeEvent", func(b *testing.B) {
		b.ReportAllocs()
		var out []byte
		for b.Loop() {
			var err error
			out, err = EncodeEvent(d)
			if err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(out)))
	})
	b.Run("encoding-json", func(b *testing.B) {
		// The generic path, for comparison.
		b.ReportAllocs()
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			var err error
			buf, err = appendTyped(buf[:0], d.Kind(), d)
			if err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
}

func BenchmarkEncodeToolCompleted(b *testing.B) {
	e := &ToolCompleted{
		TurnHeader: typicalDelta().TurnHeader,
		CallID:     "call_123", Name: "bash", Success: true,
		Output: strings.Repeat("ok  \tgithub.com/scv-cli/scv/shared/protocol\t0.1s\n", 20),
	}
	buf := make([]byte, 0, 8192)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		buf, err = AppendEvent(buf[:0], e)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}
