package output

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/testkit/golden"
	"github.com/tidwall/gjson"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var formats = map[string]adapters.Format{
	"claude": adapters.FormatStreamJSON,
	"codex":  adapters.FormatCodexJSON,
	"pi":     adapters.FormatPiJSON,
	"text":   adapters.FormatText,
}

// parsed is what a fixture's golden file holds.
type parsed struct {
	Result   Result             `json:"result"`
	Kind     delegate.ErrorKind `json:"kind"`
	Progress []string           `json:"progress"`
}

// oversizedLine replaces a "#OVERSIZED" line of a fixture: one JSON event
// over MaxLine.
func oversizedLine() []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"user","message":{"content":"`)
	b.Write(bytes.Repeat([]byte("x"), MaxLine+1024))
	b.WriteString(`"}}`)
	return b.Bytes()
}

func loadFixture(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(data, []byte("#OVERSIZED"), oversizedLine())
}

// parse feeds data in chunks of size n (0: at once).
func parse(format adapters.Format, data []byte, n, limit int) parsed {
	var g parsed
	p := New(format, Options{Limit: limit, Progress: func(l string) { g.Progress = append(g.Progress, l) }})
	if n <= 0 {
		n = len(data) + 1
	}
	for len(data) > 0 {
		k := min(n, len(data))
		_, _ = p.Write(data[:k])
		data = data[k:]
	}
	g.Result = p.Close()
	g.Kind = Classify(g.Result.Error)
	if !g.Result.Structured && format != adapters.FormatText && g.Result.Failed {
		g.Kind = Classify(g.Result.ClosingOutput)
	}
	return g
}

func TestGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/*/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".jsonl")
		t.Run(strings.TrimPrefix(name, "testdata/"), func(t *testing.T) {
			format := formats[filepath.Base(filepath.Dir(f))]
			data := loadFixture(t, f)
			got := parse(format, data, 0, 0)
			// Any chunking gives the same result.
			for _, n := range []int{1, 7, 4096} {
				if n == 1 && len(data) > 1<<20 {
					n = 3
				}
				other := parse(format, data, n, 0)
				a, _ := json.Marshal(got)
				b, _ := json.Marshal(other)
				if !bytes.Equal(a, b) {
					t.Fatalf("chunks of %d:\n%s\nvs at once:\n%s", n, b, a)
				}
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(got); err != nil {
				t.Fatal(err)
			}
			out := buf.Bytes()
			golden.Equal(t, name+".golden.json", out)
		})
	}
}

func TestGoldenExpectations(t *testing.T) {
	t.Parallel()
	// What the golden files must say, so an -update cannot bless a wrong
	// result silently.
	tests := []struct {
		file     string
		check    func(g parsed) bool
		describe string
	}{
		{"claude/success", func(g parsed) bool {
			return g.Result.Reply == "Fixed the off-by-one in x.go; `go test ./...` passes." && !g.Result.Failed &&
				*g.Result.Usage == delegate.Usage{InputTokens: 10500, OutputTokens: 450} && g.Result.CLISession == "0b6f3a52-5d7e-4a43-9a39-2f6f1f3f1a11"
		}, "reply, usage with cache tokens, session"},
		{"claude/failure", func(g parsed) bool {
			return g.Result.Failed && g.Kind == delegate.ErrorUnavailable && g.Result.Reply == ""
		}, "529 is unavailable"},
		{"claude/signout", func(g parsed) bool { return g.Result.Failed && g.Kind == delegate.ErrorSignedOut }, "signed out"},
		{"claude/refusal", func(g parsed) bool { return g.Result.Declined && !g.Result.Failed && g.Result.Reply != "" }, "declined"},
		{"claude/errors", func(g parsed) bool {
			return g.Result.Failed && strings.Contains(g.Result.Error, "maximum number of turns") && g.Kind == delegate.ErrorNone
		}, "error_max_turns"},
		{"claude/cut", func(g parsed) bool { return g.Result.Failed && strings.Contains(g.Result.Error, "without a result") }, "no result event"},
		{"claude/oversized", func(g parsed) bool { return g.Result.Reply == "done after a huge event" && g.Result.SkippedLines == 1 }, "oversized skipped"},
		{"claude/nojson", func(g parsed) bool {
			return !g.Result.Structured && strings.HasPrefix(g.Result.Reply, "Error: unknown option")
		}, "text fallback"},
		{"codex/success", func(g parsed) bool {
			return g.Result.Reply == "Updated main.go; tests pass." && *g.Result.Usage == delegate.Usage{InputTokens: 11257, OutputTokens: 5} &&
				g.Result.CLISession == "0199a213-81c0-7800-8aa1-bbab2a035a53" && !g.Result.Failed
		}, "last agent_message"},
		{"codex/failure", func(g parsed) bool { return g.Result.Failed && g.Kind == delegate.ErrorUnavailable }, "429"},
		{"codex/signout", func(g parsed) bool { return g.Result.Failed && g.Kind == delegate.ErrorSignedOut }, "401 missing auth"},
		{"codex/retried", func(g parsed) bool { return !g.Result.Failed && g.Result.Reply == "Done despite a retry." }, "retried error then success"},
		{"codex/noreply", func(g parsed) bool { return !g.Result.HasReply() && !g.Result.Failed }, "no reply"},
		{"codex/oversized", func(g parsed) bool { return g.Result.Reply == "after the big line" && g.Result.SkippedLines == 1 }, "oversized skipped"},
		{"pi/success", func(g parsed) bool {
			return g.Result.Reply == "All done." && *g.Result.Usage == delegate.Usage{InputTokens: 360, OutputTokens: 50} &&
				g.Result.CLISession == "7f2c9a10-1111-4222-8333-444455556666"
		}, "last assistant message_end, summed usage"},
		{"pi/failure", func(g parsed) bool { return g.Result.Failed && g.Kind == delegate.ErrorUnavailable }, "503"},
		{"pi/signout", func(g parsed) bool { return g.Result.Failed && g.Kind == delegate.ErrorSignedOut }, "no API key"},
		{"pi/oversized", func(g parsed) bool { return g.Result.Reply == "survived" && g.Result.SkippedLines == 1 }, "oversized skipped"},
		{"text/success", func(g parsed) bool { return strings.HasSuffix(g.Result.Reply, "The answer is 42.") }, "text reply"},
		{"text/failure", func(g parsed) bool { return strings.Contains(g.Result.ClosingOutput, "MISSING_CREDENTIAL") }, "closing output"},
	}
	for _, tc := range tests {
		format := formats[filepath.Dir(tc.file)]
		g := parse(format, loadFixture(t, "testdata/"+tc.file+".jsonl"), 0, 0)
		if !tc.check(g) {
			b, _ := json.MarshalIndent(g, "", "  ")
			t.Errorf("%s: want %s; got\n%s", tc.file, tc.describe, b)
		}
	}
	if Classify("Error: MISSING_CREDENTIAL: no DeepSeek API key configured") != delegate.ErrorSignedOut {
		t.Error("dsh's MISSING_CREDENTIAL is not signed out")
	}
}

func TestProgressNeverShowsOutput(t *testing.T) {
	t.Parallel()
	for format, dir := range map[adapters.Format]string{adapters.FormatStreamJSON: "claude", adapters.FormatCodexJSON: "codex", adapters.FormatPiJSON: "pi"} {
		g := parse(format, loadFixture(t, "testdata/"+dir+"/success.jsonl"), 0, 0)
		if len(g.Progress) == 0 {
			t.Errorf("%s: no progress", dir)
		}
		for _, l := range g.Progress {
			for _, bad := range []string{"secret", "OUTPUT NEVER", "FAIL", "sk-abc", "ghp_", "abcdef123456", "utm_source", "private", "/home/u"} {
				if strings.Contains(l, bad) {
					t.Errorf("%s: progress line %q shows %q", dir, l, bad)
				}
			}
		}
	}
}

func TestReplyBound(t *testing.T) {
	t.Parallel()
	reply := strings.Repeat("é", 100) // 200 bytes
	ev, _ := json.Marshal(map[string]any{"type": "result", "subtype": "success", "result": reply})
	for _, limit := range []int{1, 2, 3, 51, 199, 200, 201} {
		g := parse(adapters.FormatStreamJSON, append(ev, '\n'), 0, limit)
		r := g.Result
		if len(r.Reply) > limit || !utf8.ValidString(r.Reply) || r.Truncated != (limit < 200) || !strings.HasPrefix(reply, r.Reply) {
			t.Errorf("limit %d: reply %d bytes %q, truncated %v", limit, len(r.Reply), r.Reply, r.Truncated)
		}
	}
	// Plain text too, fed byte by byte so a character is split between
	// writes.
	for _, limit := range []int{1, 3, 51, 200, 300} {
		g := parse(adapters.FormatText, []byte(reply+"\n"), 1, limit)
		r := g.Result
		if len(r.Reply) > limit || !utf8.ValidString(r.Reply) || r.Truncated != (limit < 200) || !strings.HasPrefix(reply, r.Reply) {
			t.Errorf("text limit %d: reply %d bytes %q, truncated %v", limit, len(r.Reply), r.Reply, r.Truncated)
		}
	}
}

func TestOversizedLineMemory(t *testing.T) {
	t.Parallel()
	// A 64 MiB line fed in pipe-sized writes is never buffered whole.
	p := New(adapters.FormatStreamJSON, Options{})
	chunk := bytes.Repeat([]byte("y"), 64<<10)
	_, _ = p.Write([]byte(`{"type":"assistant","message":"`))
	for range 1024 {
		_, _ = p.Write(chunk)
		if cap(p.buf) > 2*MaxLine {
			t.Fatalf("line buffer grew to %d", cap(p.buf))
		}
	}
	_, _ = p.Write([]byte("\"}\n" + `{"type":"result","result":"ok","subtype":"success"}` + "\n"))
	r := p.Close()
	if r.Reply != "ok" || r.SkippedLines != 1 {
		t.Fatalf("result %+v", r)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"$ go test ./...", "$ go test ./..."},
		{"$ curl -H 'Authorization: Bearer abc.def-123456' x", "$ curl -H 'Authorization: Bearer …' x"},
		{"$ OPENAI_API_KEY=sk-live123456789 make", "$ OPENAI_API_KEY=… make"},
		{"$ export GITHUB_TOKEN=abc123", "$ export GITHUB_TOKEN=… "},
		{"$ mysql --password hunter2 db", "$ mysql --password … db"},
		{"$ tool --api-key=xyz789 run", "$ tool --api-key=… run"},
		{"$ echo ghp_abcdefghijklmnop1234", "$ echo …"},
		{"$ aws s3 ls # AKIAABCDEFGHIJKLMNOP", "$ aws s3 ls # …"},
		{"$ echo xoxb-1234567890-abcdef", "$ echo …"},
		{"$ echo glpat-abcdefghij12345", "$ echo …"},
		{"fetch https://example.com/a/b?token=1&x=2#frag", "fetch https://example.com/a/b"},
		{"$ git clone https://user:pw@github.com/o/r", "$ git clone https://…@github.com/o/r"},
		{"Read /home/u/work/proj/main.go", "Read …/proj/main.go"},
		{"edit src/main.go", "edit src/main.go"},
		{"$ cat '/etc/ssl/certs/ca.pem'", "$ cat '…/certs/ca.pem'"},
		{"first line\nsecond line", "first line …"},
		{"  \n", ""},
		{"author=bob keyboard=us", "author=bob keyboard=us"},
		{"$ SECRET_VALUE=$OTHER run", "$ SECRET_VALUE=$OTHER run"},
		{strings.Repeat("a", 300), strings.Repeat("a", MaxProgress-len("…")) + "…"},
	}
	for _, tc := range tests {
		if got := Redact(tc.in); got != strings.TrimRight(tc.want, " ") {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want delegate.ErrorKind
	}{
		{"", delegate.ErrorNone},
		{"tests failed: 3 failures", delegate.ErrorNone},
		{"cwd /x does not exist", delegate.ErrorNone},
		{"Not logged in · Please run /login", delegate.ErrorSignedOut},
		{"Invalid API key · Please run /login", delegate.ErrorSignedOut},
		{"MISSING_CREDENTIAL", delegate.ErrorSignedOut},
		{"authentication_error: invalid x-api-key", delegate.ErrorSignedOut},
		{"OAuth token has expired", delegate.ErrorSignedOut},
		{"API Error: 500 Internal Server Error", delegate.ErrorUnavailable},
		{"unexpected status 403 Forbidden", delegate.ErrorUnavailable},
		{"status 404: model gpt-9 not found", delegate.ErrorUnavailable},
		{"429 Too Many Requests", delegate.ErrorUnavailable},
		{"You exceeded your current quota", delegate.ErrorUnavailable},
		{"Your credit balance is too low", delegate.ErrorUnavailable},
		{"The model `gpt-9` does not exist or you do not have access to it.", delegate.ErrorUnavailable},
		{"There's an issue with the selected model (opus-9). It may not exist or you may not have access to it.", delegate.ErrorUnavailable},
		{"The 'gpt-9' model is not supported when using Codex with a ChatGPT account.", delegate.ErrorUnavailable},
		{"the file does not exist", delegate.ErrorNone},
		{"model_not_found", delegate.ErrorUnavailable},
		{"unknown model 'x'", delegate.ErrorUnavailable},
		{"Overloaded", delegate.ErrorUnavailable},
		{"HTTP 502 Bad Gateway", delegate.ErrorUnavailable},
		{"line 404 of main.go is wrong", delegate.ErrorNone},
	}
	for _, tc := range tests {
		if got := Classify(tc.in); got != tc.want {
			t.Errorf("Classify(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	var tl Tail
	tl.Max = 10
	for _, s := range []string{"abc", "defgh", "ijklmnop", "q"} {
		_, _ = tl.Write([]byte(s))
	}
	if got := string(tl.Bytes()); got != "hijklmnopq" || tl.Total() != 17 {
		t.Errorf("tail %q total %d", got, tl.Total())
	}
	_, _ = tl.Write([]byte(strings.Repeat("z", 25)))
	if got := string(tl.Bytes()); got != strings.Repeat("z", 10) {
		t.Errorf("tail %q", got)
	}
	var u Tail
	u.Max = 5
	_, _ = u.Write([]byte("aé€")) // 1+2+3 bytes: the tail starts inside é
	if got := u.String(); got != "€" && got != "é€" {
		t.Errorf("utf-8 tail %q", got)
	}
	var short Tail
	_, _ = short.Write([]byte("ok"))
	if short.String() != "ok" {
		t.Errorf("short tail %q", short.String())
	}
}

func TestBoundAndShortPath(t *testing.T) {
	t.Parallel()
	if s, cut := Bound("héllo", 2); s != "h" || !cut {
		t.Errorf("Bound = %q %v", s, cut)
	}
	if s, cut := Bound("abc", 3); s != "abc" || cut {
		t.Errorf("Bound = %q %v", s, cut)
	}
	if s := ShortPath("/a/b/c"); s != "…/b/c" {
		t.Errorf("ShortPath = %q", s)
	}
}

func fuzzFormat(f *testing.F, format adapters.Format, dir string) {
	files, _ := filepath.Glob("testdata/" + dir + "/*.jsonl")
	for _, file := range files {
		data, _ := os.ReadFile(file)
		f.Add(data, 5)
	}
	f.Add([]byte("{\"type\":\"result\"\n{"), 1)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		if n <= 0 || n > 1<<16 {
			n = 1 << 16
		}
		var lines []string
		p := New(format, Options{Limit: 100, Progress: func(l string) { lines = append(lines, l) }})
		for d := data; len(d) > 0; {
			k := min(n, len(d))
			_, _ = p.Write(d[:k])
			d = d[k:]
		}
		r := p.Close()
		if len(r.Reply) > 100 || !utf8.ValidString(r.Reply) {
			t.Fatalf("reply %q", r.Reply)
		}
		if len(r.Error) > closingBytes+3 || len(r.ClosingOutput) > closingBytes {
			t.Fatalf("error %d bytes, closing %d", len(r.Error), len(r.ClosingOutput))
		}
		for _, l := range lines {
			if len(l) > MaxProgress+3 || strings.Contains(l, "\n") || !utf8.ValidString(l) {
				t.Fatalf("progress line %q", l)
			}
		}
		_ = Classify(r.Error)
	})
}

func FuzzClaude(f *testing.F) { fuzzFormat(f, adapters.FormatStreamJSON, "claude") }
func FuzzCodex(f *testing.F)  { fuzzFormat(f, adapters.FormatCodexJSON, "codex") }
func FuzzPi(f *testing.F)     { fuzzFormat(f, adapters.FormatPiJSON, "pi") }
func FuzzText(f *testing.F)   { fuzzFormat(f, adapters.FormatText, "text") }

func FuzzRedact(f *testing.F) {
	f.Add("$ TOKEN=abc curl https://x/y?z=1 /a/b/c/d")
	f.Fuzz(func(t *testing.T, s string) {
		out := Redact(s)
		if len(out) > MaxProgress+3 || strings.Contains(out, "\n") || !utf8.ValidString(out) {
			t.Fatalf("Redact(%q) = %q", s, out)
		}
	})
}

func FuzzTail(f *testing.F) {
	f.Add([]byte("hello world, a tail"), 7, 3)
	f.Fuzz(func(t *testing.T, data []byte, max, chunk int) {
		if max <= 0 || max > 4096 {
			max = 16
		}
		if chunk <= 0 {
			chunk = 1
		}
		tl := Tail{Max: max}
		for d := data; len(d) > 0; {
			k := min(chunk, len(d))
			_, _ = tl.Write(d[:k])
			d = d[k:]
		}
		want := data
		if len(want) > max {
			want = want[len(want)-max:]
		}
		if got := tl.Bytes(); !bytes.Equal(got, want) || tl.Total() != int64(len(data)) {
			t.Fatalf("tail %q, want %q", got, want)
		}
		if s := tl.String(); !utf8.ValidString(s) || len(s) > 3*max {
			t.Fatalf("string %q", s)
		}
	})
}

// TestSearchToolsShowOnlyTheirName: the spec's progress lines name other
// tools by name only; a search pattern (which may be a secret someone
// greps for) is not shown.
func TestSearchToolsShowOnlyTheirName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ got, want string }{
		{claudeToolLine("Grep", gjson.Parse(`{"pattern":"sk-live-0123456789"}`)), "Grep"},
		{claudeToolLine("Glob", gjson.Parse(`{"pattern":"**/*.go"}`)), "Glob"},
		{piToolLine("grep", gjson.Parse(`{"pattern":"password=hunter2"}`)), "grep"},
	} {
		if tc.got != tc.want {
			t.Errorf("progress line %q, want %q", tc.got, tc.want)
		}
	}
}
