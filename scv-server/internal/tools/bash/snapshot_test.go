//go:build linux

package bash

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/procgroup"
)

// slowProfile is a .bash_profile that costs half a second, counts its
// runs in a file, and sets what a call must see: an exported variable, a
// plain variable, a function, an alias (with expand_aliases), a umask
// and a changed PATH.
const slowProfile = `sleep 0.5
echo run >>"$HOME/profile-runs"
echo "profile says hello"
export FROM_PROFILE="a value with 'quotes' and
a newline"
PLAIN_VAR=plain
greet() { echo "hello from $1"; }
shopt -s expand_aliases
alias ll='echo aliased'
umask 027
export PATH="$HOME/bin:$PATH"
`

// profileHome makes HOME a directory with profile as its .bash_profile
// for the test (the process's environment: the tool reads os.Environ).
func profileHome(t *testing.T, profile string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte(profile), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	return home
}

func profileRuns(t *testing.T, home string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "profile-runs"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

func TestSnapshotOneProfileRunForManyCalls(t *testing.T) {
	// Not parallel: it sets HOME.
	home := profileHome(t, slowProfile)
	env := newEnv(t, 1<<16)
	tool := newTool()
	const calls = 5
	for i := range calls {
		o := await(t, call(context.Background(), t, tool, env, map[string]any{
			"command": `printf '%s|%s|' "$FROM_PROFILE" "$PLAIN_VAR"; greet call; ll; umask; shopt -q login_shell && echo login || echo nonlogin; echo "$PATH" | cut -d: -f1; declare -F greet; [ -z "$BASH_ENV" ] && echo no-bash-env; bash -c 'type greet >/dev/null 2>&1 && echo leaked || echo child-clean; echo "child:$FROM_PROFILE" | head -1'`,
		}))
		if o.err != nil || !o.res.Success {
			t.Fatalf("call %d: %+v %v", i, o.res, o.err)
		}
		want := "exit 0\na value with 'quotes' and\na newline|plain|hello from call\naliased\n0027\nnonlogin\n" + home + "/bin\ngreet\nno-bash-env\nchild-clean\nchild:a value with 'quotes' and\n"
		if o.res.Output != want {
			t.Fatalf("call %d output:\n%s\nwant:\n%s", i, o.res.Output, want)
		}
	}
	if n := profileRuns(t, home); n != 1 {
		t.Fatalf("the profile ran %d times for %d calls, want 1", n, calls)
	}
}

func TestSnapshotRefreshesWhenTheProfileChanges(t *testing.T) {
	home := profileHome(t, "echo run >>\"$HOME/profile-runs\"\nexport V=one\n")
	env := newEnv(t, 1<<16)
	tool := newTool()
	echoV := map[string]any{"command": `echo "$V"`}
	if o := await(t, call(context.Background(), t, tool, env, echoV)); o.res.Output != "exit 0\none\n" {
		t.Fatalf("first call: %+v %v", o.res, o.err)
	}
	// A different size, so the change shows even within the mtime's
	// granularity.
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("echo run >>\"$HOME/profile-runs\"\nexport V=two-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if o := await(t, call(context.Background(), t, tool, env, echoV)); o.res.Output != "exit 0\ntwo-2\n" {
			t.Fatalf("after the edit: %+v %v", o.res, o.err)
		}
	}
	if n := profileRuns(t, home); n != 2 {
		t.Fatalf("the profile ran %d times, want 2 (one per version)", n)
	}
}

func TestSnapshotFallsBackWhenTheProfileHangs(t *testing.T) {
	home := profileHome(t, "echo run >>\"$HOME/profile-runs\"\nsleep 1\nexport V=slow\n")
	env := newEnv(t, 1<<16)
	tool := New(Options{DefaultTimeout: 30 * time.Second, MaxTimeout: 120 * time.Second, SnapshotTimeout: 200 * time.Millisecond})
	o := await(t, call(context.Background(), t, tool, env, map[string]any{"command": `echo "$V"; shopt -q login_shell && echo login`}))
	if o.err != nil || !o.res.Success || !strings.HasPrefix(o.res.Output, "exit 0\nslow\nlogin\n") ||
		!strings.Contains(o.res.Output, "did not finish in time") || !strings.Contains(o.res.Output, "bash -lc") {
		t.Fatalf("first call: %+v %v", o.res, o.err)
	}
	// Later calls use bash -lc without a new attempt or a new warning.
	o = await(t, call(context.Background(), t, tool, env, map[string]any{"command": `echo "$V"`}))
	if o.res.Output != "exit 0\nslow\n" {
		t.Fatalf("second call: %+v %v", o.res, o.err)
	}
	// One attempt (its login shell killed, perhaps before the profile
	// wrote), then the two calls' own login shells.
	if n := profileRuns(t, home); n < 2 || n > 3 || tool.snap.runs != 1 {
		t.Fatalf("the profile ran %d times in %d snapshot attempts, want 2 or 3 in 1", n, tool.snap.runs)
	}
}

// TestSnapshotWarm: a warm-up (taken while a call waits for approval)
// runs the profile once; the call that arrives meanwhile waits for it
// rather than running the profile again, and later warm-ups do nothing.
func TestSnapshotWarm(t *testing.T) {
	home := profileHome(t, slowProfile)
	env := newEnv(t, 1<<16)
	tool := newTool()
	warmed := make(chan struct{})
	go func() {
		defer close(warmed)
		tool.Warm(context.Background(), env)
	}()
	// The call comes while the profile (half a second) runs.
	time.Sleep(100 * time.Millisecond)
	select {
	case <-warmed:
		t.Fatal("the warm-up ended before its profile could have run")
	default:
	}
	o := await(t, call(context.Background(), t, tool, env, map[string]any{"command": `echo "$PLAIN_VAR"`}))
	<-warmed
	if o.err != nil || o.res.Output != "exit 0\nplain\n" {
		t.Fatalf("the call: %+v %v", o.res, o.err)
	}
	tool.Warm(context.Background(), env)
	if n := profileRuns(t, home); n != 1 || tool.snap.runs != 1 {
		t.Fatalf("the profile ran %d times in %d snapshots, want once", n, tool.snap.runs)
	}
	// A warm-up alone leaves the snapshot the calls use.
	fresh := newTool()
	fresh.Warm(context.Background(), env)
	if n := profileRuns(t, home); n != 2 || !fresh.snap.made || fresh.snap.path == "" {
		t.Fatalf("a warm-up alone: profile runs %d, made %v, path %q; want a snapshot", n, fresh.snap.made, fresh.snap.path)
	}
}

// TestSnapshotWarmCancelled: a warm-up cut short (the turn ended) leaves
// no snapshot and no warning; the next call takes the snapshot itself.
// A warm-up whose login shell fails hands its warning to the next call.
func TestSnapshotWarmCancelled(t *testing.T) {
	profileHome(t, slowProfile)
	env := newEnv(t, 1<<16)
	tool := newTool()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	tool.Warm(ctx, env)
	checkNoChildren(t)
	if tool.snap.made || tool.snap.warning != "" {
		t.Fatalf("after a cancelled warm-up: made %v, warning %q", tool.snap.made, tool.snap.warning)
	}
	// A second warm-up of the session is skipped: the profile is slower
	// than its turns.
	tool.Warm(context.Background(), env)
	if tool.snap.made || tool.snap.runs != 1 {
		t.Fatalf("a warm-up after one was cut short ran (%d attempts)", tool.snap.runs)
	}
	o := await(t, call(context.Background(), t, tool, env, map[string]any{"command": `echo "$PLAIN_VAR"`}))
	if o.err != nil || o.res.Output != "exit 0\nplain\n" || tool.snap.runs != 2 {
		t.Fatalf("the call: %+v %v (%d snapshot attempts, want 2)", o.res, o.err, tool.snap.runs)
	}

	profileHome(t, "exit 3\n")
	failing := newTool()
	failing.Warm(context.Background(), env)
	o = await(t, call(context.Background(), t, failing, env, map[string]any{"command": `echo hi`}))
	if !strings.Contains(o.res.Output, "could not be captured") {
		t.Fatalf("the call after a failed warm-up: %+v %v; want the warning", o.res, o.err)
	}
	o = await(t, call(context.Background(), t, failing, env, map[string]any{"command": `echo hi`}))
	if strings.Contains(o.res.Output, "could not be captured") || failing.snap.runs != 1 {
		t.Fatalf("the second call: %+v (%d attempts); want no second warning and one attempt", o.res, failing.snap.runs)
	}
}

func TestSnapshotFallsBackWhenTheProfileExits(t *testing.T) {
	profileHome(t, "export V=set\n[ -n \"$SCV_TEST_NO_EXIT\" ] || exit 3\n")
	env := newEnv(t, 1<<16)
	o := await(t, call(context.Background(), t, newTool(), env, map[string]any{"command": `echo "$V"`}))
	// bash -lc itself ends at the profile's exit: the command sees what
	// it always saw.
	if o.err != nil || !strings.HasPrefix(o.res.Output, "exit 3\n") || !strings.Contains(o.res.Output, "does the profile call exit?") {
		t.Fatalf("%+v %v", o.res, o.err)
	}
}

func TestSnapshotKeepsSCVEnvironmentRules(t *testing.T) {
	profileHome(t, "export FROM_PROFILE=1\n")
	t.Setenv("SCV_TEST_SECRET", "hidden")
	t.Setenv(procgroup.TagVar, "outer-tag")
	env := newEnv(t, 1<<16)
	tool := New(Options{DefaultTimeout: 30 * time.Second, MaxTimeout: 120 * time.Second,
		HideEnv: []string{"SCV_TEST_SECRET"}, MemoryLimitMB: 4096})
	var tags []string
	for range 2 {
		o := await(t, call(context.Background(), t, tool, env, map[string]any{
			"command": `echo "secret=${SCV_TEST_SECRET-unset} profile=$FROM_PROFILE"; echo "$` + procgroup.TagVar + `"; ulimit -v`,
		}))
		lines := strings.Split(o.res.Output, "\n")
		if o.err != nil || len(lines) < 4 || lines[1] != "secret=unset profile=1" || lines[3] != "4194304" {
			t.Fatalf("%+v %v", o.res, o.err)
		}
		tag, outer, ok := strings.Cut(lines[2], ",")
		if !ok || outer != "outer-tag" || tag == "" {
			t.Fatalf("run tag %q, want the call's own tag then outer-tag", lines[2])
		}
		tags = append(tags, tag)
	}
	if tags[0] == tags[1] {
		t.Fatalf("two calls share the run tag %q: the snapshot carried one over", tags[0])
	}
}

func FuzzParseDump(f *testing.F) {
	f.Add([]byte("noise\nM\x00umask\x00umask 0022\n\x00opts\x00shopt -u x\n\x00funcs\x00\x00aliases\x00\x00var\x00A\x00declare -x A=\"1\"\n\x00end\x00"))
	f.Add([]byte("\nM\x00var\x00A"))
	f.Add([]byte("\nM\x00what\x00"))
	f.Fuzz(func(t *testing.T, out []byte) {
		st, err := parseDump(out, "M")
		if (st == nil) == (err == nil) {
			t.Fatalf("state %v with error %v", st, err)
		}
		if st != nil {
			renderSnapshot(st, &shellState{vars: map[string]string{}})
		}
	})
}

func TestSnapshotUnsetAndExportedFunctions(t *testing.T) {
	profileHome(t, "unset -v SCV_TEST_DROPPED\nshared() { echo shared-fn; }\nexport -f shared\nset -o pipefail\n")
	t.Setenv("SCV_TEST_DROPPED", "inherited")
	env := newEnv(t, 1<<16)
	tool := newTool()
	for range 2 {
		o := await(t, call(context.Background(), t, tool, env, map[string]any{
			"command": `echo "dropped=${SCV_TEST_DROPPED-unset}"; bash -c shared; false | true; echo "pipefail=$?"`,
		}))
		if o.err != nil || o.res.Output != "exit 0\ndropped=unset\nshared-fn\npipefail=1\n" {
			t.Fatalf("%+v %v", o.res, o.err)
		}
	}
	if tool.snap.runs != 1 || tool.snap.path == "" {
		t.Fatalf("%d snapshots, path %q: want one snapshot in use", tool.snap.runs, tool.snap.path)
	}
}

func TestSnapshotOffRunsALoginShellPerCall(t *testing.T) {
	home := profileHome(t, "echo run >>\"$HOME/profile-runs\"\nexport V=from-profile\n")
	env := newEnv(t, 1<<16)
	// tools.login_snapshot = false gives the tool a negative timeout.
	tool := New(Options{DefaultTimeout: 30 * time.Second, MaxTimeout: 120 * time.Second, SnapshotTimeout: -1})
	for range 3 {
		o := await(t, call(context.Background(), t, tool, env, map[string]any{"command": `echo "$V"; shopt -q login_shell && echo login`}))
		if o.err != nil || o.res.Output != "exit 0\nfrom-profile\nlogin\n" {
			t.Fatalf("%+v %v", o.res, o.err)
		}
	}
	if n := profileRuns(t, home); n != 3 || tool.snap.runs != 0 {
		t.Fatalf("the profile ran %d times with %d snapshots, want 3 and none", n, tool.snap.runs)
	}
}
