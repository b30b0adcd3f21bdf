package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/delegate/adapters"
)

// claudeLog builds a Claude Code stream-json log of about size bytes: the
// shape of a long coding run, mostly tool results (command output and file
// contents) with assistant tool uses and interim text between them, and a
// closing result event.
func claudeLog(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"system","subtype":"init","session_id":"0b6f3a52-5d7e-4a43-9a39-2f6f1f3f1a11","tools":["Bash","Read","Edit"]}` + "\n")
	out := strings.Repeat("ok  \tgithub.com/x/y/pkg\t0.123s \"quoted\" \\ path\n", 200)
	for i := 0; b.Len() < size; i++ {
		use, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": fmt.Sprintf("Step %d: running the tests again.\nMore detail.", i)},
			map[string]any{"type": "tool_use", "id": fmt.Sprintf("tu_%d", i), "name": "Bash", "input": map[string]any{"command": "go test ./... -run TestX", "description": "tests"}},
		}, "usage": map[string]any{"input_tokens": 100, "output_tokens": 50}}})
		b.Write(use)
		b.WriteByte('\n')
		res, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("tu_%d", i), "content": out},
		}}})
		b.Write(res)
		b.WriteByte('\n')
	}
	b.WriteString(`{"type":"result","subtype":"success","is_error":false,"result":"All tests pass.","usage":{"input_tokens":1,"output_tokens":2}}` + "\n")
	return b.Bytes()
}

// BenchmarkClaudeStream parses a 50 MB stream-json log fed in 64 KiB
// writes (a pipe's reads), with progress on.
func BenchmarkClaudeStream(b *testing.B) {
	log := claudeLog(50 << 20)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		lines := 0
		p := New(adapters.FormatStreamJSON, Options{Progress: func(string) { lines++ }})
		for d := log; len(d) > 0; {
			k := min(64<<10, len(d))
			_, _ = p.Write(d[:k])
			d = d[k:]
		}
		if r := p.Close(); r.Reply != "All tests pass." || lines == 0 {
			b.Fatalf("result %+v, %d progress lines", r, lines)
		}
	}
}

// TestConstantMemory feeds a 50 MB stream-json log (the same events over
// and over, never held whole) and checks the heap the parser holds stays
// bounded by one line buffer, not the log.
func TestConstantMemory(t *testing.T) {
	// Not parallel: it measures the whole process's allocations.
	unit := claudeLog(64 << 10)
	unit = unit[bytes.IndexByte(unit, '\n')+1:] // without the init event
	unit = unit[:bytes.LastIndex(unit[:len(unit)-1], []byte("\n"))+1]
	p := New(adapters.FormatStreamJSON, Options{Progress: func(string) {}})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for fed := 0; fed < 50<<20; fed += len(unit) {
		for d := unit; len(d) > 0; {
			k := min(64<<10, len(d))
			_, _ = p.Write(d[:k])
			d = d[k:]
		}
	}
	_, _ = p.Write([]byte(`{"type":"result","subtype":"success","result":"ok"}` + "\n"))
	runtime.GC()
	runtime.ReadMemStats(&after)
	r := p.Close()
	if r.Reply != "ok" {
		t.Fatalf("result %+v", r)
	}
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 8<<20 {
		t.Errorf("heap grew by %d bytes over a 50 MB log", grew)
	}
}
