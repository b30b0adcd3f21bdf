package read

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/toolstest"
	"github.com/scv-cli/scv/shared/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newEnv makes a temporary workspace holding files (name → content; a name
// ending in "/" is a directory) and returns its Env.
func newEnv(t testing.TB, outputLimit int, files map[string]string) tools.Env {
	t.Helper()
	env := toolstest.Env(t, files)
	env.OutputLimit = outputLimit
	return env
}

func argsJSON(t *testing.T, a map[string]any) json.RawMessage {
	t.Helper()
	return toolstest.Args(t, a)
}

var sha256Field = regexp.MustCompile(`, sha256 [0-9a-f]{64}`)

// runRead prepares and runs one call, failing the test if Prepare refuses
// or Run errors, and guarding against a hang.
func runRead(t *testing.T, env tools.Env, a map[string]any) tools.Result {
	t.Helper()
	plan, err := New().Prepare(env, argsJSON(t, a))
	if err != nil {
		t.Fatalf("Prepare(%v): %v", a, err)
	}
	type out struct {
		res tools.Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := plan.Run(context.Background())
		ch <- out{res, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			t.Fatalf("Run(%v): %v", a, o.err)
		}
		// The digest is checked by TestReadReportsSHA256; the other tests
		// compare the rest of the header.
		o.res.Output = sha256Field.ReplaceAllString(o.res.Output, "")
		return o.res
	case <-time.After(10 * time.Second):
		t.Fatalf("Run(%v) did not return", a)
		return tools.Result{}
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	digits := "0123456789"
	tests := []struct {
		name        string
		outputLimit int
		content     string
		args        map[string]any
		want        string
		truncated   bool
	}{
		{
			name: "whole small file", outputLimit: 1024, content: "hello\nworld\n",
			args: map[string]any{"path": "f.txt"},
			want: "[f.txt: 12 bytes; bytes 0-12]\nhello\nworld\n",
		},
		{
			name: "empty file", outputLimit: 1024, content: "",
			args: map[string]any{"path": "f.txt"},
			want: "[f.txt: 0 bytes; bytes 0-0]\n",
		},
		{
			name: "offset and limit select a range", outputLimit: 1024, content: digits,
			args:      map[string]any{"path": "f.txt", "offset": 2, "limit": 3},
			want:      "[f.txt: 10 bytes; bytes 2-5 shown, truncated; read with offset 5 for the rest]\n234",
			truncated: true,
		},
		{
			name: "range reaching the end", outputLimit: 1024, content: digits,
			args: map[string]any{"path": "f.txt", "offset": 7, "limit": 3},
			want: "[f.txt: 10 bytes; bytes 7-10]\n789",
		},
		{
			name: "limit past the end", outputLimit: 1024, content: digits,
			args: map[string]any{"path": "f.txt", "offset": 8, "limit": 100},
			want: "[f.txt: 10 bytes; bytes 8-10]\n89",
		},
		{
			name: "offset only", outputLimit: 1024, content: digits,
			args: map[string]any{"path": "f.txt", "offset": 4},
			want: "[f.txt: 10 bytes; bytes 4-10]\n456789",
		},
		{
			name: "offset at the end", outputLimit: 1024, content: digits,
			args: map[string]any{"path": "f.txt", "offset": 10},
			want: "[f.txt: 10 bytes; bytes 10-10]\n",
		},
		{
			name: "limit larger than the output limit is capped", outputLimit: 4, content: digits,
			args:      map[string]any{"path": "f.txt", "limit": 1000},
			want:      "[f.txt: 10 bytes; bytes 0-4 shown, truncated; limit 1000 is above the output limit of 4 bytes (tools.output_limit_bytes), so at most 4 were read; read with offset 4 for the rest]\n0123",
			truncated: true,
		},
		{
			name: "limit equal to the output limit", outputLimit: 4, content: digits,
			args:      map[string]any{"path": "f.txt", "offset": 3, "limit": 4},
			want:      "[f.txt: 10 bytes; bytes 3-7 shown, truncated; read with offset 7 for the rest]\n3456",
			truncated: true,
		},
		{
			name: "default limit truncates", outputLimit: 6, content: digits,
			args:      map[string]any{"path": "f.txt"},
			want:      "[f.txt: 10 bytes; bytes 0-6 shown, truncated; read with offset 6 for the rest]\n012345",
			truncated: true,
		},
		{
			name: "default limit from an offset", outputLimit: 6, content: digits,
			args: map[string]any{"path": "f.txt", "offset": 6},
			want: "[f.txt: 10 bytes; bytes 6-10]\n6789",
		},
		{
			name: "file exactly the output limit", outputLimit: 10, content: digits,
			args: map[string]any{"path": "f.txt"},
			want: "[f.txt: 10 bytes; bytes 0-10]\n" + digits,
		},
		{
			// "é" is bytes 8-9: the default limit of 9 would cut it.
			name: "default limit backs off to a character boundary", outputLimit: 9, content: "abcdefghé!",
			args:      map[string]any{"path": "f.txt"},
			want:      "[f.txt: 11 bytes; bytes 0-8 shown, truncated; read with offset 8 for the rest]\nabcdefgh",
			truncated: true,
		},
		{
			// "€" is bytes 2-4: a cut after either of its first two bytes backs off.
			name: "default limit backs off inside a 3-byte character", outputLimit: 4, content: "ab€cd",
			args:      map[string]any{"path": "f.txt"},
			want:      "[f.txt: 7 bytes; bytes 0-2 shown, truncated; read with offset 2 for the rest]\nab",
			truncated: true,
		},
		{
			name: "default limit ending on a boundary keeps the character", outputLimit: 5, content: "ab€cd",
			args:      map[string]any{"path": "f.txt"},
			want:      "[f.txt: 7 bytes; bytes 0-5 shown, truncated; read with offset 5 for the rest]\nab€",
			truncated: true,
		},
		{
			// A capped limit is the output limit's cut, not the caller's.
			name: "capped limit backs off like the default", outputLimit: 9, content: "abcdefghé!",
			args:      map[string]any{"path": "f.txt", "limit": 1 << 20},
			want:      "[f.txt: 11 bytes; bytes 0-8 shown, truncated; limit 1048576 is above the output limit of 9 bytes (tools.output_limit_bytes), so at most 9 were read; read with offset 8 for the rest]\nabcdefgh",
			truncated: true,
		},
		{
			name: "multi-byte text whole", outputLimit: 1024, content: "héllo, 世界 🌍\n",
			args: map[string]any{"path": "f.txt"},
			want: fmt.Sprintf("[f.txt: %d bytes; bytes 0-%d]\nhéllo, 世界 🌍\n", len("héllo, 世界 🌍\n"), len("héllo, 世界 🌍\n")),
		},
		{
			name: "nested path", outputLimit: 1024, content: "x",
			args: map[string]any{"path": "./f.txt"},
			want: "[f.txt: 1 bytes; bytes 0-1]\nx",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, tc.outputLimit, map[string]string{"f.txt": tc.content})
			res := runRead(t, env, tc.args)
			if !res.Success {
				t.Fatalf("Success=false: %s", res.Output)
			}
			if res.Output != tc.want {
				t.Fatalf("Output =\n%q\nwant\n%q", res.Output, tc.want)
			}
			if res.Truncated != tc.truncated {
				t.Fatalf("Truncated = %v, want %v", res.Truncated, tc.truncated)
			}
		})
	}
}

func TestReadDefaultOutputLimit(t *testing.T) {
	t.Parallel()
	content := strings.Repeat("x", 70<<10)
	env := newEnv(t, 0, map[string]string{"big.txt": content})
	res := runRead(t, env, map[string]any{"path": "big.txt"})
	want := fmt.Sprintf("[big.txt: %d bytes; bytes 0-65536 shown, truncated; read with offset 65536 for the rest]\n", len(content))
	if !res.Success || !res.Truncated || !strings.HasPrefix(res.Output, want) {
		t.Fatalf("got Success=%v Truncated=%v header %q; want header %q", res.Success, res.Truncated, firstLine(res.Output), want)
	}
	if got := len(res.Output) - len(want); got != 65536 {
		t.Fatalf("content length %d, want 65536", got)
	}
}

// TestReadPagesReassemble follows the "read with offset N" hints with the
// default limit, for texts of 1- to 4-byte characters and many output
// limits: every page is valid UTF-8, no page exceeds the limit, and the
// pages put together are the file.
func TestReadPagesReassemble(t *testing.T) {
	t.Parallel()
	texts := map[string]string{
		"ascii":   strings.Repeat("abcdefg\n", 20),
		"2-byte":  strings.Repeat("aé", 30),
		"3-byte":  strings.Repeat("€x€€y", 12),
		"4-byte":  strings.Repeat("🌍a🌍🌍", 8),
		"mixed":   strings.Repeat("a é € 🌍 世界\n", 6),
		"only4":   strings.Repeat("🌍", 20),
		"newline": "\n" + strings.Repeat("日本語", 15) + "\n",
	}
	for name, text := range texts {
		for _, limit := range []int{4, 5, 6, 7, 9, 13, 64, 1000} {
			t.Run(fmt.Sprintf("%s/limit=%d", name, limit), func(t *testing.T) {
				env := newEnv(t, limit, map[string]string{"t.txt": text})
				var got strings.Builder
				offset := 0
				for pages := 0; ; pages++ {
					if pages > len(text) {
						t.Fatalf("no progress after %d pages at offset %d", pages, offset)
					}
					res := runRead(t, env, map[string]any{"path": "t.txt", "offset": offset})
					if !res.Success {
						t.Fatalf("page at offset %d failed: %s", offset, res.Output)
					}
					header, body, _ := strings.Cut(res.Output, "\n")
					if len(body) > limit {
						t.Fatalf("page at %d has %d bytes, over the limit %d", offset, len(body), limit)
					}
					if !utf8.ValidString(body) {
						t.Fatalf("page at %d is not valid UTF-8: %q", offset, body)
					}
					got.WriteString(body)
					if !res.Truncated {
						break
					}
					var next int
					i := strings.Index(header, "read with offset ")
					if i < 0 {
						t.Fatalf("truncated page without a next offset: %q", header)
					}
					if _, err := fmt.Sscanf(header[i:], "read with offset %d", &next); err != nil {
						t.Fatalf("header %q: %v", header, err)
					}
					if next != offset+len(body) {
						t.Fatalf("next offset %d, want %d", next, offset+len(body))
					}
					if next <= offset {
						t.Fatalf("next offset %d does not advance from %d", next, offset)
					}
					offset = next
				}
				if got.String() != text {
					t.Fatalf("pages reassemble to\n%q\nwant\n%q", got.String(), text)
				}
			})
		}
	}
}

func TestReadFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		outputLimit int
		files       map[string]string
		args        map[string]any
		wantHas     []string
	}{
		{
			name: "offset past the end", outputLimit: 100, files: map[string]string{"f.txt": "0123456789"},
			args:    map[string]any{"path": "f.txt", "offset": 11},
			wantHas: []string{"offset 11", "past the end", "10 bytes"},
		},
		{
			name: "offset far past the end", outputLimit: 100, files: map[string]string{"f.txt": "abc"},
			args:    map[string]any{"path": "f.txt", "offset": 1 << 40},
			wantHas: []string{"past the end", "3 bytes"},
		},
		{
			// "é" is bytes 1-2; a limit of 2 ends inside it at byte 2.
			name: "explicit limit cuts a multi-byte character", outputLimit: 100, files: map[string]string{"f.txt": "aébc"},
			args:    map[string]any{"path": "f.txt", "limit": 2},
			wantHas: []string{"not valid UTF-8", "position 1", "bytes 0-2", "offset or limit"},
		},
		{
			name: "explicit limit cuts a 4-byte character", outputLimit: 100, files: map[string]string{"f.txt": "0123🌍"},
			args:    map[string]any{"path": "f.txt", "offset": 2, "limit": 4},
			wantHas: []string{"not valid UTF-8", "position 4", "bytes 2-6"},
		},
		{
			name: "offset inside a multi-byte character", outputLimit: 100, files: map[string]string{"f.txt": "ab€cd"},
			args:    map[string]any{"path": "f.txt", "offset": 3},
			wantHas: []string{"not valid UTF-8", "position 3"},
		},
		{
			name: "invalid UTF-8 file", outputLimit: 100, files: map[string]string{"bin.dat": "ok\xffno"},
			args:    map[string]any{"path": "bin.dat"},
			wantHas: []string{"bin.dat", "not valid UTF-8", "position 2", "binary"},
		},
		{
			name: "invalid UTF-8 position is a file offset", outputLimit: 100, files: map[string]string{"bin.dat": "abcdef\xfe\xffxyz"},
			args:    map[string]any{"path": "bin.dat", "offset": 4},
			wantHas: []string{"position 6", "bytes 4-11"},
		},
		{
			name: "binary file", outputLimit: 100, files: map[string]string{"a.png": "\x89PNG\r\n\x1a\n\x00\x00"},
			args:    map[string]any{"path": "a.png"},
			wantHas: []string{"not valid UTF-8", "position 0"},
		},
		{
			name: "missing file", outputLimit: 100, files: map[string]string{},
			args:    map[string]any{"path": "nope.txt"},
			wantHas: []string{"nope.txt", "does not exist"},
		},
		{
			name: "missing directory", outputLimit: 100, files: map[string]string{},
			args:    map[string]any{"path": "no/such/dir/f.go"},
			wantHas: []string{"no/such/dir/f.go", "does not exist"},
		},
		{
			name: "file used as a directory", outputLimit: 100, files: map[string]string{"f.txt": "x"},
			args:    map[string]any{"path": "f.txt/inner"},
			wantHas: []string{"f.txt/inner"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, tc.outputLimit, tc.files)
			res := runRead(t, env, tc.args)
			if res.Success {
				t.Fatalf("Success=true, want a failure: %q", res.Output)
			}
			for _, w := range tc.wantHas {
				if !strings.Contains(res.Output, w) {
					t.Errorf("Output %q does not contain %q", res.Output, w)
				}
			}
		})
	}
}

func TestReadDirectory(t *testing.T) {
	t.Parallel()
	env := newEnv(t, 1024, map[string]string{
		"a.txt":        "a",
		"b.go":         "package b",
		"sub/":         "",
		"sub/in.txt":   "in",
		".hidden":      "h",
		"empty/":       "",
		"zeta/deeper/": "",
	})
	if err := os.Symlink("a.txt", filepath.Join(env.Workspace, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(env.Workspace, "dirlink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/nonexistent/target", filepath.Join(env.Workspace, "dangling")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path string
		want string
	}{
		{".", "[.: directory, 9 entries]\n.hidden\na.txt\nb.go\ndangling@\ndirlink@\nempty/\nlink@\nsub/\nzeta/\n"},
		{"sub", "[sub: directory, 1 entry]\nin.txt\n"},
		{"sub/", "[sub: directory, 1 entry]\nin.txt\n"},
		{"empty", "[empty: directory, 0 entries]\n"},
		{"zeta", "[zeta: directory, 1 entry]\ndeeper/\n"},
		{env.Workspace, "[.: directory, 9 entries]\n.hidden\na.txt\nb.go\ndangling@\ndirlink@\nempty/\nlink@\nsub/\nzeta/\n"},
		// A symlink to a directory inside is followed.
		{"dirlink", "[dirlink: directory, 1 entry]\nin.txt\n"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			res := runRead(t, env, map[string]any{"path": tc.path})
			if !res.Success {
				t.Fatalf("Success=false: %s", res.Output)
			}
			if res.Output != tc.want {
				t.Fatalf("Output =\n%q\nwant\n%q", res.Output, tc.want)
			}
			if res.Truncated {
				t.Fatal("Truncated = true")
			}
		})
	}
}

func TestReadDirectoryListingBound(t *testing.T) {
	t.Parallel()
	env := newEnv(t, 1<<20, nil)
	for i := 0; i < maxListing+5; i++ {
		if err := os.WriteFile(filepath.Join(env.Workspace, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	res := runRead(t, env, map[string]any{"path": "."})
	if !res.Success || !res.Truncated {
		t.Fatalf("Success=%v Truncated=%v, want true, true", res.Success, res.Truncated)
	}
	want := fmt.Sprintf("[.: directory, %d entries shown (more not listed)]", maxListing)
	if firstLine(res.Output) != want {
		t.Fatalf("header %q, want %q", firstLine(res.Output), want)
	}
	if n := strings.Count(res.Output, "\n"); n != maxListing+1 {
		t.Fatalf("%d lines, want %d", n, maxListing+1)
	}
}

func TestReadFIFO(t *testing.T) {
	t.Parallel()
	env := newEnv(t, 1024, nil)
	if err := syscall.Mkfifo(filepath.Join(env.Workspace, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// runRead fails the test if Run blocks (no writer ever opens the FIFO).
	res := runRead(t, env, map[string]any{"path": "pipe"})
	if res.Success {
		t.Fatalf("Success=true: %q", res.Output)
	}
	if !strings.Contains(res.Output, "not a regular file") || !strings.Contains(res.Output, "pipe") {
		t.Fatalf("Output %q does not say pipe is not a regular file", res.Output)
	}
}

func TestReadSymlinks(t *testing.T) {
	t.Parallel()
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const secret = "TOP-SECRET-OUTSIDE-CONTENT"
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, 1024, map[string]string{"real.txt": "inside content", "dir/": "", "dir/f.txt": "deep"})
	// In creation order: in-dir/alias goes through the in-dir link.
	links := []struct{ name, target string }{
		{"out-file", filepath.Join(outside, "secret.txt")},
		{"out-rel", filepath.Join("..", filepath.Base(outside), "secret.txt")},
		{"out-dir", outside},
		{"in-file", "real.txt"},
		{"dir/up", "../real.txt"},
		{"in-dir", "dir"},
		{"chain", "in-file"},
		{"chain-out", "out-file"},
		{"dir/escape", "../../" + filepath.Base(outside) + "/secret.txt"},
		{"in-dir/alias", "f.txt"}, // created inside dir/, through the link
		// os.Root refuses absolute targets outright; read resolves them
		// and allows the ones that land inside the workspace.
		{"abs-in", filepath.Join(env.Workspace, "real.txt")},
		{"abs-in-dir", filepath.Join(env.Workspace, "dir")},
	}
	for _, l := range links {
		if err := os.Symlink(l.target, filepath.Join(env.Workspace, filepath.FromSlash(l.name))); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("outside", func(t *testing.T) {
		for _, p := range []string{"out-file", "out-rel", "out-dir", "out-dir/secret.txt", "chain-out", "dir/escape"} {
			t.Run(p, func(t *testing.T) {
				res := runRead(t, env, map[string]any{"path": p})
				if res.Success {
					t.Fatalf("Success=true: %q", res.Output)
				}
				if strings.Contains(res.Output, secret) || strings.Contains(res.Output, "secret.txt\n") {
					t.Fatalf("Output shows what is outside the workspace: %q", res.Output)
				}
				if !strings.Contains(res.Output, "leads outside the workspace") {
					t.Fatalf("Output %q does not say the path leads outside", res.Output)
				}
			})
		}
	})
	t.Run("inside", func(t *testing.T) {
		tests := []struct{ path, wantBody string }{
			{"in-file", "inside content"},
			{"dir/up", "inside content"},
			{"chain", "inside content"},
			{"in-dir/f.txt", "deep"},
			{"in-dir/alias", "deep"},
			{"abs-in", "inside content"},
			{"abs-in-dir/f.txt", "deep"},
		}
		for _, tc := range tests {
			t.Run(tc.path, func(t *testing.T) {
				res := runRead(t, env, map[string]any{"path": tc.path})
				if !res.Success {
					t.Fatalf("Success=false: %s", res.Output)
				}
				_, body, _ := strings.Cut(res.Output, "\n")
				if body != tc.wantBody {
					t.Fatalf("body %q, want %q", body, tc.wantBody)
				}
			})
		}
	})
}

func TestPrepareRefuses(t *testing.T) {
	t.Parallel()
	env := newEnv(t, 1024, map[string]string{"a.txt": "a"})
	outside := filepath.Dir(env.Workspace)
	tests := []struct {
		name    string
		args    string
		wantHas string
	}{
		{"dotdot", `{"path":".."}`, "leaves the workspace"},
		{"dotdot file", `{"path":"../x"}`, "leaves the workspace"},
		{"climb out", `{"path":"a/../../x"}`, "leaves the workspace"},
		{"absolute outside", `{"path":"/etc/passwd"}`, "outside the workspace"},
		{"absolute parent", fmt.Sprintf(`{"path":%q}`, outside), "outside the workspace"},
		{"absolute sibling", fmt.Sprintf(`{"path":%q}`, env.Workspace+"-x/a.txt"), "outside the workspace"},
		{"NUL", `{"path":"a\u0000b"}`, "UTF-8"},
		{"empty", `{"path":""}`, "empty"},
		{"not JSON", `{`, "read arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := New().Prepare(env, json.RawMessage(tc.args))
			if err == nil {
				t.Fatalf("Prepare(%s) = %+v, want an error", tc.args, plan)
			}
			if !strings.Contains(err.Error(), tc.wantHas) {
				t.Fatalf("Prepare(%s) error %q does not contain %q", tc.args, err, tc.wantHas)
			}
		})
	}
}

func TestReadAbsoluteInside(t *testing.T) {
	t.Parallel()
	env := newEnv(t, 1024, map[string]string{"src/a.txt": "abs"})
	res := runRead(t, env, map[string]any{"path": filepath.Join(env.Workspace, "src", "a.txt")})
	if !res.Success || res.Output != "[src/a.txt: 3 bytes; bytes 0-3]\nabs" {
		t.Fatalf("got Success=%v %q", res.Success, res.Output)
	}
}

func TestPrepareRisk(t *testing.T) {
	t.Parallel()
	env := newEnv(t, 1024, map[string]string{".env": "KEY=1", "main.go": "package main"})
	tests := []struct {
		path        string
		risk        protocol.Risk
		summary     string
		mentionsSec bool
	}{
		{"main.go", protocol.RiskReadOnly, "Read main.go", false},
		{".", protocol.RiskReadOnly, "Read .", false},
		{"./src/../main.go", protocol.RiskReadOnly, "Read main.go", false},
		{"environment.md", protocol.RiskReadOnly, "Read environment.md", false},
		{".env", protocol.RiskFilesystem, "Read .env", true},
		{"./config/../.env", protocol.RiskFilesystem, "Read .env", true},
		{"certs/server.pem", protocol.RiskFilesystem, "Read certs/server.pem", true},
		{".ssh/config", protocol.RiskFilesystem, "Read .ssh/config", true},
		{"id_rsa", protocol.RiskFilesystem, "Read id_rsa", true},
		{"id_rsa.pub", protocol.RiskReadOnly, "Read id_rsa.pub", false},
		{env.Workspace + "/.env.local", protocol.RiskFilesystem, "Read .env.local", true},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": tc.path}))
			if err != nil {
				t.Fatal(err)
			}
			if plan.Risk != tc.risk {
				t.Fatalf("Risk = %q, want %q", plan.Risk, tc.risk)
			}
			if !strings.HasPrefix(plan.Summary, tc.summary) {
				t.Fatalf("Summary %q does not start with %q", plan.Summary, tc.summary)
			}
			if got := strings.Contains(plan.Summary, "secret"); got != tc.mentionsSec {
				t.Fatalf("Summary %q mentions a secret: %v, want %v", plan.Summary, got, tc.mentionsSec)
			}
			if plan.Run == nil {
				t.Fatal("Plan.Run is nil")
			}
		})
	}
	// The secret-like file is still readable once approved.
	res := runRead(t, env, map[string]any{"path": ".env"})
	if !res.Success || !strings.HasSuffix(res.Output, "\nKEY=1") {
		t.Fatalf("reading .env: Success=%v %q", res.Success, res.Output)
	}
}

func TestRunCancelled(t *testing.T) {
	t.Parallel()
	env := newEnv(t, 1024, map[string]string{"a.txt": "a", "d/": ""})
	for _, p := range []string{"a.txt", "d", "missing"} {
		t.Run(p, func(t *testing.T) {
			plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": p}))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			res, err := plan.Run(ctx)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run with a cancelled ctx = %+v, %v; want context.Canceled", res, err)
			}
		})
	}
}

func TestSpec(t *testing.T) {
	t.Parallel()
	spec := New().Spec()
	if spec.Name != "read" {
		t.Fatalf("Name = %q", spec.Name)
	}
	if spec.Description == "" || spec.Description != strings.TrimSpace(spec.Description) {
		t.Fatalf("Description %q is empty or not trimmed", spec.Description)
	}
	if !json.Valid(spec.Schema) {
		t.Fatal("Schema is not valid JSON")
	}
	reg := tools.NewRegistry()
	if err := reg.Register(New()); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if got, ok := reg.Lookup("read"); !ok || got == nil {
		t.Fatal("Lookup(read) failed")
	}
	tests := []struct {
		name    string
		args    string
		wantHas []string // empty: valid
	}{
		{"path only", `{"path":"a.txt"}`, nil},
		{"all fields", `{"path":"a.txt","offset":0,"limit":1}`, nil},
		{"large values", `{"path":"a","offset":1099511627776,"limit":65536}`, nil},
		{"whitespace around", " \n{\"path\":\"a\"}\n ", nil},
		// Each message names the property (or the root) and what is wrong
		// with it, in words the model can act on.
		{"missing path", `{}`, []string{"missing", "path"}},
		{"empty args", ``, []string{"missing", "path"}},
		{"blank args", "  \n", []string{"missing", "path"}},
		{"empty path", `{"path":""}`, []string{"path", "minLength"}},
		{"path wrong type", `{"path":7}`, []string{"path", "string"}},
		{"path null", `{"path":null}`, []string{"path", "null", "string"}},
		{"offset wrong type", `{"path":"a","offset":"10"}`, []string{"offset", "integer"}},
		{"offset fractional", `{"path":"a","offset":1.5}`, []string{"offset", "integer"}},
		{"extra property", `{"path":"a","lines":5}`, []string{"additional", "lines"}},
		{"negative offset", `{"path":"a","offset":-1}`, []string{"offset", "minimum"}},
		{"limit zero", `{"path":"a","limit":0}`, []string{"limit", "minimum"}},
		{"negative limit", `{"path":"a","limit":-5}`, []string{"limit", "minimum"}},
		{"not an object", `["a.txt"]`, []string{"array", "object"}},
		{"not JSON", `{"path":`, []string{"not valid JSON", "JSON object"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := reg.Validate("read", tc.args)
			if len(tc.wantHas) == 0 {
				if err != nil {
					t.Fatalf("Validate(%s): %v", tc.args, err)
				}
				if !json.Valid(raw) {
					t.Fatalf("Validate returned invalid JSON %q", raw)
				}
				if _, err := New().Prepare(tools.Env{Workspace: "/ws"}, raw); err != nil {
					t.Fatalf("Prepare of validated args: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%s) succeeded", tc.args)
			}
			msg := err.Error()
			if !strings.Contains(msg, "read") {
				t.Errorf("error %q does not name the tool", msg)
			}
			for _, w := range tc.wantHas {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func BenchmarkRead1MiB(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, "line %06d: the quick brown fox jumps over the lazy dog, again.\n", i)
	}
	text := sb.String()[:1<<20]
	env := newEnv(b, 1<<20, map[string]string{"f.txt": text})
	raw := json.RawMessage(`{"path":"f.txt"}`)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		plan, err := New().Prepare(env, raw)
		if err != nil {
			b.Fatal(err)
		}
		res, err := plan.Run(context.Background())
		if err != nil || !res.Success || res.Truncated {
			b.Fatal(res.Output[:min(len(res.Output), 200)], err)
		}
	}
}

func TestReadReportsSHA256(t *testing.T) {
	t.Parallel()
	content := strings.Repeat("line of text\n", 10000) // 130 KB: more than one page
	env := newEnv(t, 1024, map[string]string{"f.txt": content})
	plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": "f.txt", "offset": 100, "limit": 10}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := plan.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(content))
	if want := ", sha256 " + hex.EncodeToString(sum[:]) + ";"; !strings.Contains(firstLine(res.Output), want) {
		t.Fatalf("header %q does not carry the whole file's sha256", firstLine(res.Output))
	}
}

// TestLimitAboveOutputLimitIsSaid: a limit above the output limit is
// capped, and the header says so (issue 14, item 5).
func TestLimitAboveOutputLimitIsSaid(t *testing.T) {
	t.Parallel()
	env := newEnv(t, 100, map[string]string{"f.txt": strings.Repeat("a", 500)})
	res := runRead(t, env, map[string]any{"path": "f.txt", "limit": 400})
	if !res.Success || !strings.Contains(res.Output, "limit 400 is above the output limit of 100 bytes (tools.output_limit_bytes), so at most 100 were read") {
		t.Fatalf("capped read: %+v", res)
	}
	res = runRead(t, env, map[string]any{"path": "f.txt", "limit": 50})
	if !res.Success || strings.Contains(res.Output, "above the output limit") {
		t.Fatalf("read within the limit: %+v", res)
	}
}

// TestSpillFileIsReadable: the spill file a truncated bash output names
// can be read with read, by its absolute path; nothing else of the
// session's state directory can, and a link in the spill directory leads
// nowhere (issue 14, item 5).
func TestSpillFileIsReadable(t *testing.T) {
	t.Parallel()
	env := newEnv(t, 4096, nil)
	env.StateDir = t.TempDir()
	spill := filepath.Join(env.StateDir, tools.SpillDir)
	if err := os.MkdirAll(spill, 0o700); err != nil {
		t.Fatal(err)
	}
	full := strings.Repeat("0123456789\n", 1000)
	if err := os.WriteFile(filepath.Join(spill, "bash-x.log"), []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	res := runRead(t, env, map[string]any{"path": filepath.Join(spill, "bash-x.log"), "offset": 11 * 500, "limit": 22})
	if !res.Success || !strings.HasSuffix(res.Output, "]\n0123456789\n0123456789\n") {
		t.Fatalf("reading the spill file: %+v", res)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(spill, "bash-link.log")); err != nil {
		t.Fatal(err)
	}
	res = runRead(t, env, map[string]any{"path": filepath.Join(spill, "bash-link.log")})
	if res.Success || strings.Contains(res.Output, "secret\n") {
		t.Fatalf("a link in the spill directory was followed: %+v", res)
	}
	if err := os.WriteFile(filepath.Join(env.StateDir, "log.jsonl"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(env.StateDir, "log.jsonl"), filepath.Join(spill, "..", "log.jsonl")} {
		if _, err := New().Prepare(env, argsJSON(t, map[string]any{"path": p})); err == nil || !strings.Contains(err.Error(), "outside the workspace") {
			t.Fatalf("Prepare(%s) = %v; want it refused as outside the workspace", p, err)
		}
	}
}
