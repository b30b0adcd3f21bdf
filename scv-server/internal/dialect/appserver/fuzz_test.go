package appserver

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecode: the request decoder never panics, rejects with a JSON-RPC
// error code, and what it accepts survives encoding and decoding again.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"clientInfo":{"name":"x"}}}`,
		`{"id":"approval_1","result":{"decision":"allow"}}`,
		`{"jsonrpc":"2.0","method":"initialized"}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`,
		`{"id":2,"method":"turn/start","params":[1]}`,
		`[{"id":1}]`, `{"id":true,"method":"x"}`, `{"jsonrpc":"1.0","id":1,"method":"x"}`, `{`, ``, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, id, rerr := Decode(line)
		if rerr != nil {
			switch rerr.Code {
			case CodeParseError, CodeInvalidRequest, CodeInvalidParams:
			default:
				t.Fatalf("unexpected code %d for %q", rerr.Code, line)
			}
			if id != nil && !json.Valid(id) {
				t.Fatalf("invalid id %q", id)
			}
			return
		}
		again, _, rerr := Decode(bytes.TrimSpace(encode(m)))
		if rerr != nil {
			t.Fatalf("%q decoded, its encoding %q does not: %v", line, encode(m), rerr)
		}
		if again.Method != m.Method || !bytes.Equal(again.ID, m.ID) {
			t.Fatalf("round trip changed %+v to %+v", m, again)
		}
	})
}
