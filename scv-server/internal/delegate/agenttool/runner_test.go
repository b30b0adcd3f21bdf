package agenttool

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/jobs/jobstest"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport/oneshot"
	"github.com/scv-cli/scv/scv-server/internal/tools/toolstest"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/records"
)

// realSet is a Set over the real one-process-per-turn backend, whose
// adapters run the runner's fake agent script through /bin/bash (never a
// freshly written file), printing the canned stream FAKE_STREAM.
type realSet struct {
	set  *Set
	out  string // FAKE_DIR: the script writes its arguments there
	home string
}

func abs(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newRealSet(t *testing.T, stream string, extra ...string) (*realSet, *Set) {
	t.Helper()
	return newRealSetOf(t, []string{"claude", "codex"}, stream, extra...)
}

// newRealSetOf is newRealSet offering the agents names.
func newRealSetOf(t *testing.T, names []string, stream string, extra ...string) (*realSet, *Set) {
	t.Helper()
	script := abs(t, "../transport/oneshot/testdata/fake-agent.sh")
	var fakes []adapters.Adapter
	for _, a := range adapters.All() {
		a.Path, a.PreArgs, a.Env = "/bin/bash", []string{script}, []string{"FAKE_*"}
		fakes = append(fakes, a)
	}
	home, out := t.TempDir(), t.TempDir()
	base := append([]string{"PATH=" + os.Getenv("PATH"), "FAKE_DIR=" + out, "FAKE_STREAM=" + abs(t, "../output/testdata/"+stream)}, extra...)
	r := oneshot.New(oneshot.Options{Home: home, BaseEnv: base, Adapters: fakes, OutputLimit: 64 << 10})
	var bs []delegate.Backend
	for _, n := range names {
		b, ok := r.Backend(n)
		if !ok {
			t.Fatalf("no backend %s", n)
		}
		bs = append(bs, b)
	}
	env := toolstest.Env(t, map[string]string{"proj/": ""})
	s := New(Options{Backends: bs, Prefer: names[len(names)-1:], Workspace: env.Workspace, SessionID: "s1", MaxDepth: 2, MaxBackground: 2, Host: jobstest.New()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		s.Close(ctx)
	})
	return &realSet{set: s, out: out, home: home}, s
}

func (rs *realSet) args(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rs.out, "args"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// TestWithRunner runs a Codex conversation through the real backend: the
// summary shows what launches, the thread id the stream reports is resumed
// on the next turn, and the model only ever sees the handle.
func TestWithRunner(t *testing.T) {
	rs, s := newRealSet(t, "codex/success.jsonl")
	fx := &fixture{t: t, set: s, env: toolstest.Env(t, nil)}
	p, err := fx.prepare(NameAgent, map[string]any{"prompt": "Land the fix.", "cwd": "proj"})
	if err != nil {
		t.Fatal(err)
	}
	script := abs(t, "../transport/oneshot/testdata/fake-agent.sh")
	if want := "agent codex: Launch /bin/bash with args [" + `"` + script + `" "exec" "--json" "-o" `; !strings.HasPrefix(p.Summary, want) {
		t.Fatalf("summary %q\nwant prefix %q", p.Summary, want)
	}
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := result(t, res)
	if !res.Success || r.Reply != "Updated main.go; tests pass." || r.Session != "codex-1" || r.Turn != 1 {
		t.Fatalf("first turn %s", res.Output)
	}
	const thread = "0199a213-81c0-7800-8aa1-bbab2a035a53"
	if strings.Contains(res.Output, thread) {
		t.Fatalf("the thread id reached the model: %s", res.Output)
	}
	res = fx.call(NameAgent, map[string]any{"session": "codex-1", "prompt": "Now the docs."})
	if r := result(t, res); r.Turn != 2 || r.Session != "codex-1" {
		t.Fatalf("second turn %s", res.Output)
	}
	args := strings.Join(rs.args(t), " ")
	if !strings.HasPrefix(args, "exec ") || !strings.HasSuffix(args, "resume "+thread+" Now the docs.") {
		t.Fatalf("second turn's arguments %q", args)
	}
}

// TestWithRunnerFallback: a provider error the stream reports (HTTP 429)
// fails the call with the fallback naming the other agent.
func TestWithRunnerFallback(t *testing.T) {
	_, s := newRealSet(t, "codex/failure.jsonl", "FAKE_MODE=fail")
	fx := &fixture{t: t, set: s, env: toolstest.Env(t, nil)}
	res := fx.call(NameAgent, map[string]any{"prompt": "x"})
	r := result(t, res)
	if res.Success || r.Status != delegate.StatusFailed || r.Fallback != "This agent could not run: it is missing, signed out, or its provider returned an error. Other agents are available: claude. Call agent again with one of them." {
		t.Fatalf("result %s", res.Output)
	}
}

// TestWithRunnerCancelJob cancels a background job whose agent hangs: the
// process group is stopped and the job ends cancelled.
func TestWithRunnerCancelJob(t *testing.T) {
	_, s := newRealSet(t, "codex/success.jsonl", "FAKE_MODE=hang")
	fx := &fixture{t: t, set: s, env: toolstest.Env(t, nil)}
	fx.call(NameAgent, map[string]any{"agent": "claude", "prompt": "x", "background": true})
	// Wait until the agent runs (its first progress line).
	deadline := time.Now().Add(hang)
	for {
		v := view(t, fx.call(NameStatus, map[string]any{"job": "job-1"}))
		if v.Progress != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent did not start")
		}
		time.Sleep(20 * time.Millisecond) // polling a real process's progress; not synchronization of our own code
	}
	v := view(t, fx.call(NameCancel, map[string]any{"job": "job-1"}))
	if v.Status != delegate.StatusCancelled || v.Result == nil || v.Result.Status != delegate.StatusCancelled {
		t.Fatalf("cancel %+v", v)
	}
}

// TestWithRunnerConversationContinues runs two turns of a Claude and a pi
// conversation through the real backend, with fake CLIs that behave like
// the real ones (pi's stream reports an id of its own, not the name of the
// session file SCV chose): the second turn resumes the session of the
// first, so the agent sees the earlier turn, and the marker names it.
func TestWithRunnerConversationContinues(t *testing.T) {
	for _, tc := range []struct{ agent, mode string }{{"claude", "claude-session"}, {"pi", "pi-session"}} {
		t.Run(tc.agent, func(t *testing.T) {
			rs, s := newRealSetOf(t, []string{"codex", tc.agent}, "claude/success.jsonl", "FAKE_MODE="+tc.mode)
			fx := &fixture{t: t, set: s, env: toolstest.Env(t, nil)}
			res := fx.call(NameAgent, map[string]any{"agent": tc.agent, "prompt": "Start."})
			if r := result(t, res); !res.Success || r.Reply != "0 earlier turns" || r.Session != tc.agent+"-1" || r.Turn != 1 {
				t.Fatalf("first turn %s", res.Output)
			}
			first := rs.args(t)
			ms, err := records.Markers(rs.home)
			if err != nil || len(ms) != 1 {
				t.Fatalf("markers after the first turn %v, %v", ms, err)
			}
			id := ms[0].CLISession
			if !slices.ContainsFunc(first, func(a string) bool { return strings.Contains(a, id) }) {
				t.Errorf("the marker %s names no session of the first turn's arguments %q", id, first)
			}
			res = fx.call(NameAgent, map[string]any{"session": tc.agent + "-1", "prompt": "Continue."})
			if r := result(t, res); !res.Success || r.Reply != "1 earlier turns" || r.Session != tc.agent+"-1" || r.Turn != 2 {
				t.Fatalf("second turn %s; want it to see the first", res.Output)
			}
			second := rs.args(t)
			if !slices.ContainsFunc(second, func(a string) bool { return strings.Contains(a, id) }) {
				t.Errorf("second turn's arguments %q do not resume %s", second, id)
			}
			if ms, err := records.Markers(rs.home); err != nil || len(ms) != 1 || ms[0].CLISession != id {
				t.Errorf("markers after the second turn %v, %v", ms, err)
			}
		})
	}
}

// TestWithRunnerFailedFirstTurnIsForgotten: a first turn whose CLI exited
// before it reported a session (here signed out) ends the conversation,
// so a call that passes its handle is refused instead of resuming a
// session that never existed.
func TestWithRunnerFailedFirstTurnIsForgotten(t *testing.T) {
	for _, agent := range []string{"claude", "pi"} {
		t.Run(agent, func(t *testing.T) {
			rs, s := newRealSetOf(t, []string{"codex", agent}, "", "FAKE_MODE=fail", "FAKE_STREAM=/dev/null", "FAKE_ERR=Not logged in · Please run /login")
			fx := &fixture{t: t, set: s, env: toolstest.Env(t, nil)}
			res := fx.call(NameAgent, map[string]any{"agent": agent, "prompt": "Start."})
			r := result(t, res)
			if res.Success || r.Status != delegate.StatusFailed || r.Session != "" || r.Turn != 0 {
				t.Fatalf("failed first turn %s; want no session", res.Output)
			}
			_, err := fx.prepare(NameAgent, map[string]any{"session": agent + "-1", "prompt": "Continue."})
			if err == nil || !strings.Contains(err.Error(), "has ended") {
				t.Fatalf("continuing the failed conversation: %v; want a refusal", err)
			}
			if ms, err := records.Markers(rs.home); err != nil || len(ms) != 0 {
				t.Errorf("markers after the failed turn %v, %v", ms, err)
			}
		})
	}
}
