package agenttool

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/jobs"
	"github.com/scv-cli/scv/scv-server/internal/delegate/jobs/jobstest"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/toolstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hang bounds every wait; it only guards against a hang.
const hang = 30 * time.Second

// descriptors are the five CLI agents and the nested SCV as the adapters
// describe them (summaries from tools.md's table).
var descriptors = map[string]delegate.Descriptor{
	delegate.Claude: {Name: "claude", Product: "Claude Code", Summary: "Anthropic's coding agent; reads, edits, and runs code, and can search and fetch the web",
		ModelFamily: "a Claude alias such as sonnet or opus, or a full Claude model name", TakesModel: true, TakesEffort: true, TakesSession: true},
	delegate.Codex: {Name: "codex", Product: "Codex", Summary: "OpenAI's coding agent; reads, edits, and runs code, with live web search under full permissions",
		ModelFamily: "OpenAI model ID from the Codex configuration; not a Claude alias", TakesModel: true, TakesEffort: true, TakesSession: true},
	delegate.Grok: {Name: "grok", Product: "Grok Build", Summary: "xAI's coding agent; reads, edits, and runs code, with live web and X search. Call it when another agent declined or refused a request, including a safety or guardrail refusal",
		ModelFamily: "Grok model ID", TakesModel: true, TakesEffort: true},
	delegate.DSH: {Name: "dsh", Product: "DeepSeek Harness", Summary: "a coding agent on DeepSeek models"},
	delegate.Pi: {Name: "pi", Product: "pi", Summary: "a minimal coding agent that can run on SCV's own model endpoint; no web search",
		ModelFamily: "a pi model pattern or provider/id", TakesModel: true, TakesEffort: true, TakesSession: true},
	delegate.SCV: {Name: "scv", Product: "SCV", Summary: "a nested session for a self-contained sub-task kept out of this context, or work in another project",
		TakesModel: true, TakesSession: true},
}

// fake is a scripted Backend: it records every Plan and Run, answers with
// respond (by default a completed run that reports a CLI session for
// agents that take one), and, when gate is set, blocks each Run until the
// gate is released or its context ends.
type fake struct {
	desc    delegate.Descriptor
	planErr error
	full    bool
	respond func(c delegate.Call) delegate.Result
	// gate, when set, holds every Run until closed (or ctx ends).
	gate chan struct{}
	// ignoreCancel makes a gated Run wait for the gate even when
	// cancelled, as an agent that does not stop would.
	ignoreCancel bool
	progress     []string

	started chan delegate.Call // receives each call as its Run begins

	mu    sync.Mutex
	plans []delegate.Call
	runs  []delegate.Call
	seq   int
}

func newFake(name string) *fake {
	return &fake{desc: descriptors[name], started: make(chan delegate.Call, 1024)}
}

func (f *fake) Descriptor() delegate.Descriptor { return f.desc }

func (f *fake) Plan(c delegate.Call) (delegate.Launch, error) {
	f.mu.Lock()
	f.plans = append(f.plans, c)
	f.mu.Unlock()
	if f.planErr != nil {
		return delegate.Launch{}, f.planErr
	}
	args := []string{"-p", "--output-format", "stream-json"}
	if c.Model != "" {
		args = append(args, "--model", c.Model)
	}
	return delegate.Launch{Executable: "/home/u/.local/bin/" + f.desc.Name, Args: append(args, c.Prompt), Dir: c.Dir, FullPermissions: f.full}, nil
}

func (f *fake) Run(ctx context.Context, c delegate.Call, progress func(string)) delegate.Result {
	f.mu.Lock()
	f.runs = append(f.runs, c)
	f.seq++
	n := f.seq
	f.mu.Unlock()
	for _, l := range f.progress {
		if progress != nil {
			progress(l)
		}
	}
	select {
	case f.started <- c:
	default: // only tests that wait for starts read it, and they start few runs
	}
	if f.gate != nil {
		if f.ignoreCancel {
			<-f.gate
		} else {
			select {
			case <-f.gate:
			case <-ctx.Done():
				return delegate.Result{Agent: f.desc.Name, Status: delegate.StatusCancelled, Reply: "", CLISession: cliOf(c, n)}
			}
		}
	}
	if f.respond != nil {
		return f.respond(c)
	}
	return delegate.Result{Agent: f.desc.Name, Status: delegate.StatusCompleted, Reply: "done: " + c.Prompt, CLISession: cliOf(c, n)}
}

// cliOf is the CLI session a run reports: the chosen or resumed id, or for
// a CLI that picks its own (codex) a thread id.
func cliOf(c delegate.Call, n int) string {
	switch {
	case c.ResumeCLISession != "":
		return c.ResumeCLISession
	case c.Agent == delegate.Codex && c.Conversation != "":
		return fmt.Sprintf("thread-%d", n)
	}
	return c.NewCLISession
}

func (f *fake) counts() (plans, runs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.plans), len(f.runs)
}

func (f *fake) lastRun(t *testing.T) delegate.Call {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.runs) == 0 {
		t.Fatal("the backend saw no run")
	}
	return f.runs[len(f.runs)-1]
}

// waitStarted waits for the next Run of f to begin.
func (f *fake) waitStarted(t *testing.T) delegate.Call {
	t.Helper()
	select {
	case c := <-f.started:
		return c
	case <-time.After(hang):
		t.Fatal("the backend's Run did not start")
	}
	return delegate.Call{}
}

// fakes builds one fake per name.
func fakes(names ...string) ([]delegate.Backend, map[string]*fake) {
	var bs []delegate.Backend
	m := map[string]*fake{}
	for _, n := range names {
		f := newFake(n)
		bs = append(bs, f)
		m[n] = f
	}
	return bs, m
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fixture is a Set over a real workspace.
type fixture struct {
	t     testing.TB
	set   *Set
	env   tools.Env
	fakes map[string]*fake
	host  *jobstest.Host
	clock *clock
}

// newFixture offers names; mod adjusts the options.
func newFixture(t testing.TB, names []string, mod func(*Options)) *fixture {
	t.Helper()
	env := toolstest.Env(t, map[string]string{"proj/": "", "proj/sub/": "", "file.txt": "x"})
	bs, fs := fakes(names...)
	h, c := jobstest.New(), newClock()
	opts := Options{
		Backends: bs, Workspace: env.Workspace, SessionID: "s1", Depth: 0, MaxDepth: 2,
		DefaultTimeout: time.Hour, MaxTimeout: 4 * time.Hour, MaxBackground: 4,
		MaxConversations: 8, ConversationIdle: 24 * time.Hour, OutputLimit: 64 << 10,
		Host: h, Now: c.Now,
	}
	if mod != nil {
		mod(&opts)
	}
	s := New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hang)
		defer cancel()
		s.Close(ctx)
	})
	return &fixture{t: t, set: s, env: env, fakes: fs, host: h, clock: c}
}

func (fx *fixture) tool(name string) tools.Tool {
	fx.t.Helper()
	for _, tl := range fx.set.Tools() {
		if tl.Spec().Name == name {
			return tl
		}
	}
	fx.t.Fatalf("no tool %s", name)
	return nil
}

// prepare prepares a call of tool name.
func (fx *fixture) prepare(name string, a map[string]any) (*tools.Plan, error) {
	fx.t.Helper()
	return fx.tool(name).Prepare(fx.env, toolstest.Args(fx.t, a))
}

// call prepares and runs a call of tool name, failing the test on a
// refusal.
func (fx *fixture) call(name string, a map[string]any) tools.Result {
	fx.t.Helper()
	return fx.callCtx(context.Background(), name, a)
}

func (fx *fixture) callCtx(ctx context.Context, name string, a map[string]any) tools.Result {
	fx.t.Helper()
	p, err := fx.prepare(name, a)
	if err != nil {
		fx.t.Fatalf("%s %v refused: %v", name, a, err)
	}
	res, err := p.Run(ctx)
	if err != nil {
		fx.t.Fatalf("%s %v: %v", name, a, err)
	}
	return res
}

// result decodes an agent result.
func result(t *testing.T, res tools.Result) delegate.Result {
	t.Helper()
	var r delegate.Result
	if err := json.Unmarshal([]byte(res.Output), &r); err != nil {
		t.Fatalf("result %q: %v", res.Output, err)
	}
	return r
}

// job returns the session's job id.
func (fx *fixture) job(id string) *jobs.Job {
	fx.t.Helper()
	j, err := fx.set.jobs.Lookup(id)
	if err != nil {
		fx.t.Fatal(err)
	}
	return j
}

// waitJob waits until the job id has finished.
func (fx *fixture) waitJob(id string) {
	fx.t.Helper()
	select {
	case <-fx.job(id).Done():
	case <-time.After(hang):
		fx.t.Fatalf("%s did not finish", id)
	}
}

// view decodes a job description.
func view(t *testing.T, res tools.Result) jobs.View {
	t.Helper()
	var v jobs.View
	if err := json.Unmarshal([]byte(res.Output), &v); err != nil {
		t.Fatalf("job %q: %v", res.Output, err)
	}
	return v
}
