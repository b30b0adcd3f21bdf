package write

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/toolstest"
	"github.com/scv-cli/scv/scv-server/internal/tools/workspace"
	"github.com/scv-cli/scv/shared/protocol"
)

// crashHelperEnv selects the helper mode of the test binary: a process
// that writes a large file through the tool in a loop until it is killed.
const crashHelperEnv = "SCV_WRITE_CRASH_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(crashHelperEnv) != "" {
		crashHelper()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// newEnv makes a temporary workspace holding files (name → content; a name
// ending in "/" is a directory) and returns its Env.
func newEnv(t testing.TB, files map[string]string) tools.Env {
	t.Helper()
	return toolstest.Env(t, files)
}

func argsJSON(t testing.TB, a map[string]any) json.RawMessage {
	t.Helper()
	return toolstest.Args(t, a)
}

// run prepares and runs one call: a Prepare refusal is returned as a
// failed result whose output starts with "refused: ".
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

func TestWrite(t *testing.T) {
	const old = "line 1\nline 2\nline 3\n"
	tests := []struct {
		name  string
		files map[string]string
		args  map[string]any
		// want is the content of check afterwards; wantHas parts of the
		// output. A refused or failed call must leave check as it was.
		check   string
		want    string
		ok      bool
		wantHas []string
	}{
		{
			name: "create", args: map[string]any{"path": "new.txt", "content": "hello\n", "mode": "create"},
			check: "new.txt", want: "hello\n", ok: true,
			wantHas: []string{"Created new.txt", "wrote 6 bytes", "sha256 " + sha("hello\n")},
		},
		{
			name: "create an empty file", args: map[string]any{"path": "empty", "content": "", "mode": "create"},
			check: "empty", want: "", ok: true, wantHas: []string{"wrote 0 bytes", "sha256 " + sha("")},
		},
		{
			name: "create in new nested directories", args: map[string]any{"path": "a/b/c/new.go", "content": "package c\n", "mode": "create"},
			check: "a/b/c/new.go", want: "package c\n", ok: true, wantHas: []string{"Created a/b/c/new.go"},
		},
		{
			name: "create with an absolute path inside", args: map[string]any{"path": "$WS/abs.txt", "content": "x", "mode": "create"},
			check: "abs.txt", want: "x", ok: true, wantHas: []string{"Created abs.txt", "wrote 1 byte;"},
		},
		{
			name: "create multi-byte text", args: map[string]any{"path": "u.txt", "content": "héllo, 世界 🌍\n", "mode": "create"},
			check: "u.txt", want: "héllo, 世界 🌍\n", ok: true, wantHas: []string{fmt.Sprintf("wrote %d bytes", len("héllo, 世界 🌍\n"))},
		},
		{
			name: "create over an existing file", files: map[string]string{"f.txt": old},
			args:  map[string]any{"path": "f.txt", "content": "new", "mode": "create"},
			check: "f.txt", want: old, wantHas: []string{"refused", "f.txt already exists", "sha256 " + sha(old), "mode replace"},
		},
		{
			name: "replace", files: map[string]string{"f.txt": old},
			args:  map[string]any{"path": "f.txt", "content": "line 1\nline two\nline 3\nline 4\n", "mode": "replace"},
			check: "f.txt", want: "line 1\nline two\nline 3\nline 4\n", ok: true,
			wantHas: []string{"Replaced f.txt", "+2 -1 lines", "sha256 " + sha("line 1\nline two\nline 3\nline 4\n")},
		},
		{
			name: "replace with the expected hash", files: map[string]string{"f.txt": old},
			args:  map[string]any{"path": "f.txt", "content": "new\n", "mode": "replace", "expected_sha256": sha(old)},
			check: "f.txt", want: "new\n", ok: true, wantHas: []string{"+1 -3 lines"},
		},
		{
			name: "replace with a stale hash", files: map[string]string{"f.txt": old},
			args:  map[string]any{"path": "f.txt", "content": "new\n", "mode": "replace", "expected_sha256": sha("something else")},
			check: "f.txt", want: old,
			wantHas: []string{"refused", "f.txt has changed", "expected_sha256 is " + sha("something else"), "current sha256 is " + sha(old), "read the file again"},
		},
		{
			name: "replace a missing file", args: map[string]any{"path": "nope.txt", "content": "x", "mode": "replace"},
			wantHas: []string{"refused", "nope.txt does not exist", "mode create"},
		},
		{
			name: "expected hash with create", args: map[string]any{"path": "n.txt", "content": "x", "mode": "create", "expected_sha256": sha("")},
			wantHas: []string{"refused", "replace only"},
		},
		{
			name: "hash in upper case", files: map[string]string{"f.txt": old},
			args:  map[string]any{"path": "f.txt", "content": "x", "mode": "replace", "expected_sha256": strings.ToUpper(sha(old))},
			check: "f.txt", want: old, wantHas: []string{"refused", "is not a sha256", "lowercase"},
		},
		{
			name: "hash too short", files: map[string]string{"f.txt": old},
			args:  map[string]any{"path": "f.txt", "content": "x", "mode": "replace", "expected_sha256": "abc123"},
			check: "f.txt", want: old, wantHas: []string{"refused", `"abc123" is not a sha256`},
		},
		{
			name: "parent is a file", files: map[string]string{"f.txt": old},
			args:  map[string]any{"path": "f.txt/inner.txt", "content": "x", "mode": "create"},
			check: "f.txt", want: old, wantHas: []string{"refused", "a parent of f.txt/inner.txt is a file, not a directory"},
		},
		{
			name: "deeper parent is a file", files: map[string]string{"d/f": "x"},
			args:  map[string]any{"path": "d/f/g/h.txt", "content": "x", "mode": "create"},
			check: "d/f", want: "x", wantHas: []string{"refused", "is a file, not a directory"},
		},
		{
			name: "directory target, replace", files: map[string]string{"dir/": ""},
			args: map[string]any{"path": "dir", "content": "x", "mode": "replace"}, wantHas: []string{"refused", "dir is a directory"},
		},
		{
			name: "directory target, create", files: map[string]string{"dir/": ""},
			args: map[string]any{"path": "dir", "content": "x", "mode": "create"}, wantHas: []string{"refused", "dir is a directory"},
		},
		{
			name: "trailing slash", args: map[string]any{"path": "newdir/", "content": "x", "mode": "create"},
			wantHas: []string{"refused", "names a directory"},
		},
		{name: "workspace itself", args: map[string]any{"path": ".", "content": "x", "mode": "replace"}, wantHas: []string{"refused", "directory"}},
		{name: "dotdot", args: map[string]any{"path": "../x.txt", "content": "x", "mode": "create"}, wantHas: []string{"refused", "leaves the workspace"}},
		{name: "climb out", args: map[string]any{"path": "a/../../x.txt", "content": "x", "mode": "create"}, wantHas: []string{"refused", "leaves the workspace"}},
		{name: "absolute outside", args: map[string]any{"path": "/tmp/scv-write-test-outside.txt", "content": "x", "mode": "create"}, wantHas: []string{"refused", "outside the workspace"}},
		{name: "absolute sibling", args: map[string]any{"path": "$WS-x/a.txt", "content": "x", "mode": "create"}, wantHas: []string{"refused", "outside the workspace"}},
		{name: "NUL in path", args: map[string]any{"path": "a\x00b", "content": "x", "mode": "create"}, wantHas: []string{"refused", "not a valid UTF-8 path"}},
		{name: "bad mode", args: map[string]any{"path": "a", "content": "x", "mode": "append"}, wantHas: []string{"refused", "create or replace"}},
		{name: "missing content", args: map[string]any{"path": "a", "mode": "create"}, wantHas: []string{"refused", "content is missing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, tc.files)
			a := map[string]any{}
			for k, v := range tc.args {
				if s, ok := v.(string); ok {
					v = strings.ReplaceAll(s, "$WS", env.Workspace)
				}
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
			if tc.check != "" {
				if got := read(t, env, tc.check); got != tc.want {
					t.Fatalf("%s holds %q, want %q", tc.check, got, tc.want)
				}
			}
			if left := tempFiles(t, env.Workspace); len(left) != 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}
	if _, err := os.Stat("/tmp/scv-write-test-outside.txt"); err == nil {
		t.Fatal("a file was written outside the workspace")
	}
}

func tempFiles(t testing.TB, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), workspace.TempPrefix) {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSummary(t *testing.T) {
	env := newEnv(t, map[string]string{"f.txt": "a\nb\nc\n", "big.txt": strings.Repeat("x\n", 10)})
	if err := os.Symlink("f.txt", filepath.Join(env.Workspace, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": "n/new.txt", "content": "hello", "mode": "create"}, "Write n/new.txt (create, 5 bytes)"},
		{map[string]any{"path": "./n/../one", "content": "x", "mode": "create"}, "Write one (create, 1 byte)"},
		{map[string]any{"path": "f.txt", "content": "a\nB\nc\nd\n", "mode": "replace"}, "Write f.txt (replace, 8 bytes, +2 -1 lines)"},
		{map[string]any{"path": "f.txt", "content": "a\nb\nc\n", "mode": "replace"}, "Write f.txt (replace, 6 bytes, +0 -0 lines)"},
		{map[string]any{"path": "big.txt", "content": "", "mode": "replace"}, "Write big.txt (replace, 0 bytes, +0 -10 lines)"},
		{map[string]any{"path": "link", "content": "z\n", "mode": "replace"}, "Write link → f.txt (replace, 2 bytes, +1 -3 lines)"},
	}
	for _, tc := range tests {
		plan, err := New().Prepare(env, argsJSON(t, tc.args))
		if err != nil {
			t.Fatalf("Prepare(%v): %v", tc.args, err)
		}
		if plan.Summary != tc.want || plan.Risk != protocol.RiskFilesystem {
			t.Errorf("Summary %q risk %q, want %q filesystem", plan.Summary, plan.Risk, tc.want)
		}
	}
}

func TestReplaceKeepsTheMode(t *testing.T) {
	for _, mode := range []fs.FileMode{0o600, 0o640, 0o644, 0o666, 0o755, 0o777, 0o400} {
		t.Run(mode.String(), func(t *testing.T) {
			env := newEnv(t, map[string]string{"f": "old"})
			p := filepath.Join(env.Workspace, "f")
			if err := os.Chmod(p, mode); err != nil {
				t.Fatal(err)
			}
			res := run(t, env, map[string]any{"path": "f", "content": "new", "mode": "replace"})
			if !res.Success {
				t.Fatal(res.Output)
			}
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != mode || read(t, env, "f") != "new" {
				t.Fatalf("mode %v content %q, want %v and new", fi.Mode(), read(t, env, "f"), mode)
			}
		})
	}
}

func TestStaleBetweenPrepareAndRun(t *testing.T) {
	env := newEnv(t, map[string]string{"f.txt": "v1"})
	plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": "f.txt", "content": "mine", "mode": "replace", "expected_sha256": sha("v1")}))
	if err != nil {
		t.Fatal(err)
	}
	// Someone else writes while the call waits for approval.
	if err := os.WriteFile(filepath.Join(env.Workspace, "f.txt"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := plan.Run(context.Background())
	if err != nil || res.Success {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if !strings.Contains(res.Output, "current sha256 is "+sha("theirs")) || read(t, env, "f.txt") != "theirs" {
		t.Fatalf("output %q, file %q", res.Output, read(t, env, "f.txt"))
	}

	// A create whose path appears meanwhile fails and leaves it alone.
	plan, err = New().Prepare(env, argsJSON(t, map[string]any{"path": "n.txt", "content": "mine", "mode": "create"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env.Workspace, "n.txt"), []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, _ = plan.Run(context.Background())
	if res.Success || !strings.Contains(res.Output, "already exists") || read(t, env, "n.txt") != "theirs" {
		t.Fatalf("create over a new file: %+v, file %q", res, read(t, env, "n.txt"))
	}
}

func TestSymlinks(t *testing.T) {
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const secret = "OUTSIDE CONTENT"
	outFile := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(outFile, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, map[string]string{"real.txt": "inside", "dir/f.txt": "deep"})
	links := [][2]string{
		{"out-file", outFile},
		{"out-rel", filepath.Join("..", filepath.Base(outside), "secret.txt")},
		{"out-dir", outside},
		{"out-missing", filepath.Join(outside, "missing.txt")},
		{"dir/escape", "../../" + filepath.Base(outside) + "/secret.txt"},
		{"in-file", "real.txt"},
		{"in-abs", filepath.Join(env.Workspace, "real.txt")},
		{"in-dir", "dir"},
		{"dangling", "nothing-here.txt"},
	}
	for _, l := range links {
		if err := os.Symlink(l[1], filepath.Join(env.Workspace, filepath.FromSlash(l[0]))); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("outside", func(t *testing.T) {
		for _, tc := range []struct{ path, mode string }{
			{"out-file", "replace"}, {"out-file", "create"},
			{"out-rel", "replace"},
			{"out-dir/secret.txt", "replace"}, {"out-dir/new.txt", "create"}, {"out-dir/sub/new.txt", "create"},
			{"out-missing", "create"}, {"out-missing", "replace"},
			{"dir/escape", "replace"},
		} {
			t.Run(tc.path+"/"+tc.mode, func(t *testing.T) {
				res := run(t, env, map[string]any{"path": tc.path, "content": "PWNED", "mode": tc.mode})
				if res.Success {
					t.Fatalf("Success: %s", res.Output)
				}
				if !strings.Contains(res.Output, "leads outside the workspace") {
					t.Fatalf("output %q does not say the path leads outside", res.Output)
				}
			})
		}
		assertOutsideUntouched(t, outside, secret)
	})
	t.Run("a link to a file inside writes the file", func(t *testing.T) {
		for _, p := range []string{"in-file", "in-abs"} {
			res := run(t, env, map[string]any{"path": p, "content": "via " + p, "mode": "replace"})
			if !res.Success || !strings.Contains(res.Output, "the file written is real.txt") {
				t.Fatalf("%s: %+v", p, res)
			}
			if got := read(t, env, "real.txt"); got != "via "+p {
				t.Fatalf("real.txt = %q", got)
			}
			if fi, err := os.Lstat(filepath.Join(env.Workspace, p)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Fatalf("%s is no longer a symlink: %v %v", p, fi, err)
			}
		}
		res := run(t, env, map[string]any{"path": "in-dir/new.txt", "content": "n", "mode": "create"})
		if !res.Success || read(t, env, "dir/new.txt") != "n" {
			t.Fatalf("create through a directory link: %+v", res)
		}
	})
	t.Run("dangling link", func(t *testing.T) {
		for _, mode := range []string{"create", "replace"} {
			res := run(t, env, map[string]any{"path": "dangling", "content": "x", "mode": mode})
			if res.Success || !strings.Contains(res.Output, "symlink") {
				t.Fatalf("%s: %+v", mode, res)
			}
		}
		if _, err := os.Stat(filepath.Join(env.Workspace, "nothing-here.txt")); err == nil {
			t.Fatal("the dangling link's target was created")
		}
	})
}

func assertOutsideUntouched(t *testing.T, outside, secret string) {
	t.Helper()
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "secret.txt" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("the outside directory holds %v", names)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != secret {
		t.Fatalf("the outside file holds %q", b)
	}
}

// TestLinkSwappedAfterPrepare swaps a symlink leading outside in after
// Prepare checked the path: Run must still refuse it.
func TestLinkSwappedAfterPrepare(t *testing.T) {
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const secret = "OUTSIDE CONTENT"
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args map[string]any
		// swap turns the workspace path into a link leading outside.
		swap func(ws string) error
	}{
		{
			name: "directory becomes a link (create)",
			args: map[string]any{"path": "sub/new.txt", "content": "PWNED", "mode": "create"},
			swap: func(ws string) error {
				if err := os.RemoveAll(filepath.Join(ws, "sub")); err != nil {
					return err
				}
				return os.Symlink(outside, filepath.Join(ws, "sub"))
			},
		},
		{
			name: "directory becomes a relative link (replace)",
			args: map[string]any{"path": "sub/secret.txt", "content": "PWNED", "mode": "replace"},
			swap: func(ws string) error {
				if err := os.RemoveAll(filepath.Join(ws, "sub")); err != nil {
					return err
				}
				return os.Symlink(filepath.Join("..", filepath.Base(outside)), filepath.Join(ws, "sub"))
			},
		},
		{
			name: "file becomes a link (replace)",
			args: map[string]any{"path": "f.txt", "content": "PWNED", "mode": "replace"},
			swap: func(ws string) error {
				if err := os.Remove(filepath.Join(ws, "f.txt")); err != nil {
					return err
				}
				return os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "f.txt"))
			},
		},
		{
			name: "missing file becomes a link (create)",
			args: map[string]any{"path": "n.txt", "content": "PWNED", "mode": "create"},
			swap: func(ws string) error {
				return os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "n.txt"))
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, map[string]string{"sub/secret.txt": "inside", "f.txt": "inside"})
			plan, err := New().Prepare(env, argsJSON(t, tc.args))
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if err := tc.swap(env.Workspace); err != nil {
				t.Fatal(err)
			}
			res, err := plan.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if res.Success {
				t.Fatalf("Run succeeded after the swap: %s", res.Output)
			}
			assertOutsideUntouched(t, outside, secret)
		})
	}
}

// TestLinkSwapRace flips a directory between a real one and a link leading
// outside while writes run: whatever the interleaving, nothing may land
// outside the workspace.
func TestLinkSwapRace(t *testing.T) {
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, map[string]string{"sub/": ""})
	sub := filepath.Join(env.Workspace, "sub")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = os.RemoveAll(sub)
			if i%2 == 0 {
				_ = os.Symlink(outside, sub)
			} else {
				_ = os.Mkdir(sub, 0o755)
			}
		}
	}()
	ok := 0
	for i := 0; i < 300; i++ {
		mode := "create"
		if i%2 == 1 {
			mode = "replace"
		}
		plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": "sub/f.txt", "content": "x", "mode": mode}))
		if err != nil {
			continue
		}
		if res, err := plan.Run(context.Background()); err != nil {
			t.Fatal(err)
		} else if res.Success {
			ok++
		}
	}
	close(stop)
	wg.Wait()
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("%d entries appeared outside the workspace: %v", len(entries), entries[0].Name())
	}
	t.Logf("%d of 300 writes succeeded inside", ok)
}

func TestRunCancelled(t *testing.T) {
	env := newEnv(t, nil)
	plan, err := New().Prepare(env, argsJSON(t, map[string]any{"path": "a", "content": "x", "mode": "create"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := plan.Run(ctx); err == nil {
		t.Fatal("Run with a cancelled ctx succeeded")
	}
	if _, err := os.Stat(filepath.Join(env.Workspace, "a")); err == nil {
		t.Fatal("a cancelled call wrote")
	}
}

func TestSpec(t *testing.T) {
	spec := New().Spec()
	if spec.Name != "write" || spec.Description == "" || spec.Description != strings.TrimSpace(spec.Description) || !json.Valid(spec.Schema) {
		t.Fatalf("spec = %+v", spec)
	}
	reg := tools.NewRegistry()
	if err := reg.Register(New()); err != nil {
		t.Fatal(err)
	}
	good := sha("x")
	tests := []struct {
		name    string
		args    string
		wantHas []string // empty: valid
	}{
		{"create", `{"path":"a","content":"x","mode":"create"}`, nil},
		{"replace with hash", `{"path":"a","content":"","mode":"replace","expected_sha256":"` + good + `"}`, nil},
		{"missing mode", `{"path":"a","content":"x"}`, []string{"missing", "mode"}},
		{"missing content", `{"path":"a","mode":"create"}`, []string{"missing", "content"}},
		{"missing path", `{"content":"x","mode":"create"}`, []string{"missing", "path"}},
		{"bad mode", `{"path":"a","content":"x","mode":"append"}`, []string{"mode"}},
		{"content not a string", `{"path":"a","content":7,"mode":"create"}`, []string{"content", "string"}},
		{"content null", `{"path":"a","content":null,"mode":"create"}`, []string{"content"}},
		{"hash shape", `{"path":"a","content":"x","mode":"replace","expected_sha256":"xyz"}`, []string{"expected_sha256"}},
		{"hash upper case", `{"path":"a","content":"x","mode":"replace","expected_sha256":"` + strings.ToUpper(good) + `"}`, []string{"expected_sha256"}},
		{"extra property", `{"path":"a","content":"x","mode":"create","force":true}`, []string{"additional", "force"}},
		{"empty path", `{"path":"","content":"x","mode":"create"}`, []string{"path"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := reg.Validate("write", tc.args)
			if len(tc.wantHas) == 0 {
				if err != nil {
					t.Fatalf("Validate(%s): %v", tc.args, err)
				}
				if _, err := New().Prepare(newEnv(t, map[string]string{"a": "x"}), raw); err != nil && !strings.Contains(err.Error(), "exists") {
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

// crashHelper is the subprocess of TestCrashMidWrite: it replaces the file
// named by the environment with ever new uniform content of the same
// size, through the tool, until it is killed.
func crashHelper() {
	dir, name := os.Getenv("SCV_CRASH_DIR"), os.Getenv("SCV_CRASH_FILE")
	size, _ := strconv.Atoi(os.Getenv("SCV_CRASH_SIZE"))
	root, err := os.OpenRoot(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	env := tools.Env{Workspace: dir, Root: root, OutputLimit: 64 << 10}
	// Checked calls, built once: each turn of the loop is Run's write path
	// (observe, write the temporary file, fsync, re-hash, rename), not the
	// decoding of 8 MiB of JSON arguments.
	var calls []*call
	for _, c := range "BCDEFGH" {
		content := strings.Repeat(string(c), size)
		cl, err := check(env, args{Path: name, Content: &content, Mode: modeReplace})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		calls = append(calls, cl)
	}
	for i := 0; ; i++ {
		if res, err := calls[i%len(calls)].run(context.Background(), env, "", ""); err != nil || !res.Success {
			fmt.Fprintln(os.Stderr, res.Output, err)
			os.Exit(2)
		}
		fmt.Println("wrote")
	}
}

// TestCrashMidWrite kills a process writing a large file through the tool
// (SIGKILL, twelve times: half at a random moment of a write, half while
// it holds the write's unnamed temporary file): the file always holds one
// complete content, never a mix or a prefix, and no temporary file is
// ever left in the workspace (issue 14, item 17).
func TestCrashMidWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("kills subprocesses")
	}
	const size = 8 << 20
	env := newEnv(t, map[string]string{"big.txt": strings.Repeat("A", size)})
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	midWrite := 0
	for i := 0; i < 12; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashHelperEnv+"=1", "SCV_CRASH_DIR="+env.Workspace, "SCV_CRASH_FILE=big.txt", "SCV_CRASH_SIZE="+strconv.Itoa(size))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Time one whole write, then kill at a random moment of the next.
		lines := bufio.NewReader(out)
		var cycle time.Duration
		for j, start := 0, time.Now(); j < 2; j++ {
			if line, err := lines.ReadString('\n'); err != nil || line != "wrote\n" {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				t.Fatalf("helper said %q, %v", line, err)
			}
			cycle, start = time.Since(start), time.Now()
		}
		if i%2 == 0 {
			time.Sleep(time.Duration(r.Int64N(int64(cycle) + 1)))
		} else {
			// Aim at the window: the helper holds a temporary file.
			for deadline := time.Now().Add(10 * cycle); !holdsTemp(cmd.Process.Pid, env.Workspace) && time.Now().Before(deadline); {
				time.Sleep(200 * time.Microsecond)
			}
			time.Sleep(time.Duration(r.IntN(2000)) * time.Microsecond)
		}
		if holdsTemp(cmd.Process.Pid, env.Workspace) {
			midWrite++
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("helper ended with %v before it was killed", err)
		}
		got := read(t, env, "big.txt")
		if len(got) != size {
			t.Fatalf("after kill %d the file has %d bytes, want %d", i, len(got), size)
		}
		if strings.Count(got, got[:1]) != size {
			t.Fatalf("after kill %d the file mixes contents (starts with %q, ends with %q)", i, got[:1], got[size-1:])
		}
		if left := tempFiles(t, env.Workspace); len(left) != 0 {
			t.Fatalf("after kill %d temporary files are left in the workspace: %v", i, left)
		}
	}
	if midWrite < 3 {
		t.Fatalf("only %d kills landed in the middle of a write (while a temporary file was open): the test proved too little", midWrite)
	}
	res := run(t, env, map[string]any{"path": "big.txt", "content": "final", "mode": "replace"})
	if !res.Success || read(t, env, "big.txt") != "final" {
		t.Fatalf("write after the crashes: %+v", res)
	}
	t.Logf("%d of the kills landed while a temporary file was open", midWrite)
}

// holdsTemp reports whether process pid has an unnamed temporary file of
// dir open (O_TMPFILE: /proc shows "dir/#inode (deleted)").
func holdsTemp(pid int, dir string) bool {
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return false
	}
	for _, fd := range fds {
		target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name())
		if err == nil && strings.HasPrefix(target, dir+"/") && strings.HasSuffix(target, " (deleted)") {
			return true
		}
	}
	return false
}

func BenchmarkWrite1MiB(b *testing.B) {
	var lines []string
	for n, i := 0, 0; n < 1<<20; i++ {
		lines = append(lines, fmt.Sprintf("line %06d: the quick brown fox jumps over the lazy dog, again.\n", i))
		n += len(lines[i])
	}
	v1 := strings.Join(lines, "")
	lines[len(lines)/2] = "a changed line in the middle\n"
	v2 := strings.Join(lines, "")
	env := newEnv(b, map[string]string{"f.txt": v1})
	args := []json.RawMessage{
		argsJSON(b, map[string]any{"path": "f.txt", "content": v2, "mode": "replace"}),
		argsJSON(b, map[string]any{"path": "f.txt", "content": v1, "mode": "replace"}),
	}
	b.SetBytes(int64(len(v1)))
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

// TestLargeFileIsNeverHashed: a 10 GiB (sparse) file is refused or
// replaced by its size alone, at once: nothing hashes it, in Prepare or in
// Run (issue 14, item 4).
func TestLargeFileIsNeverHashed(t *testing.T) {
	t.Parallel()
	env := newEnv(t, nil)
	p := filepath.Join(env.Workspace, "huge.bin")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 10<<30); err != nil {
		t.Fatal(err)
	}
	res := run(t, env, map[string]any{"path": "huge.bin", "content": "x", "mode": "create"})
	if res.Success || !strings.Contains(res.Output, "already exists (10737418240 bytes)") {
		t.Fatalf("create over a huge file: %+v", res)
	}
	res = run(t, env, map[string]any{"path": "huge.bin", "content": "x", "mode": "replace", "expected_sha256": sha("x")})
	if res.Success || !strings.Contains(res.Output, "expected_sha256 cannot be") {
		t.Fatalf("replace with expected_sha256 of a huge file: %+v", res)
	}
	res = run(t, env, map[string]any{"path": "huge.bin", "content": "small now", "mode": "replace"})
	if !res.Success || read(t, env, "huge.bin") != "small now" {
		t.Fatalf("replace of a huge file: %+v", res)
	}
}
