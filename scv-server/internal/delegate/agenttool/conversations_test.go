package agenttool

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
)

func TestConversationResume(t *testing.T) {
	t.Parallel()
	tests := []struct {
		agent string
		// chosen: SCV picks the CLI session id (claude, pi); otherwise
		// the CLI reports it (codex).
		chosen bool
	}{{"claude", true}, {"pi", true}, {"codex", false}}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			fx := newFixture(t, []string{"claude", "codex", "pi"}, nil)
			f := fx.fakes[tt.agent]
			r1 := result(t, fx.call(NameAgent, map[string]any{"agent": tt.agent, "prompt": "start", "cwd": "proj"}))
			c1 := f.lastRun(t)
			if r1.Session != tt.agent+"-1" || r1.Turn != 1 || c1.Conversation != tt.agent+"-1" || c1.Turn != 1 || c1.ResumeCLISession != "" {
				t.Fatalf("first turn: result %+v call %+v", r1, c1)
			}
			if _, err := uuid.Parse(c1.NewCLISession); err != nil {
				t.Fatalf("new CLI session %q is not a UUID: %v", c1.NewCLISession, err)
			}
			want := c1.NewCLISession
			if !tt.chosen {
				want = "thread-1"
			}
			// The plan shown for approval already resumes.
			if _, err := fx.prepare(NameAgent, map[string]any{"session": tt.agent + "-1", "prompt": "planned"}); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			pl := f.plans[len(f.plans)-1]
			f.mu.Unlock()
			if pl.ResumeCLISession != want || pl.Turn != 2 || pl.Conversation != tt.agent+"-1" || pl.NewCLISession != "" {
				t.Fatalf("plan of a continued turn %+v", pl)
			}
			// Later turns name only the handle, and run in its cwd.
			for turn := 2; turn <= 3; turn++ {
				r := result(t, fx.call(NameAgent, map[string]any{"session": tt.agent + "-1", "prompt": "go on"}))
				c := f.lastRun(t)
				if c.ResumeCLISession != want || c.NewCLISession != "" || c.Turn != turn || c.Dir != c1.Dir || r.Session != tt.agent+"-1" || r.Turn != turn {
					t.Fatalf("turn %d: result %+v call %+v (want resume %s)", turn, r, c, want)
				}
			}
			// A second conversation gets the next handle.
			if r := result(t, fx.call(NameAgent, map[string]any{"agent": tt.agent, "prompt": "other"})); r.Session != tt.agent+"-2" {
				t.Fatalf("second conversation %q", r.Session)
			}
			// The CLI's id never reaches the model.
			if res := fx.call(NameAgent, map[string]any{"session": tt.agent + "-1", "prompt": "x"}); strings.Contains(res.Output, want) {
				t.Fatalf("result shows the CLI session: %s", res.Output)
			}
		})
	}
}

func TestConversationCwdKept(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"codex"}, func(o *Options) { o.Prefer = []string{"codex"} })
	fx.call(NameAgent, map[string]any{"prompt": "start", "cwd": "proj"})
	ws := fx.env.Workspace
	_, err := fx.prepare(NameAgent, map[string]any{"session": "codex-1", "prompt": "x", "cwd": "proj/sub"})
	want := "conversation codex-1 runs in " + ws + "/proj, and a conversation keeps its cwd; omit cwd to continue it there, or omit session to start a new conversation in " + ws + "/proj/sub"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v\nwant %s", err, want)
	}
	// The same directory, spelled differently, is fine.
	fx.call(NameAgent, map[string]any{"session": "codex-1", "prompt": "x", "cwd": ws + "/proj/"})
}

func TestConversationForgotten(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// first is the first turn's result.
		first delegate.Result
		kept  bool
	}{
		{name: "failed before the CLI reported a session", first: delegate.Result{Status: delegate.StatusFailed, Error: "spawn failed", Kind: delegate.ErrorUnavailable}},
		{name: "timed out after it reported one", first: delegate.Result{Status: delegate.StatusTimeout, CLISession: "thread-x"}, kept: true},
		{name: "failed after it reported one", first: delegate.Result{Status: delegate.StatusFailed, CLISession: "thread-y"}, kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, []string{"codex"}, func(o *Options) { o.Prefer = []string{"codex"} })
			f := fx.fakes["codex"]
			f.respond = func(delegate.Call) delegate.Result { return tt.first }
			r := result(t, fx.call(NameAgent, map[string]any{"prompt": "start"}))
			f.respond = nil
			if tt.kept != (r.Session == "codex-1") {
				t.Fatalf("first turn's session %q (kept %v)", r.Session, tt.kept)
			}
			p, err := fx.prepare(NameAgent, map[string]any{"session": "codex-1", "prompt": "continue where you stopped"})
			if !tt.kept {
				if err == nil || !strings.HasPrefix(err.Error(), "conversation codex-1 has ended") {
					t.Fatalf("continuing a forgotten conversation: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if c := f.lastRun(t); c.ResumeCLISession != tt.first.CLISession || c.Turn != 2 {
				t.Fatalf("resumed %+v", c)
			}
		})
	}
}

func TestConversationBusy(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude"}, func(o *Options) { o.Prefer = []string{"claude"} })
	f := fx.fakes["claude"]
	fx.call(NameAgent, map[string]any{"prompt": "start"})
	f.waitStarted(t)
	early, err := fx.prepare(NameAgent, map[string]any{"session": "claude-1", "prompt": "checked before the turn began"})
	if err != nil {
		t.Fatal(err)
	}
	f.gate = make(chan struct{})
	fx.call(NameAgent, map[string]any{"session": "claude-1", "prompt": "long work", "background": true})
	f.waitStarted(t)
	want := "session busy: conversation claude-1 is running a turn in background job job-1; wait for it (agent_wait job-1) or omit session to start a new conversation"
	if _, err := fx.prepare(NameAgent, map[string]any{"session": "claude-1", "prompt": "more"}); err == nil || err.Error() != want {
		t.Fatalf("err %v\nwant %s", err, want)
	}
	// A call checked before the turn began is refused when it runs.
	res, err := early.Run(context.Background())
	if err != nil || res.Success || res.Output != want {
		t.Fatalf("early call: %+v %v", res, err)
	}
	close(f.gate)
	v := view(t, fx.call(NameWait, map[string]any{"job": "job-1"}))
	if v.Status != delegate.StatusCompleted || v.Result.Session != "claude-1" || v.Result.Turn != 2 {
		t.Fatalf("job %+v", v)
	}
	// Idle again: the next turn is 3.
	if r := result(t, fx.call(NameAgent, map[string]any{"session": "claude-1", "prompt": "x"})); r.Turn != 3 {
		t.Fatalf("turn %d", r.Turn)
	}
	if _, runs := f.counts(); runs != 3 {
		t.Fatalf("%d runs, want 3", runs)
	}
}

func TestConversationLRU(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"codex"}, func(o *Options) { o.Prefer = []string{"codex"}; o.MaxConversations = 2 })
	f := fx.fakes["codex"]
	fx.call(NameAgent, map[string]any{"prompt": "a"}) // codex-1
	fx.clock.advance(time.Second)
	fx.call(NameAgent, map[string]any{"prompt": "b"}) // codex-2
	fx.clock.advance(time.Second)
	fx.call(NameAgent, map[string]any{"session": "codex-1", "prompt": "a again"}) // codex-1 is now the most recent
	fx.clock.advance(time.Second)
	fx.call(NameAgent, map[string]any{"prompt": "c"}) // codex-3 forgets codex-2
	if _, err := fx.prepare(NameAgent, map[string]any{"session": "codex-2", "prompt": "x"}); err == nil || !strings.HasPrefix(err.Error(), "conversation codex-2 has ended") {
		t.Fatalf("codex-2: %v", err)
	}
	for _, h := range []string{"codex-1", "codex-3"} {
		if _, err := fx.prepare(NameAgent, map[string]any{"session": h, "prompt": "x"}); err != nil {
			t.Fatalf("%s: %v", h, err)
		}
	}
	// With every conversation running a turn, none can be forgotten.
	f.gate = make(chan struct{})
	fx.call(NameAgent, map[string]any{"session": "codex-1", "prompt": "x", "background": true})
	fx.call(NameAgent, map[string]any{"session": "codex-3", "prompt": "x", "background": true})
	_, err := fx.prepare(NameAgent, map[string]any{"prompt": "new"})
	if err == nil || !strings.HasPrefix(err.Error(), "all 2 conversations this session keeps are running a turn (agent.max_conversations = 2)") {
		t.Fatalf("full: %v", err)
	}
	close(f.gate)
	for _, j := range []string{"job-1", "job-2"} {
		fx.call(NameWait, map[string]any{"job": j})
	}
	fx.call(NameAgent, map[string]any{"prompt": "new"})
}

func TestConversationIdleExpiry(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude"}, func(o *Options) { o.Prefer = []string{"claude"}; o.ConversationIdle = time.Hour })
	fx.call(NameAgent, map[string]any{"prompt": "a"})
	fx.clock.advance(59 * time.Minute)
	fx.call(NameAgent, map[string]any{"session": "claude-1", "prompt": "still here"})
	fx.clock.advance(time.Hour)
	if _, err := fx.prepare(NameAgent, map[string]any{"session": "claude-1", "prompt": "x"}); err == nil || !strings.HasPrefix(err.Error(), "conversation claude-1 has ended") {
		t.Fatalf("expired conversation: %v", err)
	}
}

// TestOnForget checks that every way a conversation is forgotten hands its
// CLI session to OnForget (so its marker goes), and only once.
func TestOnForget(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	fx := newFixture(t, []string{"claude", "codex"}, func(o *Options) {
		o.MaxConversations = 2
		o.ConversationIdle = time.Hour
		o.OnForget = func(agent, cli string) {
			mu.Lock()
			got = append(got, agent+":"+cli)
			mu.Unlock()
		}
	})
	forgot := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	fx.call(NameAgent, map[string]any{"agent": "codex", "prompt": "a"}) // codex-1, thread-1
	fx.clock.advance(time.Minute)
	fx.call(NameAgent, map[string]any{"agent": "claude", "prompt": "b"}) // claude-1
	claude := fx.fakes["claude"].lastRun(t).NewCLISession
	fx.clock.advance(time.Minute)
	fx.call(NameAgent, map[string]any{"agent": "codex", "prompt": "c"}) // codex-2 evicts codex-1
	if g := forgot(); !slices.Equal(g, []string{"codex:thread-1"}) {
		t.Fatalf("after eviction %v", g)
	}
	fx.clock.advance(2 * time.Hour)
	// Both idle conversations expire; the check that finds them does it.
	if _, err := fx.prepare(NameAgent, map[string]any{"session": "claude-1", "prompt": "x"}); err == nil {
		t.Fatal("claude-1 did not expire")
	}
	g := forgot()
	slices.Sort(g[1:])
	if want := []string{"codex:thread-1", "claude:" + claude, "codex:thread-2"}; !slices.Equal(g, want) {
		t.Fatalf("after expiry %v, want %v", g, want)
	}
	// Close forgets what is left.
	fx.call(NameAgent, map[string]any{"agent": "claude", "prompt": "d"})
	last := fx.fakes["claude"].lastRun(t).NewCLISession
	fx.set.Close(context.Background())
	if g := forgot(); len(g) != 4 || g[3] != "claude:"+last {
		t.Fatalf("after close %v", g)
	}
}
