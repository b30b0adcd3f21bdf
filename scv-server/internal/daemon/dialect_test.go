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
		dialect  string
		rest     string
	}{
		{"acp", ACPPreamble + "\n" + `{"jsonrpc":"2.0"}` + "\n", dialectACP, `{"jsonrpc":"2.0"}` + "\n"},
		{"acp crlf", ACPPreamble + "\r\n", dialectACP, ""},
		{"app-server", AppServerPreamble + "\n" + `{"id":1,"method":"initialize"}` + "\n", dialectAppServer, `{"id":1,"method":"initialize"}` + "\n"},
		{"ndjson", `{"type":"initialize"}` + "\nnext\n", dialectNDJSON, `{"type":"initialize"}` + "\nnext\n"},
		{"preamble with spaces is ndjson", `{"dialect": "acp"}` + "\n", dialectNDJSON, `{"dialect": "acp"}` + "\n"},
		{"no newline", ACPPreamble, dialectNDJSON, ACPPreamble},
		{"empty", "", dialectNDJSON, ""},
		{"longer than the buffer", long, dialectNDJSON, long},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dialect, rest := sniff(strings.NewReader(tt.in))
			got, err := io.ReadAll(rest)
			if err != nil || dialect != tt.dialect || string(got) != tt.rest {
				t.Fatalf("dialect %q, rest %.80q (%v); want %q, %.80q", dialect, got, err, tt.dialect, tt.rest)
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
		dialect, rest := sniff(bytes.NewReader(in))
		got, err := io.ReadAll(rest)
		if err != nil {
			t.Fatal(err)
		}
		if dialect != dialectNDJSON {
			want := map[string]string{dialectACP: ACPPreamble, dialectAppServer: AppServerPreamble}[dialect]
			line, after, _ := bytes.Cut(in, []byte("\n"))
			if string(bytes.TrimRight(line, "\r")) != want || !bytes.Equal(got, after) {
				t.Fatalf("%s chosen for %q (rest %q)", dialect, in, got)
			}
			return
		}
		if !bytes.Equal(got, in) {
			t.Fatalf("NDJSON sees %q, the client sent %q", got, in)
		}
	})
}
