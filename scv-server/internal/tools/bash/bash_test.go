//go:build linux

package bash

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/read"
	"github.com/scv-cli/scv/scv-server/internal/tools/spill"
	"github.com/scv-cli/scv/scv-server/internal/tools/toolstest"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit"
)

func TestMain(m *testing.M) {
	restore := testkit.IsolateHome()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) { restore(); os.Exit(code) }))
}

// hang bounds every wait; it only guards against a hang.
const hang = 60 * time.Second

const testSpillMax = 64 << 20

func newEnv(t *testing.T, limit int) tools.Env {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return tools.Env{
		Workspace:   dir,
		Root:        root,
		Timeout:     30 * time.Second,
		MaxTimeout:  120 * time.Second,
		OutputLimit: limit,
		StateDir:    filepath.Join(t.TempDir(), "state", "sessions", "s1"),
	}
}

func newTool() *Tool {
	// The snapshot's bound is generous: a loaded machine must not turn a
	// test into the fallback's.
	return New(Options{DefaultTimeout: 30 * time.Second, MaxTimeout: 120 * time.Second, SpillMaxBytes: testSpillMax, SnapshotTimeout: hang / 2})
}

func argsJSON(t testing.TB, a map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type outcome struct {
	res     tools.Result
	err     error
	elapsed time.Duration
}

// call prepares and runs one call in the background.
func call(ctx context.Context, t *testing.T, tool *Tool, env tools.Env, a map[string]any) <-chan outcome {
	t.Helper()
	plan, err := tool.Prepare(env, argsJSON(t, a))
	if err != nil {
		t.Fatalf("Prepare(%v): %v", a, err)
	}
	if plan.Risk != protocol.RiskProcess {
		t.Fatalf("risk %q, want process", plan.Risk)
	}
	ch := make(chan outcome, 1)
	go func() {
		start := time.Now()
		res, err := plan.Run(ctx)
		ch <- outcome{res, err, time.Since(start)}
	}()
	return ch
}

func await(t *testing.T, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		checkNoChildren(t)
		return o
	case <-time.After(hang):
		t.Fatal("the call did not return")
		return outcome{}
	}
}

func runCmd(t *testing.T, env tools.Env, a map[string]any) outcome {
	t.Helper()
	o := await(t, call(context.Background(), t, newTool(), env, a))
	if o.err != nil {
		t.Fatalf("Run: %v", o.err)
	}
	return o
}

// checkNoChildren fails if the test process (a subreaper once a call ran)
// has any child left: everything a call leaves behind reparents to it.
func checkNoChildren(t *testing.T) {
	t.Helper()
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		if data, _ := os.ReadFile(f); len(strings.TrimSpace(string(data))) > 0 {
			t.Errorf("children left behind: %s", data)
		}
	}
}

func TestExitStatus(t *testing.T) {
	tests := []struct {
		command string
		success bool
		want    string
	}{
		{"true", true, "exit 0\n(no output)"},
		{"echo hello", true, "exit 0\nhello\n"},
		{"false", false, "exit 1\n(no output)"},
		{"echo out; echo err >&2; exit 3", false, "exit 3\nout\nerr\n"},
		{"kill -KILL $$", false, "killed by signal KILL\n(no output)"},
		{"echo bye; kill -TERM $$", false, "killed by signal TERM\nbye\n"},
	}
	env := newEnv(t, 4096)
	for _, tc := range tests {
		t.Run(tc.command, func(t *testing.T) {
			o := runCmd(t, env, map[string]any{"command": tc.command})
			if o.res.Success != tc.success || o.res.Output != tc.want || o.res.Truncated {
				t.Fatalf("result = %+v, want success %v and %q", o.res, tc.success, tc.want)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	tool := New(Options{DefaultTimeout: 30 * time.Second, MaxTimeout: 100 * time.Second})
	env := newEnv(t, 4096)
	env.MaxTimeout = 100 * time.Second
	reg := tools.NewRegistry()
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		raw  string
		want string // in the error the model reads
	}{
		{"missing command", `{}`, "command"},
		{"command not a string", `{"command":5}`, "command"},
		{"empty command", `{"command":""}`, "command"},
		{"blank command", `{"command":" \n\t"}`, "command is empty"},
		{"NUL", `{"command":"echo a\u0000b"}`, "NUL byte at position 6"},
		{"timeout zero", `{"command":"true","timeout_seconds":0}`, "timeout_seconds"},
		{"timeout negative", `{"command":"true","timeout_seconds":-5}`, "timeout_seconds"},
		{"timeout not an integer", `{"command":"true","timeout_seconds":1.5}`, "timeout_seconds"},
		{"timeout a string", `{"command":"true","timeout_seconds":"10"}`, "timeout_seconds"},
		{"timeout over the ceiling", `{"command":"true","timeout_seconds":101}`, "100"},
		{"unknown argument", `{"command":"true","cwd":"/"}`, "cwd"},
		{"not JSON", `{"command":`, "not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, err := reg.Validate("bash", tc.raw)
			if err == nil {
				_, err = tool.Prepare(env, args)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestTimeoutCeilingIsRefusedInPrepare(t *testing.T) {
	// Prepare refuses past the call's ceiling even when the schema (built
	// at session start) would allow it, naming the ceiling.
	tool := New(Options{MaxTimeout: 1000 * time.Second})
	env := newEnv(t, 4096)
	env.MaxTimeout = 50 * time.Second
	env.Timeout = 10 * time.Second
	_, err := tool.Prepare(env, argsJSON(t, map[string]any{"command": "true", "timeout_seconds": 51}))
	if err == nil || !strings.Contains(err.Error(), "ceiling of 50 s (tools.max_timeout_seconds)") || !strings.Contains(err.Error(), "default of 10 s") {
		t.Fatalf("error = %v", err)
	}
	if _, err := tool.Prepare(env, argsJSON(t, map[string]any{"command": "true", "timeout_seconds": 50})); err != nil {
		t.Fatalf("the ceiling itself was refused: %v", err)
	}
}

func TestSchemaAdvertisesTheCeiling(t *testing.T) {
	for _, tc := range []struct {
		opts      Options
		max, def  int64
		inDescrib string
	}{
		{Options{}, 14400, 600, "default 600 s, at most 14400 s"},
		{Options{DefaultTimeout: 60 * time.Second, MaxTimeout: 900 * time.Second}, 900, 60, "default 60 s, at most 900 s"},
	} {
		spec := New(tc.opts).Spec()
		var s struct {
			Properties map[string]struct {
				Maximum *int64 `json:"maximum"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(spec.Schema, &s); err != nil {
			t.Fatal(err)
		}
		if m := s.Properties["timeout_seconds"].Maximum; m == nil || *m != tc.max {
			t.Errorf("maximum = %v, want %d", m, tc.max)
		}
		if spec.Name != "bash" || !strings.Contains(spec.Description, tc.inDescrib) {
			t.Errorf("spec %q: %q", spec.Name, spec.Description)
		}
	}
}

func TestSummary(t *testing.T) {
	env := newEnv(t, 4096)
	long := strings.Repeat("é", 150)
	tests := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"command": "cargo test"}, "Run shell command: cargo test"},
		{map[string]any{"command": "  make\n  make install\nls\n"}, "Run shell command: make [+2 more lines]"},
		{map[string]any{"command": "a\r\nb"}, "Run shell command: a [+1 more line]"},
		{map[string]any{"command": "sleep 1", "timeout_seconds": 90}, "Run shell command: sleep 1 (timeout 90 s)"},
		{map[string]any{"command": "sleep 1", "timeout_seconds": 30}, "Run shell command: sleep 1"},
		{map[string]any{"command": long}, "Run shell command: " + strings.Repeat("é", 100) + "…"},
	}
	for _, tc := range tests {
		plan, err := newTool().Prepare(env, argsJSON(t, tc.args))
		if err != nil {
			t.Fatal(err)
		}
		if plan.Summary != tc.want || plan.Risk != protocol.RiskProcess {
			t.Errorf("summary %q (risk %s), want %q", plan.Summary, plan.Risk, tc.want)
		}
	}
}

func TestEnvironmentAndWorkspace(t *testing.T) {
	t.Setenv("SCV_BASH_TEST_VAR", "from the server")
	env := newEnv(t, 4096)
	o := runCmd(t, env, map[string]any{"command": `echo "$SCV_RUN_TAG"; echo "$SCV_BASH_TEST_VAR"; pwd; cat; echo "stdin $?"`})
	lines := strings.Split(o.res.Output, "\n")
	if len(lines) < 6 || lines[0] != "exit 0" {
		t.Fatalf("output %q", o.res.Output)
	}
	if !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(lines[1]) {
		t.Errorf("marker %q is not a uuid", lines[1])
	}
	if lines[2] != "from the server" || lines[3] != env.Workspace || lines[4] != "stdin 0" {
		t.Errorf("output %q (workspace %s)", o.res.Output, env.Workspace)
	}
}

func TestDeadlineKills(t *testing.T) {
	env := newEnv(t, 4096)
	o := runCmd(t, env, map[string]any{"command": "echo started; sleep 30", "timeout_seconds": 1})
	if o.res.Success || !strings.HasPrefix(o.res.Output, "timed out after 1 s (killed)\nstarted\n") {
		t.Fatalf("result = %+v", o.res)
	}
	if o.elapsed < time.Second || o.elapsed > 15*time.Second {
		t.Fatalf("the call took %v", o.elapsed)
	}
}

// lines collects progress lines and lets a test wait for one.
type lines struct {
	mu   sync.Mutex
	seen []string
	ch   chan string
}

func newLines() *lines { return &lines{ch: make(chan string, 1024)} }

func (l *lines) add(s string) {
	l.mu.Lock()
	l.seen = append(l.seen, s)
	l.mu.Unlock()
	select {
	case l.ch <- s:
	default:
	}
}

func (l *lines) waitPrefix(t *testing.T, prefix string) string {
	t.Helper()
	timer := time.NewTimer(hang)
	defer timer.Stop()
	for {
		select {
		case s := <-l.ch:
			if strings.HasPrefix(s, prefix) {
				return s
			}
		case <-timer.C:
			t.Fatalf("no progress line starting with %q", prefix)
			return ""
		}
	}
}

func TestCancel(t *testing.T) {
	tests := []struct {
		name    string
		command string
		// minimum is how long the call must take: the TERM grace when
		// TERM is ignored.
		minimum time.Duration
	}{
		{"TERM ends it", `echo "ready $SCV_RUN_TAG"; sleep 30`, 0},
		{"TERM ignored", `trap '' TERM; echo "ready $SCV_RUN_TAG"; sleep 30`, procgroup.DefaultTermGrace},
		{"TERM ignored in a setsid grandchild", `setsid bash -c 'trap "" TERM; echo "ready $SCV_RUN_TAG"; sleep 30' & wait`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, 4096)
			got := newLines()
			env.Progress = got.add
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := call(ctx, t, newTool(), env, map[string]any{"command": tc.command})
			tag := strings.TrimPrefix(got.waitPrefix(t, "ready "), "ready ")
			cancel()
			o := await(t, ch)
			if !errors.Is(o.err, context.Canceled) {
				t.Fatalf("Run = %+v, %v; want context.Canceled", o.res, o.err)
			}
			if o.elapsed < tc.minimum || o.elapsed > 15*time.Second {
				t.Fatalf("the cancelled call took %v, want at least %v", o.elapsed, tc.minimum)
			}
			if pids := procgroup.FindTagged(tag); len(pids) > 0 {
				t.Fatalf("processes left: %v", pids)
			}
			if files, _ := filepath.Glob(filepath.Join(env.StateDir, "spill", "*")); len(files) > 0 {
				t.Fatalf("a cancelled call left spill files: %v", files)
			}
		})
	}
}

func TestLeftoverProcessesAreKilled(t *testing.T) {
	tests := []struct {
		name  string
		start string // starts a sleep and sets p to its pid
	}{
		{"setsid grandchild", `setsid sleep 300 & p=$!`},
		{"double fork", `p=$( (setsid sleep 300 >/dev/null 2>&1 & echo $!) )`},
		{"background child", `sleep 300 >/dev/null 2>&1 & p=$!`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t, 4096)
			cmd := tc.start + `
until [ "$(cat /proc/$p/comm 2>/dev/null)" = sleep ]; do sleep 0.01; done
echo "$p $SCV_RUN_TAG"`
			o := runCmd(t, env, map[string]any{"command": cmd})
			var pid int
			var tag string
			if _, err := fmt.Sscanf(strings.TrimPrefix(o.res.Output, "exit 0\n"), "%d %s", &pid, &tag); err != nil {
				t.Fatalf("output %q: %v", o.res.Output, err)
			}
			if !o.res.Success || !strings.Contains(o.res.Output, "[1 process the command left running was killed when it ended") {
				t.Fatalf("result = %+v", o.res)
			}
			if pids := procgroup.FindTagged(tag); len(pids) > 0 {
				t.Fatalf("processes with the marker left: %v", pids)
			}
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !os.IsNotExist(err) {
				t.Fatalf("pid %d still exists", pid)
			}
		})
	}
}

func TestBackgroundChildHoldingThePipe(t *testing.T) {
	// sleep inherits stdout: without the sweep and the bounded drain the
	// call would last 300 s.
	env := newEnv(t, 4096)
	o := runCmd(t, env, map[string]any{"command": "sleep 300 & echo started"})
	if !o.res.Success || !strings.HasPrefix(o.res.Output, "exit 0\nstarted\n") {
		t.Fatalf("result = %+v", o.res)
	}
	if o.elapsed > 15*time.Second {
		t.Fatalf("the call took %v", o.elapsed)
	}
}

var truncatedMeta = regexp.MustCompile(`\[output truncated: (\d+) bytes in total, (\d+) kept: the first (\d+) and the last (\d+)\]`)

func TestHugeOutputIsBounded(t *testing.T) {
	const limit = 65536
	env := newEnv(t, limit)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	o := runCmd(t, env, map[string]any{"command": `head -c 100000000 /dev/zero | tr '\0' a`})
	runtime.ReadMemStats(&after)
	res := o.res
	if !res.Success || !res.Truncated || len(res.Output) > limit || !utf8.ValidString(res.Output) {
		t.Fatalf("success %v truncated %v, %d bytes of output", res.Success, res.Truncated, len(res.Output))
	}
	m := truncatedMeta.FindStringSubmatch(res.Output)
	if m == nil {
		t.Fatalf("no truncation metadata in %q", res.Output[len(res.Output)-600:])
	}
	total, _ := strconv.Atoi(m[1])
	kept, _ := strconv.Atoi(m[2])
	if total != 100000000 || kept > limit || kept < limit/2 {
		t.Fatalf("total %d, kept %d", total, kept)
	}
	if !strings.Contains(res.Output, fmt.Sprintf("[… %d bytes omitted …]", total-kept)) {
		t.Fatal("no omitted marker")
	}
	// Memory: the call allocated a small fraction of the output.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Fatalf("the call allocated %d bytes for 100 MB of output", alloc)
	}
	// The spill file holds the first spill_max_bytes.
	spill := regexp.MustCompile(`the full output is in (\S+);`).FindStringSubmatch(res.Output)
	if spill == nil {
		t.Fatalf("no spill path in the result")
	}
	fi, err := os.Stat(spill[1])
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != testSpillMax || fi.Mode().Perm() != 0o600 {
		t.Fatalf("spill file %v: %d bytes, mode %v", spill[1], fi.Size(), fi.Mode())
	}
	if di, err := os.Stat(filepath.Dir(spill[1])); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("spill dir: %v %v", di.Mode(), err)
	}
	if !strings.HasPrefix(spill[1], env.StateDir+"/spill/") {
		t.Fatalf("spill file %s not under the state dir", spill[1])
	}
	if !strings.Contains(res.Output, fmt.Sprintf("holds only the first %d of the 100000000 bytes", testSpillMax)) {
		t.Fatal("the result does not say the spill file was cut")
	}
}

func TestTruncatedOutputSpillsInFull(t *testing.T) {
	// seq's output is longer than the limit, shorter than the spill bound:
	// the file is the whole output, and the result shows its two ends.
	env := newEnv(t, 2048)
	o := runCmd(t, env, map[string]any{"command": "seq 1 20000"})
	var want strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&want, "%d\n", i)
	}
	res := o.res
	if !res.Truncated || len(res.Output) > 2048 || !strings.HasPrefix(res.Output, "exit 0\n1\n2\n3\n") || !strings.Contains(res.Output, "19999\n20000\n") {
		t.Fatalf("result = %q", res.Output)
	}
	spill := regexp.MustCompile(`the full output is in (\S+);`).FindStringSubmatch(res.Output)
	if spill == nil {
		t.Fatalf("no spill path in %q", res.Output)
	}
	data, err := os.ReadFile(spill[1])
	if err != nil || string(data) != want.String() {
		t.Fatalf("spill file: %d bytes, %v", len(data), err)
	}
	if strings.Contains(res.Output, "holds only") {
		t.Fatal("a complete spill file was called cut")
	}
	if !strings.Contains(res.Output, "read it with the read tool") {
		t.Fatal("the result does not say how to view the file")
	}
	// The read tool opens it, by the path the result gives (issue 14,
	// item 5).
	plan, err := read.New().Prepare(env, toolstest.Args(t, map[string]any{"path": spill[1], "offset": len("1\n2\n3\n"), "limit": 4}))
	if err != nil {
		t.Fatalf("read refused the spill file: %v", err)
	}
	if got, err := plan.Run(context.Background()); err != nil || !got.Success || !strings.HasSuffix(got.Output, "]\n4\n5\n") {
		t.Fatalf("reading the spill file: %+v, %v", got, err)
	}
}

func TestNoStateDirNoSpill(t *testing.T) {
	env := newEnv(t, 1024)
	env.StateDir = ""
	o := runCmd(t, env, map[string]any{"command": "seq 1 5000"})
	if !o.res.Truncated || len(o.res.Output) > 1024 || !strings.Contains(o.res.Output, "the full output was not kept") {
		t.Fatalf("result = %q", o.res.Output)
	}
}

func TestNonUTF8Output(t *testing.T) {
	env := newEnv(t, 4096)
	o := runCmd(t, env, map[string]any{"command": `printf 'a\xff\xfeb\n\xc3'`})
	if o.res.Output != "exit 0\na\uFFFDb\n\uFFFD" {
		t.Fatalf("output %q", o.res.Output)
	}
	// Random bytes, truncated: valid UTF-8 within the limit.
	o = runCmd(t, env, map[string]any{"command": "head -c 300000 /dev/urandom"})
	if !o.res.Truncated || len(o.res.Output) > 4096 || !utf8.ValidString(o.res.Output) {
		t.Fatalf("truncated %v, %d bytes, valid %v", o.res.Truncated, len(o.res.Output), utf8.ValidString(o.res.Output))
	}
}

func TestProgressLines(t *testing.T) {
	env := newEnv(t, 4096)
	got := newLines()
	env.Progress = got.add
	o := runCmd(t, env, map[string]any{"command": `echo first; printf '%0500d\n' 0; printf 'bar 10%%\rbar 100%%\n'; printf 'partial'`})
	if !o.res.Success {
		t.Fatalf("result %+v", o.res)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	for _, l := range got.seen {
		if len(l) > progressMax || strings.ContainsAny(l, "\r\n") {
			t.Errorf("progress line %q", l)
		}
		if l == "partial" {
			t.Error("an incomplete line was reported")
		}
	}
	if len(got.seen) == 0 || got.seen[len(got.seen)-1] != "bar 100%" {
		t.Errorf("progress lines %q, want the last to be %q", got.seen, "bar 100%")
	}
}

func TestRenderFits(t *testing.T) {
	// Every result fits the limit and is valid UTF-8, whatever the bytes.
	inputs := [][]byte{
		[]byte(strings.Repeat("é", 5000)),
		[]byte(strings.Repeat("\xff", 5000)),
		[]byte(strings.Repeat("a\xffé", 3000)),
		[]byte(strings.Repeat("日本語", 2000)),
		[]byte("short"),
		{},
	}
	for _, limit := range []int{1024, 1500, 4096} {
		for _, in := range inputs {
			checkRender(t, in, limit, 1000)
			checkRender(t, in, limit, 0)
		}
	}
	// Random mixes of ASCII, multi-byte characters and invalid bytes, at
	// sizes around the limit.
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "\n", "é", "日", "\U0001F600", "\xff", "\xe6\x97", "\x80"}
	for range 300 {
		limit := 1024 + rng.IntN(3000)
		var b strings.Builder
		for n := rng.IntN(3 * limit); b.Len() < n; {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		checkRender(t, []byte(b.String()), limit, 1+rng.IntN(700))
	}
}

func FuzzRender(f *testing.F) {
	f.Add([]byte("hello\n"), 1024)
	f.Add([]byte(strings.Repeat("\xe6\x97\xa5", 700)), 1100)
	f.Add([]byte(strings.Repeat("ab\xff", 800)), 1030)
	f.Fuzz(func(t *testing.T, in []byte, limit int) {
		limit = 1024 + abs(limit)%4096
		checkRender(t, in, limit, 0)
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func checkRender(t *testing.T, in []byte, limit int, chunk int) {
	t.Helper()
	c := newCapture(limit, "", 0)
	if chunk <= 0 {
		chunk = len(in) + 1
	}
	for rest := in; len(rest) > 0; {
		n := min(chunk, len(rest))
		_, _ = c.Write(rest[:n])
		rest = rest[n:]
	}
	res := render(procgroup.Status{Exited: true}, c, time.Second, limit, limits{}, "")
	if len(res.Output) > limit || !utf8.ValidString(res.Output) {
		t.Fatalf("limit %d, %d input bytes: %d output bytes, valid %v", limit, len(in), len(res.Output), utf8.ValidString(res.Output))
	}
	if !res.Truncated && res.Output != "exit 0\n"+spill.Valid(in) && len(in) > 0 {
		t.Fatalf("untruncated output %q differs from the input", res.Output)
	}
	if res.Truncated {
		m := truncatedMeta.FindStringSubmatch(res.Output)
		if m == nil || m[1] != strconv.Itoa(len(in)) {
			t.Fatalf("metadata %v for %d bytes", m, len(in))
		}
	}
}

func TestCancelledBeforeRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o := await(t, call(ctx, t, newTool(), newEnv(t, 4096), map[string]any{"command": "true"}))
	if !errors.Is(o.err, context.Canceled) {
		t.Fatalf("Run = %+v, %v", o.res, o.err)
	}
}

func TestWorkspaceGone(t *testing.T) {
	env := newEnv(t, 4096)
	env.Workspace = filepath.Join(env.Workspace, "missing")
	o := runCmd(t, env, map[string]any{"command": "true"})
	if o.res.Success || !strings.Contains(o.res.Output, "could not run /bin/bash") {
		t.Fatalf("result = %+v", o.res)
	}
}

// TestMemoryLimit: a command that allocates past tools.memory_limit_mb
// fails, and the result says why; one within it runs (issue 14, item 21).
func TestMemoryLimit(t *testing.T) {
	// Not parallel: await checks the process has no children left.
	env := newEnv(t, 4096)
	// A small limit, so bash reaches it quickly even on a loaded machine.
	tool := New(Options{MemoryLimitMB: 64})
	o := await(t, call(context.Background(), t, tool, env, map[string]any{
		"command": `x=$(head -c 100000000 /dev/zero | tr '\0' a); echo ${#x}`}))
	if o.err != nil || o.res.Success || !strings.Contains(o.res.Output, "ran out of memory: each of its processes may use at most 64 MiB of address space (tools.memory_limit_mb)") {
		t.Fatalf("result %+v, %v", o.res, o.err)
	}
	o = await(t, call(context.Background(), t, tool, env, map[string]any{
		"command": `x=$(head -c 1000000 /dev/zero | tr '\0' a); echo ${#x}; grep 'Max address space' /proc/self/limits`}))
	if o.err != nil || !o.res.Success || !strings.Contains(o.res.Output, "1000000\n") || !strings.Contains(o.res.Output, strconv.Itoa(64<<20)) {
		t.Fatalf("result %+v, %v", o.res, o.err)
	}
}

// TestProcessLimit: a fork loop is stopped at tools.max_processes, with a
// clear result, and leaves nothing running (issue 14, item 2).
func TestProcessLimit(t *testing.T) {
	// Not parallel: await checks the process has no children left.
	env := newEnv(t, 4096)
	tool := New(Options{MaxProcesses: 30})
	o := await(t, call(context.Background(), t, tool, env, map[string]any{
		"command": `while true; do setsid env -i /bin/sleep 300 & done`, "timeout_seconds": 60}))
	if o.err != nil || o.res.Success || !strings.HasPrefix(o.res.Output, "killed: too many processes\n") ||
		!strings.Contains(o.res.Output, "more than 30 processes alive at once (tools.max_processes)") {
		t.Fatalf("result %+v, %v", o.res, o.err)
	}
	// The session's limit is free again: a later command runs.
	o = await(t, call(context.Background(), t, tool, env, map[string]any{"command": "echo fine"}))
	if o.err != nil || !o.res.Success {
		t.Fatalf("result %+v, %v", o.res, o.err)
	}
}

// TestProcessTreeIsRecordedWhileItRuns: with TreesDir set, the command's
// tree is recorded (its tag, this server as the owner) before it starts,
// so a SIGKILLed server's tree can be reaped by the next one, and the
// record is gone once the call returns.
func TestProcessTreeIsRecordedWhileItRuns(t *testing.T) {
	env := newEnv(t, 4096)
	dir := filepath.Join(t.TempDir(), "trees")
	tool := New(Options{DefaultTimeout: 30 * time.Second, MaxTimeout: 120 * time.Second, TreesDir: dir})
	o := await(t, call(context.Background(), t, tool, env, map[string]any{"command": `echo "$SCV_RUN_TAG"; cat "` + dir + `/$SCV_RUN_TAG.json"`}))
	if o.err != nil {
		t.Fatal(o.err)
	}
	lines := strings.Split(o.res.Output, "\n")
	if len(lines) < 3 {
		t.Fatalf("output %q", o.res.Output)
	}
	var rec records.Tree
	if err := json.Unmarshal([]byte(lines[2]), &rec); err != nil {
		t.Fatalf("the record the command saw: %q: %v", lines[2], err)
	}
	self, _ := records.Self()
	if rec.Tag != lines[1] || rec.Owner != self || rec.What != "bash" {
		t.Fatalf("record %+v, want tag %s and owner %+v", rec, lines[1], self)
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("records left after the call: %v, %v", ents, err)
	}
}
