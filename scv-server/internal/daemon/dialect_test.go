package daemon

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestSniff(t *testing.T) {
	t.Parallel()
	long := `{"type":"initialize","pad":"` + strings.Repeat("x", 2*maxPreamble) + "\"}\n"
	for _, tt := range []struct {
		name, in string
		acp      bool
		rest     string
	}{
		{"acp", ACPPreamble + "\n" + `{"jsonrpc":"2.0"}` + "\n", true, `{"jsonrpc":"2.0"}` + "\n"},
		{"acp crlf", ACPPreamble + "\r\n", true, ""},
		{"ndjson", `{"type":"initialize"}` + "\nnext\n", false, `{"type":"initialize"}` + "\nnext\n"},
		{"preamble with spaces is ndjson", `{"dialect": "acp"}` + "\n", false, `{"dialect": "acp"}` + "\n"},
		{"no newline", ACPPreamble, false, ACPPreamble},
		{"empty", "", false, ""},
		{"longer than the buffer", long, false, long},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			acp, rest := sniff(strings.NewReader(tt.in))
			got, err := io.ReadAll(rest)
			if err != nil || acp != tt.acp || string(got) != tt.rest {
				t.Fatalf("acp %v, rest %.80q (%v); want %v, %.80q", acp, got, err, tt.acp, tt.rest)
			}
		})
	}
}

// FuzzSniff: whatever the first line, the NDJSON dialect sees every byte
// the client sent, and only the exact preamble line selects ACP.
func FuzzSniff(f *testing.F) {
	f.Add([]byte(ACPPreamble + "\n{}\n"))
	f.Add([]byte(`{"type":"initialize","request_id":"1","protocol_version":4}` + "\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		acp, rest := sniff(bytes.NewReader(in))
		got, err := io.ReadAll(rest)
		if err != nil {
			t.Fatal(err)
		}
		if acp {
			line, after, _ := bytes.Cut(in, []byte("\n"))
			if string(bytes.TrimRight(line, "\r")) != ACPPreamble || !bytes.Equal(got, after) {
				t.Fatalf("ACP chosen for %q (rest %q)", in, got)
			}
			return
		}
		if !bytes.Equal(got, in) {
			t.Fatalf("NDJSON sees %q, the client sent %q", got, in)
		}
	})
}
