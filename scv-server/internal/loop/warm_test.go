package loop

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
	"go.uber.org/goleak"
)

// The loop starts goroutines (a turn's warm-ups, the stream watchdog):
// none may outlive the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// warmingTool records its warm-ups: each blocks until its context ends,
// so the test sees whether the turn's end cancels and joins it.
type warmingTool struct {
	mu      sync.Mutex
	started int
	ended   int
	workdir string
	began   chan struct{}
}

func (w *warmingTool) Spec() tools.Spec {
	return tools.Spec{Name: "slowstart", Schema: json.RawMessage(`{"type":"object"}`)}
}

func (w *warmingTool) Prepare(tools.Env, json.RawMessage) (*tools.Plan, error) {
	return &tools.Plan{Risk: protocol.RiskProcess, Summary: "slowstart", Run: func(context.Context) (tools.Result, error) {
		return tools.Result{Success: true, Output: "ran"}, nil
	}}, nil
}

func (w *warmingTool) Warm(ctx context.Context, env tools.Env) {
	w.mu.Lock()
	w.started++
	w.workdir = env.Workspace
	w.mu.Unlock()
	w.began <- struct{}{}
	<-ctx.Done()
	w.mu.Lock()
	w.ended++
	w.mu.Unlock()
}

// waitingSink answers the first approval only after the tool's warm-up
// began: the warm-up runs while the user reads the question.
type waitingSink struct {
	approvingSink
	began  <-chan struct{}
	waited bool
}

func (s *waitingSink) Emit(ctx context.Context, ev protocol.TurnEvent) error {
	if _, ok := ev.(*protocol.ApprovalRequested); ok && !s.waited {
		s.waited = true
		select {
		case <-s.began:
		case <-time.After(10 * time.Second):
			return errors.New("no warm-up began while the approval was asked")
		}
	}
	return s.approvingSink.Emit(ctx, ev)
}

// scripted is a provider that answers with its replies in turn.
type scripted struct {
	mu      sync.Mutex
	replies []provider.Response
}

func (*scripted) Name() string            { return "scripted" }
func (*scripted) Model() string           { return "m" }
func (*scripted) ContextMaxTokens() int64 { return 1 << 30 }
func (p *scripted) Stream(context.Context, provider.Request, provider.Handler) (*provider.Response, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.replies[0]
	p.replies = p.replies[1:]
	return &r, nil
}

// TestWarmWhileAsking: a call that waits for approval starts its tool's
// warm-up (once a turn, however many calls ask), with the turn's tool
// environment; calls that need no approval start none; the turn's end
// cancels the warm-up and waits for it.
func TestWarmWhileAsking(t *testing.T) {
	t.Parallel()
	w := &warmingTool{began: make(chan struct{}, 4)}
	reg := tools.NewRegistry()
	if err := reg.Register(w); err != nil {
		t.Fatal(err)
	}
	calls := func(n int) []provider.ToolCall {
		var out []provider.ToolCall
		for i := range n {
			out = append(out, provider.ToolCall{ID: "c" + string(rune('1'+i)), Name: "slowstart", Arguments: "{}"})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		policy approval.Policy
		warms  int
	}{
		{"asked twice, warmed once", approval.OnRisk, 1},
		{"never asked, never warmed", approval.Auto, 0},
	} {
		w.started, w.ended = 0, 0
		sink := &waitingSink{approvingSink: approvingSink{approvals: approval.NewPending()}, began: w.began}
		prov := &scripted{replies: []provider.Response{{ToolCalls: calls(2)}, {Content: "done"}}}
		out := Run(context.Background(), Config{Provider: prov, Policy: tc.policy, Tools: reg, Approvals: sink.approvals,
			ToolEnv: tools.Env{Workspace: "/the/workspace"}}, nil, "go", sink)
		if out.Err != nil {
			t.Fatalf("%s: %v", tc.name, out.Err)
		}
		// Run has returned: every warm-up it started has ended.
		w.mu.Lock()
		started, ended, dir := w.started, w.ended, w.workdir
		w.mu.Unlock()
		if started != tc.warms || ended != started {
			t.Errorf("%s: %d warm-ups started, %d ended; want %d, all ended when the turn did", tc.name, started, ended, tc.warms)
		}
		if tc.warms > 0 && dir != "/the/workspace" {
			t.Errorf("%s: warmed in %q, want the turn's workspace", tc.name, dir)
		}
	}
}

// blockingProvider holds its first answer until the tool's warm-up began
// (or a bound passes), as a model slow to answer; later answers come at
// once.
type blockingProvider struct {
	scripted
	began <-chan struct{}
	calls int
}

func (p *blockingProvider) Stream(ctx context.Context, req provider.Request, h provider.Handler) (*provider.Response, error) {
	p.calls++
	if p.calls == 1 {
		select {
		case <-p.began:
		case <-time.After(10 * time.Second):
			return nil, errors.New("no warm-up began while the model request was outstanding")
		}
	}
	return p.scripted.Stream(ctx, req, h)
}

// TestWarmWhileTheModelIsSlow: a model request still unanswered after
// WarmAfter starts the warm-up of the tools offered (once a turn), with
// the turn's environment, and the turn's end joins it; a model that
// answers before WarmAfter starts none.
func TestWarmWhileTheModelIsSlow(t *testing.T) {
	t.Parallel()
	w := &warmingTool{began: make(chan struct{}, 4)}
	reg := tools.NewRegistry()
	if err := reg.Register(w); err != nil {
		t.Fatal(err)
	}
	prov := &blockingProvider{scripted: scripted{replies: []provider.Response{
		{ToolCalls: []provider.ToolCall{{ID: "c1", Name: "slowstart", Arguments: "{}"}}}, {Content: "done"}}}, began: w.began}
	sink := &approvingSink{approvals: approval.NewPending()}
	out := Run(context.Background(), Config{Provider: prov, Policy: approval.Auto, Tools: reg, Approvals: sink.approvals,
		ToolEnv: tools.Env{Workspace: "/slow"}, WarmAfter: time.Millisecond}, nil, "go", sink)
	if out.Err != nil {
		t.Fatal(out.Err)
	}
	w.mu.Lock()
	started, ended, dir := w.started, w.ended, w.workdir
	w.mu.Unlock()
	if started != 1 || ended != 1 || dir != "/slow" {
		t.Errorf("slow model: %d warm-ups started, %d ended, in %q; want one, ended with the turn, in the turn's workspace", started, ended, dir)
	}

	fast := &warmingTool{began: make(chan struct{}, 4)}
	reg = tools.NewRegistry()
	if err := reg.Register(fast); err != nil {
		t.Fatal(err)
	}
	quick := &scripted{replies: []provider.Response{{Content: "at once"}}}
	if out := Run(context.Background(), Config{Provider: quick, Policy: approval.Auto, Tools: reg, Approvals: sink.approvals,
		WarmAfter: time.Hour}, nil, "go", sink); out.Err != nil {
		t.Fatal(out.Err)
	}
	if fast.started != 0 {
		t.Errorf("a model that answered before WarmAfter started %d warm-ups", fast.started)
	}
}
