package edit

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/toolstest"
	"github.com/scv-cli/scv/scv-server/internal/tools/workspace"
	"github.com/scv-cli/scv/shared/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newEnv(t testing.TB, files map[string]string) tools.Env {
	t.Helper()
	return toolstest.Env(t, files)
}

func argsJSON(t testing.TB, a map[string]any) json.RawMessage {
	t.Helper()
	return toolstest.Args(t, a)
}

// run prepares and runs one call; a Prepare refusal is a failed result
// whose output starts with "refused: ".
func run(t testing.TB, env tools.Env, a map[string]any) tools.Result {
	t.Helper()
	plan, err := New().Prepare(env, argsJSON(t, a))
	if err != nil {
		return tools.Failed("refused: " + err.Error())
	}
	if plan.Risk != protocol.RiskFilesystem {
		t.Fatalf("Risk = %q", plan.Risk)
	}
	res, err := plan.Run(context.Background())
	if err != nil {
		t.Fatalf("Run(%v): %v", a, err)
	}
	return res
}

func read(t testing.TB, env tools.Env, name string) string {
	t.Helper()
	return toolstest.ReadFile(t, env, name)
}

func sha(s string) string { return workspace.SHA256([]byte(s)) }

func TestEdit(t *testing.T) {
	const code = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"
	tests := []struct {
		name    string
		content string
		args    map[string]any
		want    string // the file afterwards; a refusal or failure leaves it
		ok      bool
		wantHas []string
	}{
		{
			name: "exactly once", content: code,
			args: map[string]any{"old_string": `println("hi")`, "new_string": `println("hello")`},
			want: strings.Replace(code, "hi", "hello", 1), ok: true,
			wantHas: []string{"Edited f.go: 1 replacement, +1 -1 lines", "sha256 " + sha(strings.Replace(code, "hi", "hello", 1)), "-\tprintln(\"hi\")", "+\tprintln(\"hello\")"},
		},
		{
			name: "zero matches", content: code,
			args:    map[string]any{"old_string": "fmt.Println", "new_string": "x"},
			wantHas: []string{"refused", "not found in f.go (0 matches)", "whitespace, indentation"},
		},
		{
			name: "zero matches, but one ignoring indentation", content: code,
			args:    map[string]any{"old_string": "func main() {\n    println(\"hi\")\n}", "new_string": "x"},
			wantHas: []string{"0 matches", "except for whitespace or indentation is at line 3"},
		},
		{
			name: "zero matches, escaped newlines", content: code,
			args:    map[string]any{"old_string": `func main() {\n\tprintln`, "new_string": "x"},
			wantHas: []string{"0 matches", "backslash escapes"},
		},
		{
			name: "two matches", content: "x := 1\ny := 2\nx := 1\n",
			args:    map[string]any{"old_string": "x := 1", "new_string": "x := 3"},
			wantHas: []string{"refused", "occurs 2 times in f.go (at lines 1, 3)", "replace_all"},
		},
		{
			name: "overlapping matches count", content: "aaa\n",
			args:    map[string]any{"old_string": "aa", "new_string": "b"},
			wantHas: []string{"occurs 2 times"},
		},
		{
			name: "many matches list a few lines", content: strings.Repeat("dup\n", 9),
			args:    map[string]any{"old_string": "dup", "new_string": "x"},
			wantHas: []string{"occurs 9 times", "(at lines 1, 2, 3, 4, 5, …)"},
		},
		{
			name: "replace all", content: "a1 b a2 b\nb\n",
			args: map[string]any{"old_string": "b", "new_string": "B", "replace_all": true},
			want: "a1 B a2 B\nB\n", ok: true, wantHas: []string{"3 replacements", "+2 -2 lines"},
		},
		{
			name: "replace all does not overlap", content: "aaaa",
			args: map[string]any{"old_string": "aa", "new_string": "b", "replace_all": true},
			want: "bb", ok: true, wantHas: []string{"2 replacements"},
		},
		{
			name: "replace all with one match", content: code,
			args: map[string]any{"old_string": "main()", "new_string": "run()", "replace_all": true},
			want: strings.Replace(code, "main()", "run()", 1), ok: true, wantHas: []string{"1 replacement,"},
		},
		{
			name: "replace all with zero matches", content: code,
			args:    map[string]any{"old_string": "nope", "new_string": "x", "replace_all": true},
			wantHas: []string{"0 matches"},
		},
		{
			name: "multi-byte text", content: "héllo wörld\n世界 🌍 ok\n",
			args: map[string]any{"old_string": "世界 🌍", "new_string": "мир 🌏"},
			want: "héllo wörld\nмир 🌏 ok\n", ok: true, wantHas: []string{"-世界 🌍 ok", "+мир 🌏 ok"},
		},
		{
			name: "multi-byte overlap is at characters", content: "ééé",
			args:    map[string]any{"old_string": "éé", "new_string": "e"},
			wantHas: []string{"occurs 2 times"},
		},
		{
			name: "CRLF file stays CRLF", content: "one\r\ntwo\r\nthree\r\n",
			args: map[string]any{"old_string": "one\ntwo\n", "new_string": "1\n2\n2.5\n"},
			want: "1\r\n2\r\n2.5\r\nthree\r\n", ok: true, wantHas: []string{"CRLF", "+3 -2 lines"},
		},
		{
			name: "CRLF file edited with CRLF strings", content: "one\r\ntwo\r\n",
			args: map[string]any{"old_string": "two\r\n", "new_string": "2\r\n"},
			want: "one\r\n2\r\n", ok: true,
		},
		{
			name: "CRLF file, single-line edit", content: "a = 1\r\nb = 2\r\n",
			args: map[string]any{"old_string": "b = 2", "new_string": "b = 3"},
			want: "a = 1\r\nb = 3\r\n", ok: true,
		},
		{
			name: "mixed line endings match exactly", content: "a\r\nb\nc\r\n",
			args: map[string]any{"old_string": "b\nc", "new_string": "B\nC"},
			want: "a\r\nB\nC\r\n", ok: true,
		},
		{
			name: "empty new_string deletes", content: "keep\ndrop me\nkeep\n",
			args: map[string]any{"old_string": "drop me\n", "new_string": ""},
			want: "keep\nkeep\n", ok: true, wantHas: []string{"+0 -1 lines", "-drop me"},
		},
		{
			name: "delete everything", content: "all",
			args: map[string]any{"old_string": "all", "new_string": ""},
			want: "", ok: true, wantHas: []string{"+0 -1 lines", `\ No newline at end of file`},
		},
		{
			name: "same strings", content: code,
			args:    map[string]any{"old_string": "main", "new_string": "main"},
			wantHas: []string{"refused", "the same"},
		},
		{
			name: "empty old_string", content: code,
			args:    map[string]any{"old_string": "", "new_string": "x"},
			wantHas: []string{"refused", "old_string is empty"},
		},
		{
			name: "missing new_string", content: code,
			args:    map[string]any{"old_string": "main"},
			wantHas: []string{"refused", "new_string is missing"},
		},
		{
			name: "expected hash matches", content: code,
			args: map[string]any{"old_string": "hi", "new_string": "yo", "expected_sha256": sha(code)},
			want: strings.Replace(code, "hi", "yo", 1), ok: true,
		},
		{
			name: "stale hash", content: code,
			args:    map[string]any{"old_string": "hi", "new_string": "yo", "expected_sha256": sha("other")},
			wantHas: []string{"refused", "f.go has changed", "current sha256 is " + sha(code)},
		},
		{
			name: "bad hash shape", content: code,
			args:    map[string]any{"old_string": "hi", "new_string": "yo", "expected_sha256": "HI"},
			wantHas: []string{"refused", "not a sha256"},
		},
		{
			name: "not UTF-8", content: "ok\xff\xfe\n",
			args:    map[string]any{"old_string": "ok", "new_string": "no"},
			wantHas: []string{"refused", "not valid UTF-8", "position 2"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, map[string]string{"f.go": tc.content})
			a := map[string]any{"path": "f.go"}
			for k, v := range tc.args {
				a[k] = v
			}
			res := run(t, env, a)
			if res.Success != tc.ok {
				t.Fatalf("Success = %v: %s", res.Success, res.Output)
			}
			for _, w := range tc.wantHas {
				if !strings.Contains(res.Output, w) {
					t.Errorf("output %q does not contain %q", res.Output, w)
				}
			}
			want := tc.want
			if !tc.ok {
				want = tc.content
			}
			if got := read(t, env, "f.go"); got != want {
				t.Fatalf("f.go holds %q, want %q", got, want)
			}
		})
	}
}

func TestEditPaths(t *testing.T) {
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "s.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, map[string]string{"real.txt": "alpha beta", "dir/": ""})
	for _, l := range [][2]string{{"in", "real.txt"}, {"out", filepath.Join(outside, "s.txt")}, {"outdir", outside}} {
		if err := os.Symlink(l[1], filepath.Join(env.Workspace, l[0])); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ path, wantHas string }{
		{"missing.txt", "does not exist"},
		{"dir", "is a directory"},
		{".", "directory"},
		{"../x", "leaves the workspace"},
		{"/etc/passwd", "outside the workspace"},
		{"a\x00b", "not a valid UTF-8 path"},
		{"out", "leads outside the workspace"},
		{"outdir/s.txt", "leads outside the workspace"},
	}
	for _, tc := range tests {
		res := run(t, env, map[string]any{"path": tc.path, "old_string": "secret", "new_string": "x"})
		if res.Success || !strings.Contains(res.Output, tc.wantHas) {
			t.Errorf("%q: %+v, want a failure with %q", tc.path, res, tc.wantHas)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "s.txt")); string(b) != "secret" {
		t.Fatalf("the outside file holds %q", b)
	}
	res := run(t, env, map[string]any{"path": "in", "old_string": "beta", "new_string": "gamma"})
	if !res.Success || read(t, env, "real.txt") != "alpha gamma" || !strings.Contains(res.Output, "the file written is real.txt") {
		t.Fatalf("edit through an inside link: %+v", res)
	}
	if fi, err := os.Lstat(filepath.Join(env.Workspace, "in")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the link was replaced by a file")
	}
}

func TestEditKeepsTheMode(t *testing.T) {
	for _, mode := range []fs.FileMode{0o600, 0o666, 0o755, 0o444} {
		env := newEnv(t, map[string]string{"f": "a b"})
		p := filepath.Join(env.Workspace, "f")
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		if res := run(t, env, map[string]any{"path": "f", "old_string": "a", "new_string": "c"}); !res.Success {
			t.Fatal(res.Output)
		}
		if fi, _ := os.Stat(p); fi.Mode() != mode || read(t, env, "f") != "c b" {
			t.Fatalf("mode %v content %q, want %v", fi.Mode(), read(t, env, "f"), mode)
		}
	}
}

func TestSummary(t *testing.T) {
	env := newEnv(t, map[string]string{"f.go": "a\nb\na\n"})
	plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": "f.go", "old_string": "a\n", "new_string": "x\ny\n", "replace_all": true}))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Edit f.go (2 replacements, +4 -2 lines)"; plan.Summary != want || plan.Risk != protocol.RiskFilesystem {
		t.Fatalf("summary %q risk %q, want %q", plan.Summary, plan.Risk, want)
	}
}

func TestFileChangesBetweenPrepareAndRun(t *testing.T) {
	env := newEnv(t, map[string]string{"f": "one two three"})
	prepare := func(a map[string]any) *tools.Plan {
		t.Helper()
		a["path"] = "f"
		plan, err := New().Prepare(env, argsJSON(t, a))
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(env.Workspace, "f"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Without a hash, the edit is redone on the new content.
	plan := prepare(map[string]any{"old_string": "two", "new_string": "2"})
	write("zero one two three")
	if res, _ := plan.Run(context.Background()); !res.Success || read(t, env, "f") != "zero one 2 three" {
		t.Fatalf("%+v, file %q", res, read(t, env, "f"))
	}
	// ...and fails if old_string is gone.
	plan = prepare(map[string]any{"old_string": "three", "new_string": "3"})
	write("four")
	if res, _ := plan.Run(context.Background()); res.Success || !strings.Contains(res.Output, "0 matches") {
		t.Fatalf("%+v", res)
	}
	// With a hash, any change is stale.
	plan = prepare(map[string]any{"old_string": "four", "new_string": "4", "expected_sha256": sha("four")})
	write("four ")
	if res, _ := plan.Run(context.Background()); res.Success || !strings.Contains(res.Output, "current sha256 is "+sha("four ")) || read(t, env, "f") != "four " {
		t.Fatalf("%+v", res)
	}
}

func TestDiffExcerpt(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	text := b.String()
	t.Run("exact", func(t *testing.T) {
		env := newEnv(t, map[string]string{"f.txt": text})
		res := run(t, env, map[string]any{"path": "f.txt", "old_string": "line 10\n", "new_string": "line ten\nline ten and a half\n"})
		want := "--- a/f.txt\n+++ b/f.txt\n@@ -7,7 +7,8 @@\n line 7\n line 8\n line 9\n-line 10\n+line ten\n+line ten and a half\n line 11\n line 12\n line 13\n"
		if !res.Success || res.Truncated || !strings.HasSuffix(res.Output, "\n"+want) {
			t.Fatalf("output:\n%s\nwant the diff\n%s", res.Output, want)
		}
	})
	t.Run("bounded in lines", func(t *testing.T) {
		env := newEnv(t, map[string]string{"f.txt": strings.Repeat(text, 50)})
		res := run(t, env, map[string]any{"path": "f.txt", "old_string": "line", "new_string": "LINE", "replace_all": true})
		if !res.Success || !res.Truncated || !strings.Contains(res.Output, "1000 replacements, +1000 -1000 lines") || !strings.Contains(res.Output, "diff excerpt truncated") {
			t.Fatalf("output:\n%s", res.Output)
		}
		if n := strings.Count(res.Output, "\n"); n > excerptLines+2 {
			t.Fatalf("%d lines of output, want at most %d", n, excerptLines+2)
		}
		if len(res.Output) > excerptBytes+512 {
			t.Fatalf("%d bytes of output", len(res.Output))
		}
	})
	t.Run("bounded in bytes and by the output limit", func(t *testing.T) {
		long := strings.Repeat("x", 5000) + "\n"
		env := newEnv(t, map[string]string{"f.txt": strings.Repeat(long, 30)})
		env.OutputLimit = 1024
		res := run(t, env, map[string]any{"path": "f.txt", "old_string": "x", "new_string": "y", "replace_all": true})
		if !res.Success || !res.Truncated || len(res.Output) > env.OutputLimit {
			t.Fatalf("Success %v Truncated %v, %d bytes of output:\n%s", res.Success, res.Truncated, len(res.Output), res.Output)
		}
		if !strings.Contains(res.Output, "more bytes]") {
			t.Fatalf("long lines are not clipped:\n%s", res.Output)
		}
	})
}

// TestLineDiffIsExact checks the diff computed around the replaced places
// against random files and edits: it turns the old lines into the new.
func TestLineDiffIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"a", "b", "\n", "ab", "\r\n", "é"}
	gen := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for i := 0; i < 5000; i++ {
		text := gen(r.IntN(40))
		if text == "" {
			continue
		}
		start := r.IntN(len(text))
		for start > 0 && !strings.HasPrefix(text[start:], string([]rune(text[start:])[:1])) {
			start--
		}
		old := text[start : start+1+r.IntN(min(6, len(text)-start))]
		if !utfValid(old) {
			continue
		}
		new := gen(r.IntN(5))
		if new == old {
			continue
		}
		pos := findAll(text, old, false)
		out := strings.ReplaceAll(text, old, new)
		a, b, changes := lineDiff(text, out, pos, len(old), len(new))
		if got := applyChanges(a, b, changes); strings.Join(got, "") != out {
			t.Fatalf("text %q, %q → %q: changes %+v give %q, want %q", text, old, new, changes, strings.Join(got, ""), out)
		}
		if strings.Join(a, "") != text || !reflect.DeepEqual(b, workspace.SplitLines(out)) {
			t.Fatal("lines do not match the texts")
		}
	}
}

func utfValid(s string) bool { return strings.ToValidUTF8(s, "\x00") == s }

func applyChanges(a, b []string, changes []workspace.Change) []string {
	var out []string
	at := 0
	for _, c := range changes {
		out = append(out, a[at:c.A]...)
		out = append(out, b[c.B:c.B+c.Ins]...)
		at = c.A + c.Del
	}
	return append(out, a[at:]...)
}

func TestRunCancelled(t *testing.T) {
	env := newEnv(t, map[string]string{"f": "a"})
	plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": "f", "old_string": "a", "new_string": "b"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := plan.Run(ctx); err == nil || read(t, env, "f") != "a" {
		t.Fatal("a cancelled call ran")
	}
}

func TestSpec(t *testing.T) {
	spec := New().Spec()
	if spec.Name != "edit" || spec.Description == "" || spec.Description != strings.TrimSpace(spec.Description) || !json.Valid(spec.Schema) {
		t.Fatalf("spec = %+v", spec)
	}
	reg := tools.NewRegistry()
	if err := reg.Register(New()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    string
		wantHas []string
	}{
		{"minimal", `{"path":"f","old_string":"a","new_string":""}`, nil},
		{"all fields", `{"path":"f","old_string":"a","new_string":"b","replace_all":true,"expected_sha256":"` + sha("a") + `"}`, nil},
		{"empty old_string", `{"path":"f","old_string":"","new_string":"b"}`, []string{"old_string", "minLength"}},
		{"missing new_string", `{"path":"f","old_string":"a"}`, []string{"missing", "new_string"}},
		{"replace_all not a boolean", `{"path":"f","old_string":"a","new_string":"b","replace_all":"yes"}`, []string{"replace_all", "boolean"}},
		{"hash shape", `{"path":"f","old_string":"a","new_string":"b","expected_sha256":"123"}`, []string{"expected_sha256"}},
		{"extra", `{"path":"f","old_string":"a","new_string":"b","line":3}`, []string{"additional", "line"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := reg.Validate("edit", tc.args)
			if len(tc.wantHas) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if _, err := New().Prepare(newEnv(t, map[string]string{"f": "a"}), raw); err != nil {
					t.Fatalf("Prepare of validated args: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%s) succeeded", tc.args)
			}
			for _, w := range tc.wantHas {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func BenchmarkEdit1MiB(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, "line %06d: the quick brown fox jumps over the lazy dog, again.\n", i)
	}
	text := sb.String()
	env := newEnv(b, map[string]string{"f.txt": text})
	args := []json.RawMessage{
		argsJSON(b, map[string]any{"path": "f.txt", "old_string": "line 008000: the quick", "new_string": "line 008000: a slow"}),
		argsJSON(b, map[string]any{"path": "f.txt", "old_string": "line 008000: a slow", "new_string": "line 008000: the quick"}),
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		plan, err := New().Prepare(env, args[i%2])
		if err != nil {
			b.Fatal(err)
		}
		if res, err := plan.Run(context.Background()); err != nil || !res.Success {
			b.Fatal(res.Output, err)
		}
	}
}

// TestLargeFileRefusedBySize: a 10 GiB (sparse) file is refused by its
// size before anything reads or hashes it (issue 14, item 4).
func TestLargeFileRefusedBySize(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	p := filepath.Join(env.Workspace, "huge.txt")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 10<<30); err != nil {
		t.Fatal(err)
	}
	res := run(t, env, map[string]any{"path": "huge.txt", "old_string": "a", "new_string": "b"})
	if res.Success || !strings.Contains(res.Output, "10737418240 bytes, more than edit handles") {
		t.Fatalf("edit of a huge file: %+v", res)
	}
}
