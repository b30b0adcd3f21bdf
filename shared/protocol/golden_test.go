package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/testkit/golden"
)

const (
	clientGolden = "testdata/client.jsonl"
	eventsGolden = "testdata/events.jsonl"
)

// goldenLine is one hand-written wire line of a golden file.
type goldenLine struct {
	file string
	num  int
	text []byte
}

func (g goldenLine) name() string {
	return filepath.Base(g.file) + ":" + strconv.Itoa(g.num) + ":" + PeekType(g.text)
}

// readGolden returns the non-blank lines of a golden file; lines starting
// with "//" are comments.
func readGolden(t testing.TB, file string) []goldenLine {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []goldenLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, MaxServerFrameBytes+2)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || bytes.HasPrefix(line, []byte("//")) {
			continue
		}
		out = append(out, goldenLine{file: file, num: n, text: slices.Clone(line)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no lines", file)
	}
	return out
}

// semantic decodes a JSON text into generic values, numbers kept exact.
func semantic(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	if dec.More() {
		t.Fatalf("trailing data after the JSON value:\n%s", b)
	}
	return v
}

// firstKey returns the first member name of a JSON object.
func firstKey(t testing.TB, b []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", b)
	}
	tok, err := dec.Token()
	if err != nil {
		t.Fatalf("reading the first key of %s: %v", b, err)
	}
	key, _ := tok.(string)
	return key
}

func assertSameJSON(t testing.TB, want, got []byte) {
	t.Helper()
	if !reflect.DeepEqual(semantic(t, want), semantic(t, got)) {
		t.Errorf("re-encoding differs\n want %s\n  got %s", want, got)
	}
}

func assertTypeFirst(t testing.TB, b []byte, kind string) {
	t.Helper()
	if k := firstKey(t, b); k != "type" {
		t.Errorf("first member is %q, want \"type\": %s", k, b)
	}
	if !bytes.HasPrefix(b, []byte(`{"type":`+string(appendString(nil, kind)))) {
		t.Errorf("frame does not start with {\"type\":%q: %s", kind, b)
	}
}

func TestGoldenClientRoundTrip(t *testing.T) {
	t.Parallel()
	for _, g := range readGolden(t, clientGolden) {
		t.Run(g.name(), func(t *testing.T) {
			assertTypeFirst(t, g.text, PeekType(g.text))
			m, err := DecodeClientMessage(g.text)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if m.Kind() != PeekType(g.text) {
				t.Errorf("Kind() = %q, frame type %q", m.Kind(), PeekType(g.text))
			}
			if m.Request() == "" {
				t.Error("Request() is empty")
			}
			out, err := EncodeClientMessage(m)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			assertTypeFirst(t, out, m.Kind())
			assertSameJSON(t, g.text, out)
		})
	}
}

func TestGoldenEventsRoundTrip(t *testing.T) {
	t.Parallel()
	for _, g := range readGolden(t, eventsGolden) {
		t.Run(g.name(), func(t *testing.T) {
			assertTypeFirst(t, g.text, PeekType(g.text))
			e, err := DecodeEvent(g.text)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if e.Kind() != PeekType(g.text) {
				t.Errorf("Kind() = %q, frame type %q", e.Kind(), PeekType(g.text))
			}
			out, err := EncodeEvent(e)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			assertTypeFirst(t, out, e.Kind())
			assertSameJSON(t, g.text, out)

			// AppendEvent appends to what is already there.
			prefix := []byte("prefix")
			app, err := AppendEvent(prefix, e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(app[:len(prefix)], prefix) || !bytes.Equal(app[len(prefix):], out) {
				t.Errorf("AppendEvent = %s, want prefix + %s", app, out)
			}
		})
	}
}

// TestGoldenCoversRegistries fails when a message or event type has no
// golden line, or a golden line has a type the registries do not know.
func TestGoldenCoversRegistries(t *testing.T) {
	t.Parallel()
	check := func(file string, registry []string) {
		seen := map[string]bool{}
		for _, g := range readGolden(t, file) {
			seen[PeekType(g.text)] = true
		}
		for _, typ := range registry {
			if !seen[typ] {
				t.Errorf("%s has no line of type %q", file, typ)
			}
			delete(seen, typ)
		}
		for typ := range seen {
			t.Errorf("%s has a line of type %q, which is not registered", file, typ)
		}
	}
	check(clientGolden, ClientMessageTypes())
	check(eventsGolden, EventTypes())
}

// TestGoldenCoversOptionalFields fails when an omitempty field of some
// message never appears in the golden files, so every optional field is
// exercised by the round trip at least once.
func TestGoldenCoversOptionalFields(t *testing.T) {
	t.Parallel()
	check := func(file string, newValue func(string) any, types []string) {
		present := map[string]map[string]bool{} // type -> JSON paths seen
		for _, g := range readGolden(t, file) {
			typ := PeekType(g.text)
			if present[typ] == nil {
				present[typ] = map[string]bool{}
			}
			collectPaths(semantic(t, g.text), "", present[typ])
		}
		for _, typ := range types {
			for _, path := range optionalPaths(reflect.TypeOf(newValue(typ)).Elem(), "") {
				if !present[typ][path] {
					t.Errorf("%s: no %s line carries the optional field %q", file, typ, path)
				}
			}
		}
	}
	check(clientGolden, func(s string) any { return NewClientMessage(s) }, ClientMessageTypes())
	check(eventsGolden, func(s string) any { return NewEvent(s) }, EventTypes())
}

// collectPaths records the member paths of a decoded JSON value, with
// array elements folded into their array's path.
func collectPaths(v any, prefix string, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			into[p] = true
			collectPaths(x, p, into)
		}
	case []any:
		for _, x := range v {
			collectPaths(x, prefix, into)
		}
	}
}

// optionalPaths lists the JSON paths of the omitempty fields of a struct
// type, descending into embedded and nested structs.
func optionalPaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			out = append(out, optionalPaths(f.Type, prefix)...)
			continue
		}
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		if strings.Contains(opts, "omitempty") {
			out = append(out, p)
		}
		if f.Type != reflect.TypeFor[json.RawMessage]() {
			out = append(out, optionalPaths(f.Type, p)...)
		}
	}
	return out
}

// TestCanonicalEncoding pins the exact bytes the encoders write for every
// golden line (field order, escaping, number formatting), so a change of
// the wire bytes is a visible diff. Run with -update to regenerate.
func TestCanonicalEncoding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		golden, canonical string
		encode            func([]byte) ([]byte, error)
	}{
		{clientGolden, "testdata/client.canonical.jsonl", func(b []byte) ([]byte, error) {
			m, err := DecodeClientMessage(b)
			if err != nil {
				return nil, err
			}
			return EncodeClientMessage(m)
		}},
		{eventsGolden, "testdata/events.canonical.jsonl", func(b []byte) ([]byte, error) {
			e, err := DecodeEvent(b)
			if err != nil {
				return nil, err
			}
			return EncodeEvent(e)
		}},
	} {
		var buf bytes.Buffer
		for _, g := range readGolden(t, tc.golden) {
			out, err := tc.encode(g.text)
			if err != nil {
				t.Fatalf("%s: %v", g.name(), err)
			}
			// Never pin an encoding that is not the golden line's meaning.
			if !reflect.DeepEqual(semantic(t, g.text), semantic(t, out)) {
				t.Fatalf("%s: encoding differs from the golden line; fix the encoder, not the golden file", g.name())
			}
			buf.Write(out)
			buf.WriteByte('\n')
		}
		// -update (testkit/golden) rewrites the canonical encodings; the
		// hand-written golden lines are never rewritten.
		golden.Equal(t, tc.canonical, buf.Bytes())
	}
}

// TestRegistries checks the type registries against the Go types.
func TestRegistries(t *testing.T) {
	t.Parallel()
	for _, typ := range ClientMessageTypes() {
		m := NewClientMessage(typ)
		if m == nil || m.Kind() != typ {
			t.Errorf("NewClientMessage(%q) = %#v", typ, m)
		}
		v, ok := ClientMessageSince(typ)
		if !ok || v < Oldest || v > Latest {
			t.Errorf("ClientMessageSince(%q) = %d, %v", typ, v, ok)
		}
	}
	for _, typ := range EventTypes() {
		e := NewEvent(typ)
		if e == nil || e.Kind() != typ {
			t.Errorf("NewEvent(%q) = %#v", typ, e)
		}
		// Everything but the connection-level events is sequenced.
		_, seq := e.(Sequenced)
		conn := typ == TypeInitialized || typ == TypeSessionStarted || typ == TypeError ||
			typ == TypeSessionReplay || typ == TypeSessionListed || typ == TypeRulesListed ||
			typ == TypeSessionAttached || typ == TypeSessionDetached || typ == TypeDaemonStatusIs ||
			typ == TypeSessionModel
		if seq == conn {
			t.Errorf("%s: Sequenced = %v", typ, seq)
		}
		terminal := typ == TypeTurnCompleted || typ == TypeTurnCancelled || typ == TypeTurnFailed
		if IsTerminal(e) != terminal {
			t.Errorf("IsTerminal(%s) = %v", typ, !terminal)
		}
	}
	if NewClientMessage("nope") != nil || NewEvent("nope") != nil {
		t.Error("unknown types must give nil")
	}
	if _, ok := ClientMessageSince("nope"); ok {
		t.Error("ClientMessageSince of an unknown type")
	}
	for _, v := range []struct {
		typ   string
		since int
	}{
		{TypeTurnStart, Version1}, {TypeQueueUpdate, Version2}, {TypeSessionPause, Version2}, {TypeSessionCompact, Version3}, {TypeSessionAttach, Version4},
	} {
		if got, _ := ClientMessageSince(v.typ); got != v.since {
			t.Errorf("ClientMessageSince(%q) = %d, want %d", v.typ, got, v.since)
		}
	}
}

func TestSequenced(t *testing.T) {
	t.Parallel()
	e := &AssistantDelta{TurnHeader: TurnHeader{SessionID: "s"}}
	var s Sequenced = e
	s.SetSeq(7)
	if s.SeqNum() != 7 || e.Seq != 7 || s.Session() != "s" {
		t.Errorf("TurnHeader sequencing: %+v", e)
	}
	q := &QueueMoved{SessionHeader: SessionHeader{SessionID: "s2"}}
	s = q
	s.SetSeq(9)
	if s.SeqNum() != 9 || q.Seq != 9 || s.Session() != "s2" {
		t.Errorf("SessionHeader sequencing: %+v", q)
	}
}

func TestPeekType(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"type":"turn.start"}`: "turn.start",
		`{"type":5}`:            "",
		`{}`:                    "",
		`[]`:                    "",
		`nope`:                  "",
		``:                      "",
	} {
		if got := PeekType([]byte(in)); got != want {
			t.Errorf("PeekType(%q) = %q, want %q", in, got, want)
		}
	}
}
