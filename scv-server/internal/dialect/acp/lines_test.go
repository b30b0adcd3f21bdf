package acp

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// gateAll runs input through a gate and returns what it handed over and
// what it answered.
func gateAll(t *testing.T, input []byte) (passed, answered []byte) {
	t.Helper()
	var out bytes.Buffer
	g := newGate(bytes.NewReader(input), &out)
	close(g.ready)
	passed, err := io.ReadAll(g)
	if err != nil {
		t.Fatalf("reading through the gate: %v", err)
	}
	return passed, out.Bytes()
}

func TestGate(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		``,
		`not json`,
		`[1,2]`,
		`"str"`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"m"}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`{"jsonrpc":"2.0","id":2,"method":""}`,
		"{\"jsonrpc\":\"2.0\",\"method\":\"last\"}\r",
	}, "\n")
	passed, answered := gateAll(t, []byte(in))
	want := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}
{"jsonrpc":"2.0","id":"a","result":{}}
{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}
{"jsonrpc":"2.0","method":"last"}
`
	if string(passed) != want {
		t.Fatalf("passed:\n%s\nwant:\n%s", passed, want)
	}
	var codes []string
	for _, l := range strings.Split(strings.TrimSpace(string(answered)), "\n") {
		var m struct {
			ID    json.RawMessage    `json:"id"`
			Error struct{ Code int } `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("answer %q: %v", l, err)
		}
		codes = append(codes, string(m.ID)+":"+itoa(m.Error.Code))
	}
	if got := strings.Join(codes, " "); got != "null:-32700 null:-32600 null:-32600 null:-32600 2:-32600" {
		t.Fatalf("answers %s\n%s", got, answered)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestGateLongLine(t *testing.T) {
	t.Parallel()
	long := `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", MaxLineBytes) + `"}`
	passed, answered := gateAll(t, []byte(long+"\n"+`{"jsonrpc":"2.0","method":"after"}`+"\n"))
	if string(passed) != `{"jsonrpc":"2.0","method":"after"}`+"\n" {
		t.Fatalf("passed %.200q", passed)
	}
	if !bytes.Contains(answered, []byte("-32600")) || bytes.Count(answered, []byte("\n")) != 1 {
		t.Fatalf("answered %q", answered)
	}
	// Exactly at the limit passes.
	exact := `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("a", MaxLineBytes-len(`{"jsonrpc":"2.0","method":"x","params":""}`)) + `"}`
	if len(exact) != MaxLineBytes {
		t.Fatalf("bad fixture: %d", len(exact))
	}
	passed, answered = gateAll(t, []byte(exact+"\n"))
	if len(passed) != MaxLineBytes+1 || len(answered) != 0 {
		t.Fatalf("a line of exactly %d bytes: passed %d, answered %q", MaxLineBytes, len(passed), answered)
	}
}

// FuzzGate: whatever comes in, every line handed to the SDK is one JSON
// object with jsonrpc 2.0, every answer is valid JSON-RPC error JSON, and
// nothing is handed over twice.
func FuzzGate(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize"}`,
		"not json\n{\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n",
		`[{"jsonrpc":"2.0"}]`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}`,
		"\r\n\n\t{}",
		`{"jsonrpc":"2.0","id":1e999,"method":"m"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		passed, answered := gateAll(t, input)
		for _, l := range bytes.Split(bytes.TrimSuffix(passed, []byte("\n")), []byte("\n")) {
			if len(passed) == 0 {
				break
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(l, &m); err != nil || string(m["jsonrpc"]) != `"2.0"` {
				t.Fatalf("handed over %q (%v)", l, err)
			}
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(answered, []byte("\n")), []byte("\n")) {
			if len(answered) == 0 {
				break
			}
			var m struct {
				JSONRPC string `json:"jsonrpc"`
				Error   *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal(l, &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Message == "" {
				t.Fatalf("answered %q (%v)", l, err)
			}
		}
		if len(passed) > len(input)+bytes.Count(input, []byte("\n"))+1 {
			t.Fatalf("handed over more than came in")
		}
	})
}
