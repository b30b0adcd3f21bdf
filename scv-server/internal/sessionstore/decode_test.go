package sessionstore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/protocol"
)

// fast decodes line with the fast parser alone.
func fast(line []byte) (record, bool) {
	var r record
	p := fastParser{b: line}
	ok := p.record(&r) && p.i == len(line)
	return r, ok
}

// checkAgrees fails when the fast parser accepts line but encoding/json
// refuses it or reads it differently.
func checkAgrees(t *testing.T, line []byte) (accepted bool) {
	t.Helper()
	got, ok := fast(line)
	if !ok {
		return false
	}
	var want record
	if err := json.Unmarshal(line, &want); err != nil {
		t.Fatalf("the fast parser accepts %q, which encoding/json refuses: %v", line, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nfast %+v\njson %+v", line, got, want)
	}
	return true
}

// encoded returns r as the log writes it.
func encoded(t testing.TB, r *record) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func sampleRecords() []*record {
	var all strings.Builder
	for c := range 128 {
		all.WriteByte(byte(c))
	}
	texts := []string{"", "plain", all.String(), "é ü 日本 😀 \u2028\u2029", "bad \xff\xfe utf-8", `quotes " and \ backslashes /`, "<html> & </html>", strings.Repeat("x", 5000)}
	var recs []*record
	recs = append(recs,
		&record{T: recMeta, V: 1, ID: "829eef7b-6c5e-4aa4-bd80-d24d676a05c0", Cwd: "/home/ana/é", Model: "gpt-4.1", At: "2026-12-01T09:10:46.970555294Z"},
		&record{T: recTurn, Turn: "t1", Request: "r1", At: "x"},
		&record{T: recTurn, Turn: "t2", Origin: &protocol.Origin{Kind: "background", Jobs: []string{"job-1", "job-2"}}},
		&record{T: recTurn, Turn: "t3", Origin: &protocol.Origin{Kind: "background"}},
		&record{T: recEnd, Turn: "t1", Outcome: OutcomeFailed, Code: "provider_error", Message: "boom \"quoted\"", Steps: 32, Usage: &protocol.Usage{InputTokens: 123456789012, OutputTokens: 0}},
		&record{T: recEnd, Turn: "t1", Outcome: OutcomeCompleted, Usage: &protocol.Usage{}},
		&record{T: recEnd, Turn: "t2", Outcome: OutcomeCompleted, Steps: 2, Usage: &protocol.Usage{InputTokens: 900, OutputTokens: 20, CachedInputTokens: new(int64(768))}},
		&record{T: recClear, At: "now"},
		&record{T: recCompact, From: 3, Removed: 7, Messages: []provider.Message{{Role: provider.RoleUser, Content: "summary"}, {Role: provider.RoleAssistant, ToolCalls: []provider.ToolCall{{ID: "c", Name: "n", Arguments: "{}"}}}}},
		&record{T: recCompact, Removed: 2},
		&record{T: recResume, Model: "m"},
		&record{T: "future", ID: "x"},
	)
	for _, s := range texts {
		recs = append(recs,
			&record{T: recMsg, Turn: "t1", Msg: &provider.Message{Role: provider.RoleUser, Content: s}},
			&record{T: recMsg, Turn: "t1", Msg: &provider.Message{Role: provider.RoleAssistant, Content: s, ToolCalls: []provider.ToolCall{{ID: "call_1", Name: "bash", Arguments: s}, {ID: s, Name: s, Arguments: `{"command":"go test"}`}}}},
			&record{T: recMsg, Turn: s, Msg: &provider.Message{Role: provider.RoleTool, ToolCallID: s, Content: "error: " + s}, Failed: true, Synthetic: true},
		)
	}
	return recs
}

// TestFastParserReadsWhatTheLogWrites checks that every record the log
// writes takes the fast path and reads back as encoding/json reads it.
func TestFastParserReadsWhatTheLogWrites(t *testing.T) {
	t.Parallel()
	for _, r := range sampleRecords() {
		line := encoded(t, r)
		if !checkAgrees(t, line) {
			t.Errorf("the fast parser gave up on a record the log writes: %s", line)
		}
		var got record
		if err := decodeRecord(line, &got); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFastParserLeavesTheRestToJSON checks lines the fast parser must give
// up on: decodeRecord then reads them exactly as encoding/json does.
func TestFastParserLeavesTheRestToJSON(t *testing.T) {
	t.Parallel()
	for _, line := range []string{
		`{ "t":"msg"}`,
		`{"t":"msg" }`,
		`{"T":"msg"}`,
		`{"t":null}`,
		`{"t":"msg","steps":1.0}`,
		`{"t":"msg","steps":1e3}`,
		`{"t":"msg","steps":01}`,
		`{"t":"msg","steps":12345678901234567890}`,
		`{"t":"msg","t":"end"}`,
		`{"t":"msg","msg":{"role":"user"},"msg":{"content":"x"}}`,
		`{"t":"msg","msg":{"role":"user","extra":1}}`,
		`{"t":"msg","unknown":"x"}`,
		`{"t":"\ud83d\ude00"}`,
		`{"t":"\ud83d"}`,
		"{\"t\":\"\xff\"}",
		"{\"t\":\"a\tb\"}",
		`{"t":"msg"}x`,
		`{"t":"msg"} `,
		`{"t":"msg",}`,
		`{"t":"msg","failed":tru}`,
		`{"t":"msg","failed":"true"}`,
		`{"t":"\x"}`,
		`{"t":"\u12"}`,
		`{"t":"msg"`,
		`["t"]`,
		``,
	} {
		if checkAgrees(t, []byte(line)) {
			t.Errorf("the fast parser accepted %q", line)
		}
		var got, want record
		gotErr := decodeRecord([]byte(line), &got)
		wantErr := json.Unmarshal([]byte(line), &want)
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: decodeRecord = %+v, %v; encoding/json = %+v, %v", line, got, gotErr, want, wantErr)
		}
	}
	// Escapes the log's encoder does not write, but valid JSON, agree too.
	for _, line := range []string{`{"t":"a\/b\b\f\u00e9\u0041"}`, `{"t":"-","steps":-0,"v":-12}`, `{"t":"x","msg":{}}`, `{"t":"x","messages":[],"origin":{"jobs":[]}}`} {
		if !checkAgrees(t, []byte(line)) {
			t.Errorf("the fast parser gave up on %q", line)
		}
	}
}

// FuzzFastParser: whatever the fast parser accepts, encoding/json accepts
// and reads the same way.
func FuzzFastParser(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(encoded(f, r))
	}
	f.Add([]byte(`{"t":"a\/b\b\f\u00e9\u0041","steps":-0}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkAgrees(t, line)
	})
}
