package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/agents"
	"github.com/scv-cli/scv/scv-server/internal/agents/runner"
	"github.com/scv-cli/scv/scv-server/internal/tools/toolstest"
	"github.com/scv-cli/scv/shared/agentadapters"
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
	script := abs(t, "../../agents/runner/testdata/fake-agent.sh")
	var adapters []agentadapters.Adapter
	for _, a := range agentadapters.All() {
		a.Path, a.PreArgs = "/bin/bash", []string{script}
		adapters = append(adapters, a)
	}
	home, out := t.TempDir(), t.TempDir()
	base := append([]string{"PATH=" + os.Getenv("PATH"), "FAKE_DIR=" + out, "FAKE_STREAM=" + abs(t, "../../agents/output/testdata/"+stream)}, extra...)
	r := runner.New(runner.Options{Home: home, BaseEnv: base, Adapters: adapters, OutputLimit: 64 << 10})
	var bs []agents.Backend
	for _, n := range []string{"claude", "codex"} {
		b, ok := r.Backend(n)
		if !ok {
			t.Fatalf("no backend %s", n)
		}
		bs = append(bs, b)
	}
	env := toolstest.Env(t, map[string]string{"proj/": ""})
	s := New(Options{Backends: bs, Prefer: []string{"codex"}, Workspace: env.Workspace, SessionID: "s1", MaxDepth: 2, MaxBackground: 2, Host: newHost()})
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
	script := abs(t, "../../agents/runner/testdata/fake-agent.sh")
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
	if !strings.Contains(args, "exec resume") || !strings.HasSuffix(args, thread+" Now the docs.") {
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
	if res.Success || r.Status != agents.StatusFailed || r.Fallback != "This agent could not run: it is missing, signed out, or its provider returned an error. Other agents are available: claude. Call agent again with one of them." {
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
	if v.Status != agents.StatusCancelled || v.Result == nil || v.Result.Status != agents.StatusCancelled {
		t.Fatalf("cancel %+v", v)
	}
}
