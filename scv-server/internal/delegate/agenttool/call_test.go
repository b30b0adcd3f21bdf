package agenttool

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
)

func TestChoice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		offer  []string
		prefer []string
		// setup runs calls first (to create conversations).
		setup []map[string]any
		args  map[string]any
		want  string
	}{
		{name: "explicit agent", offer: []string{"claude", "codex"}, prefer: []string{"codex"},
			args: map[string]any{"agent": "claude", "prompt": "fix it"}, want: "claude"},
		{name: "prefer default", offer: []string{"claude", "codex"}, prefer: []string{"codex", "claude"},
			args: map[string]any{"prompt": "fix it"}, want: "codex"},
		{name: "prefer skips agents not offered", offer: []string{"claude", "codex"}, prefer: []string{"grok", "claude"},
			args: map[string]any{"prompt": "fix it"}, want: "claude"},
		{name: "blank agent counts as omitted", offer: []string{"claude", "codex"}, prefer: []string{"codex"},
			args: map[string]any{"agent": "  ", "prompt": "fix it", "model": "", "effort": "", "cwd": "", "session": ""}, want: "codex"},
		{name: "handle names the agent", offer: []string{"claude", "codex"}, prefer: []string{"claude"},
			setup: []map[string]any{{"agent": "codex", "prompt": "start"}},
			args:  map[string]any{"session": "codex-1", "prompt": "go on"}, want: "codex"},
		{name: "handle and the same explicit agent", offer: []string{"claude", "codex"},
			setup: []map[string]any{{"agent": "codex", "prompt": "start"}},
			args:  map[string]any{"agent": "codex", "session": "codex-1", "prompt": "go on"}, want: "codex"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, tt.offer, func(o *Options) { o.Prefer = tt.prefer })
			for _, a := range tt.setup {
				fx.call(NameAgent, a)
			}
			res := fx.call(NameAgent, tt.args)
			if r := result(t, res); r.Agent != tt.want || !res.Success {
				t.Fatalf("ran on %q (success %v), want %q: %s", r.Agent, res.Success, tt.want, res.Output)
			}
			for _, n := range tt.offer {
				_, runs := fx.fakes[n].counts()
				want := len(tt.setup)*b2i(n == "codex") + b2i(n == tt.want)
				if runs != want {
					t.Errorf("%s ran %d calls, want %d", n, runs, want)
				}
			}
		})
	}
}

// TestSessionNamesItsAgent: without an [agent] prefer default, a call
// that continues a conversation needs no agent: the handle names it. The
// call passes the registry (the validation schema) and the schema the
// model sees, and runs on the handle's agent; a call with neither agent
// nor a known handle is refused by Prepare with what to do.
func TestSessionNamesItsAgent(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude", "codex"}, nil)
	if r := result(t, fx.call(NameAgent, map[string]any{"agent": "codex", "prompt": "start"})); r.Session != "codex-1" {
		t.Fatalf("first call opened %q", r.Session)
	}
	tl := fx.tool(NameAgent)
	for name, reg := range map[string]tools.Tool{"validation schema": tl, "model's schema": specOnly{tl}} {
		registry := tools.NewRegistry()
		if err := registry.Register(reg); err != nil {
			t.Fatal(err)
		}
		args, err := registry.Validate(NameAgent, `{"session":"codex-1","prompt":"go on"}`)
		if err != nil {
			t.Fatalf("%s refused a call naming only a session: %v", name, err)
		}
		p, err := tl.Prepare(fx.env, args)
		if err != nil {
			t.Fatalf("%s: Prepare: %v", name, err)
		}
		res, err := p.Run(context.Background())
		if r := result(t, res); err != nil || !res.Success || r.Agent != "codex" || r.Session != "codex-1" {
			t.Fatalf("%s: ran on %q in %q (%v): %s", name, r.Agent, r.Session, err, res.Output)
		}
		if _, err := registry.Validate(NameAgent, `{"prompt":"x"}`); err != nil {
			t.Fatalf("%s: the schema refused a call Prepare should refuse with its message: %v", name, err)
		}
	}
	if _, runs := fx.fakes["codex"].counts(); runs != 3 {
		t.Fatalf("codex ran %d calls, want 3", runs)
	}
	for args, want := range map[string]string{
		`{"prompt":"x"}`:                      "name the agent: the user prefers none of the agents this session offers ([agent] prefer); choose one of: claude, codex",
		`{"prompt":"x","session":"zcode-1"}`:  `session "zcode-1" is not a conversation of this session; pass a handle an earlier agent result returned (such as claude-1), or omit session and name the agent to start a new conversation (choose one of: claude, codex)`,
		`{"prompt":"x","session":"claude-4"}`: `session "claude-4" is not a conversation of this session; pass a handle an earlier agent result returned (such as claude-1), or omit session to start a new conversation`,
	} {
		if _, err := tl.Prepare(fx.env, []byte(args)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// specOnly presents a tool with only its Spec, as a registry that reads
// the schema the model sees would validate it.
type specOnly struct{ tools.Tool }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestRefusals checks every refusal happens in Prepare, before the
// backend is asked for a plan or a run.
func TestRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		offer  []string
		prefer []string
		mod    func(*Options)
		setup  []map[string]any
		args   map[string]any
		// want is the exact refusal, or with prefix set its beginning.
		want   string
		prefix bool
	}{
		{name: "no agent and no default", offer: []string{"claude", "codex"},
			args: map[string]any{"prompt": "x"},
			want: "name the agent: the user prefers none of the agents this session offers ([agent] prefer); choose one of: claude, codex"},
		{name: "agent not offered", offer: []string{"claude", "codex"},
			args: map[string]any{"agent": "zcode", "prompt": "x"},
			want: `agent "zcode" is not offered in this session; choose one of: claude, codex`},
		{name: "model to dsh", offer: []string{"claude", "grok", "dsh", "scv"},
			args: map[string]any{"agent": "dsh", "prompt": "x", "model": "m1"},
			want: "dsh does not take model; these agents do: claude, grok, scv. Omit model, or call one of them"},
		{name: "effort to dsh", offer: []string{"claude", "dsh", "scv"},
			args: map[string]any{"agent": "dsh", "prompt": "x", "effort": "high"},
			want: "dsh does not take effort; these agents do: claude. Omit effort, or call one of them"},
		{name: "session to grok", offer: []string{"codex", "grok"},
			args: map[string]any{"agent": "grok", "prompt": "x", "session": "grok-1"},
			want: "grok does not take session; these agents do: codex. Omit session, or call one of them"},
		{name: "model and nobody takes it", offer: []string{"dsh"},
			args: map[string]any{"agent": "dsh", "prompt": "x", "model": "m"},
			want: "dsh does not take model, and no agent this session offers does; omit model"},
		{name: "disagreeing handle", offer: []string{"claude", "codex"},
			setup: []map[string]any{{"agent": "codex", "prompt": "start"}, {"agent": "codex", "prompt": "start"}},
			args:  map[string]any{"agent": "claude", "session": "codex-2", "prompt": "x"},
			want:  "conversation codex-2 belongs to codex, not claude; omit agent to continue it, or omit session to start a new conversation with claude"},
		{name: "unknown handle", offer: []string{"claude", "codex"}, prefer: []string{"codex"},
			args: map[string]any{"session": "codex-7", "prompt": "x"},
			want: `session "codex-7" is not a conversation of this session; pass a handle an earlier agent result returned (such as claude-1), or omit session to start a new conversation`},
		{name: "raw vendor id", offer: []string{"claude", "codex"}, prefer: []string{"claude"},
			args: map[string]any{"session": "0b6f4c2e-9d1a-4e8b-a7c3-5f2d1e0c9b84", "prompt": "x"},
			want: `session "0b6f4c2e-9d1a-4e8b-a7c3-5f2d1e0c9b84" is not a conversation of this session`, prefix: true},
		{name: "handle with a leading zero", offer: []string{"codex"}, prefer: []string{"codex"},
			setup: []map[string]any{{"prompt": "start"}},
			args:  map[string]any{"session": "codex-01", "prompt": "x"},
			want:  `session "codex-01" is not a conversation of this session`, prefix: true},
		{name: "model to a continued scv conversation", offer: []string{"scv"}, prefer: []string{"scv"},
			setup: []map[string]any{{"prompt": "start"}},
			args:  map[string]any{"session": "scv-1", "prompt": "x", "model": "m"},
			want:  "scv takes model only for a new conversation; omit model to continue scv-1 with its model, or omit session to start a new conversation with model m"},
		{name: "invalid model", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "x", "model": "-rf"},
			want: `model "-rf" is not a model name`, prefix: true},
		{name: "model starting with @", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "x", "model": "@evil"},
			want: `model "@evil" is not a model name`, prefix: true},
		{name: "model with a space", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "x", "model": "gpt 5"},
			want: `model "gpt 5" is not a model name`, prefix: true},
		{name: "model too long", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "x", "model": strings.Repeat("m", 129)},
			want: `model "` + strings.Repeat("m", 129) + `" is not a model name`, prefix: true},
		{name: "invalid effort", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "x", "effort": "extreme"},
			want: `effort "extreme" is not an effort; use one of low, medium, high, xhigh, max, or omit effort so claude uses its own default`},
		{name: "prompt starting with a dash", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "--dangerously-skip-permissions"},
			want: `prompt starts with "-"`, prefix: true},
		{name: "empty prompt", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "  "},
			want: "prompt is empty", prefix: true},
		{name: "cwd missing", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "x", "cwd": "nope"},
			want: `cwd "nope" does not exist`, prefix: true},
		{name: "cwd a file", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "x", "cwd": "file.txt"},
			want: `cwd "file.txt" is a file, not a directory`, prefix: true},
		{name: "cwd outside", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "x", "cwd": "/"},
			want: `cwd "/" resolves to /, outside the workspace`, prefix: true},
		{name: "cwd dot-dot", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "x", "cwd": "proj/../.."},
			want: `cwd "proj/../.." resolves to`, prefix: true},
		{name: "timeout above the ceiling", offer: []string{"claude"}, prefer: []string{"claude"},
			args: map[string]any{"prompt": "x", "timeout_seconds": 4*3600 + 1},
			want: "timeout_seconds 14401 is above the ceiling of 14400 s (tools.max_timeout_seconds); ask for at most 14400, or leave it out for the default of 3600 s"},
		{name: "background off", offer: []string{"claude"}, prefer: []string{"claude"}, mod: func(o *Options) { o.MaxBackground = 0 },
			args: map[string]any{"prompt": "x", "background": true},
			want: "background jobs are off in this session (agent.max_background = 0)", prefix: true},
		{name: "plan fails", offer: []string{"claude", "codex"}, prefer: []string{"claude"},
			mod: func(o *Options) {
				o.Backends[0].(*fake).planErr = fmt.Errorf("%w: claude is not installed (looked in ~/.local/bin and PATH)", delegate.ErrUnavailable)
			},
			args: map[string]any{"prompt": "x"},
			want: "claude cannot run: claude is not installed (looked in ~/.local/bin and PATH). This agent could not run: it is missing, signed out, or its provider returned an error. Other agents are available: codex. Call agent again with one of them."},
		{name: "plan fails otherwise", offer: []string{"claude", "codex"}, prefer: []string{"claude"},
			mod:  func(o *Options) { o.Backends[0].(*fake).planErr = errors.New("the directory is not absolute") },
			args: map[string]any{"prompt": "x"},
			want: "claude cannot run: the directory is not absolute."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, tt.offer, func(o *Options) {
				o.Prefer = tt.prefer
				if tt.mod != nil {
					tt.mod(o)
				}
			})
			for _, a := range tt.setup {
				fx.call(NameAgent, a)
			}
			before := map[string][2]int{}
			for n, f := range fx.fakes {
				p, r := f.counts()
				before[n] = [2]int{p, r}
			}
			plan, err := fx.prepare(NameAgent, tt.args)
			if err == nil {
				t.Fatalf("call was not refused; plan %q", plan.Summary)
			}
			if tt.prefix && !strings.HasPrefix(err.Error(), tt.want) || !tt.prefix && err.Error() != tt.want {
				t.Fatalf("refusal:\n got %s\nwant %s", err, tt.want)
			}
			for n, f := range fx.fakes {
				p, r := f.counts()
				if !strings.HasPrefix(tt.name, "plan fails") && p != before[n][0] || r != before[n][1] {
					t.Errorf("%s saw %d plans and %d runs during the refused call", n, p-before[n][0], r-before[n][1])
				}
			}
		})
	}
}

func TestCwd(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude"}, func(o *Options) { o.Prefer = []string{"claude"} })
	ws := fx.env.Workspace
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(ws, "proj", "sub"), filepath.Join(ws, "inside")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cwd, want, refusal string
	}{
		{cwd: "", want: ws},
		{cwd: "proj", want: filepath.Join(ws, "proj")},
		{cwd: filepath.Join(ws, "proj", "sub"), want: filepath.Join(ws, "proj", "sub")},
		{cwd: "inside", want: filepath.Join(ws, "proj", "sub")},
		{cwd: "escape", refusal: "outside the workspace"},
		{cwd: "escape/", refusal: "outside the workspace"},
	}
	for _, tt := range tests {
		p, err := fx.prepare(NameAgent, map[string]any{"prompt": "x", "cwd": tt.cwd})
		if tt.refusal != "" {
			if err == nil || !strings.Contains(err.Error(), tt.refusal) {
				t.Errorf("cwd %q: err %v, want %q", tt.cwd, err, tt.refusal)
			}
			continue
		}
		if err != nil {
			t.Fatalf("cwd %q: %v", tt.cwd, err)
		}
		if _, err := p.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := fx.fakes["claude"].lastRun(t); got.Dir != tt.want || got.Workspace != ws {
			t.Errorf("cwd %q ran in %s (workspace %s), want %s", tt.cwd, got.Dir, got.Workspace, tt.want)
		}
	}
}

func TestCall(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude"}, func(o *Options) { o.Prefer = []string{"claude"}; o.Depth = 1; o.SessionID = "sess" })
	fx.fakes["claude"].progress = []string{"$ go test ./...", "edit main.go"}
	var lines []string
	env := fx.env
	env.Progress = func(l string) { lines = append(lines, l) }
	p, err := fx.tool(NameAgent).Prepare(env, []byte(`{"prompt":"fix the test","model":"sonnet","effort":"high","timeout_seconds":120}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := fx.fakes["claude"].lastRun(t)
	if c.Agent != "claude" || c.Prompt != "fix the test" || c.Model != "sonnet" || c.Effort != "high" || c.Timeout.Seconds() != 120 ||
		c.SessionID != "sess" || c.Depth != 1 || !strings.HasPrefix(c.Handle, "claude-") || len(c.Handle) != len("claude-")+6 {
		t.Fatalf("call %+v", c)
	}
	if strings.Join(lines, "|") != "$ go test ./...|edit main.go" {
		t.Errorf("progress %q", lines)
	}
	want := `{"agent":"claude","status":"completed","reply":"done: fix the test","truncated":false,"session":"claude-1","turn":1}`
	if !res.Success || res.Output != want {
		t.Fatalf("result %+v\nwant %s", res, want)
	}
}

func TestDelegationHandlesUnique(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"dsh"}, func(o *Options) { o.Prefer = []string{"dsh"} })
	seen := map[string]bool{}
	for range 200 {
		fx.call(NameAgent, map[string]any{"prompt": "x"})
		h := fx.fakes["dsh"].lastRun(t).Handle
		if seen[h] {
			t.Fatalf("handle %s issued twice", h)
		}
		seen[h] = true
	}
}

func TestForegroundCancel(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"codex"}, func(o *Options) { o.Prefer = []string{"codex"} })
	f := fx.fakes["codex"]
	f.gate = make(chan struct{})
	p, err := fx.prepare(NameAgent, map[string]any{"prompt": "x"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.Run(ctx)
		done <- err
	}()
	f.waitStarted(t)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call returned %v", err)
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	long := "Land the fix. " + strings.Repeat("é", 1500)
	tests := []struct {
		name string
		full bool
		args map[string]any
		want []string
		not  []string
	}{
		{name: "plain", args: map[string]any{"prompt": "Land the fix.", "cwd": "proj"},
			want: []string{`agent codex: Launch /home/u/.local/bin/codex with args ["-p" "--output-format" "stream-json" <prompt>] in WS/proj, timeout 3600 s, starting a new conversation`,
				"\nPrompt (13 bytes):\nLand the fix."},
			not: []string{"FULL PERMISSIONS"}},
		{name: "full permissions and background", full: true, args: map[string]any{"prompt": "Land the fix.", "background": true, "model": "gpt-5.5", "timeout_seconds": 7200},
			want: []string{`with args ["-p" "--output-format" "stream-json" "--model" "gpt-5.5" <prompt>] in WS, timeout 7200 s, starting a new conversation, as a background job`,
				"\nFULL PERMISSIONS: codex runs with its own approval prompts and sandbox switched off"}},
		{name: "bounded prompt", args: map[string]any{"prompt": long},
			want: []string{"\nPrompt (3014 bytes):\nLand the fix. ", "\n[… 1014 more bytes of the prompt]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, []string{"codex"}, func(o *Options) { o.Prefer = []string{"codex"} })
			fx.fakes["codex"].full = tt.full
			p, err := fx.prepare(NameAgent, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if p.Risk != protocol.RiskDelegate || p.Rule != nil || len(p.Keys) != 0 {
				t.Errorf("risk %s, rule %v, keys %v", p.Risk, p.Rule, p.Keys)
			}
			if !strings.HasPrefix(p.Summary, "agent codex: Launch ") {
				t.Errorf("summary does not start with the agent: %q", p.Summary)
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "WS", fx.env.Workspace); !strings.Contains(p.Summary, w) {
					t.Errorf("summary lacks %q:\n%s", w, p.Summary)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(p.Summary, w) {
					t.Errorf("summary has %q:\n%s", w, p.Summary)
				}
			}
			if len(p.Summary) > 3000 {
				t.Errorf("summary is %d bytes", len(p.Summary))
			}
		})
	}
	// Permissions from the configuration alone also say it.
	fx := newFixture(t, []string{"claude"}, func(o *Options) { o.Prefer = []string{"claude"}; o.Permissions = map[string]bool{"claude": true} })
	p, err := fx.prepare(NameAgent, map[string]any{"prompt": "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.Summary, "FULL PERMISSIONS") {
		t.Errorf("summary lacks FULL PERMISSIONS: %s", p.Summary)
	}
}

func TestResults(t *testing.T) {
	t.Parallel()
	const fallback3 = "This agent could not run: it is missing, signed out, or its provider returned an error. Other agents are available: claude, grok. Call agent again with one of them."
	tests := []struct {
		name  string
		offer []string
		agent string
		res   delegate.Result
		check func(t *testing.T, r delegate.Result, success bool)
	}{
		{name: "unavailable gets a fallback", offer: []string{"claude", "codex", "grok"}, agent: "codex",
			res: delegate.Result{Status: delegate.StatusFailed, Error: "HTTP 429", Kind: delegate.ErrorUnavailable},
			check: func(t *testing.T, r delegate.Result, success bool) {
				if r.Fallback != fallback3 || r.Hint != "" || success {
					t.Errorf("fallback %q hint %q success %v", r.Fallback, r.Hint, success)
				}
			}},
		{name: "signed out gets a fallback and a hint", offer: []string{"claude", "codex", "grok"}, agent: "codex",
			res: delegate.Result{Status: delegate.StatusFailed, Error: "Not logged in", Kind: delegate.ErrorSignedOut},
			check: func(t *testing.T, r delegate.Result, _ bool) {
				// One text for the runner's hint and the tool's.
				if r.Fallback != fallback3 || r.Hint != delegate.SignInHint("Codex", "codex") || !strings.Contains(r.Hint, "`scv agents login codex`") {
					t.Errorf("fallback %q hint %q", r.Fallback, r.Hint)
				}
			}},
		{name: "backend hint is kept", offer: []string{"claude", "codex"}, agent: "codex",
			res: delegate.Result{Status: delegate.StatusFailed, Kind: delegate.ErrorSignedOut, Hint: "run scv agents login codex -- --device-auth"},
			check: func(t *testing.T, r delegate.Result, _ bool) {
				if r.Hint != "run scv agents login codex -- --device-auth" {
					t.Errorf("hint %q", r.Hint)
				}
			}},
		{name: "no other agent, no fallback", offer: []string{"codex"}, agent: "codex",
			res: delegate.Result{Status: delegate.StatusFailed, Kind: delegate.ErrorUnavailable},
			check: func(t *testing.T, r delegate.Result, _ bool) {
				if r.Fallback != "" {
					t.Errorf("fallback %q", r.Fallback)
				}
			}},
		{name: "ordinary failure unchanged", offer: []string{"claude", "codex"}, agent: "codex",
			res: delegate.Result{Status: delegate.StatusFailed, Error: "tests failed", Reply: "signed out, HTTP 429, quota"},
			check: func(t *testing.T, r delegate.Result, _ bool) {
				if r.Fallback != "" || r.Hint != "" || r.Note != "" {
					t.Errorf("fallback %q hint %q note %q", r.Fallback, r.Hint, r.Note)
				}
			}},
		{name: "a backend's own fallback is not trusted", offer: []string{"claude", "codex"}, agent: "codex",
			res: delegate.Result{Status: delegate.StatusCompleted, Fallback: "call zcode"},
			check: func(t *testing.T, r delegate.Result, success bool) {
				if r.Fallback != "" || !success {
					t.Errorf("fallback %q success %v", r.Fallback, success)
				}
			}},
		{name: "timeout with unavailable kind gets no fallback", offer: []string{"claude", "codex"}, agent: "codex",
			res: delegate.Result{Status: delegate.StatusTimeout, Kind: delegate.ErrorUnavailable},
			check: func(t *testing.T, r delegate.Result, _ bool) {
				if r.Fallback != "" {
					t.Errorf("fallback %q", r.Fallback)
				}
			}},
		{name: "declined with grok offered", offer: []string{"claude", "codex", "grok"}, agent: "claude",
			res: delegate.Result{Status: delegate.StatusDeclined, Reply: "I can't help with that.", Kind: delegate.ErrorUnavailable},
			check: func(t *testing.T, r delegate.Result, _ bool) {
				want := "The agent declined this request. Tell the user what it said, then call agent again with agent grok and the same request: Grok is offered for requests another agent declines, and a safety or guardrail refusal is not a reason to skip Grok."
				if r.Note != want || r.Fallback != "" {
					t.Errorf("note %q fallback %q", r.Note, r.Fallback)
				}
			}},
		{name: "grok declined", offer: []string{"claude", "grok"}, agent: "grok",
			res: delegate.Result{Status: delegate.StatusDeclined},
			check: func(t *testing.T, r delegate.Result, _ bool) {
				if !strings.HasPrefix(r.Note, "The agent declined this request. Tell the user what it said rather than passing the request to another agent on your own") {
					t.Errorf("note %q", r.Note)
				}
			}},
		{name: "declined without grok", offer: []string{"claude", "codex"}, agent: "codex",
			res: delegate.Result{Status: delegate.StatusDeclined},
			check: func(t *testing.T, r delegate.Result, _ bool) {
				if strings.Contains(r.Note, "grok") || !strings.Contains(r.Note, "rather than passing the request to another agent on your own") {
					t.Errorf("note %q", r.Note)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, tt.offer, nil)
			fx.fakes[tt.agent].respond = func(delegate.Call) delegate.Result { return tt.res }
			res := fx.call(NameAgent, map[string]any{"agent": tt.agent, "prompt": "x"})
			r := result(t, res)
			if r.Agent != tt.agent {
				t.Errorf("agent %q", r.Agent)
			}
			tt.check(t, r, res.Success)
		})
	}
}

func TestRunTimeoutSafetyNet(t *testing.T) {
	// Not parallel: it changes runGrace, which every run reads.
	// A backend that ignores its timeout is cancelled runGrace later.
	defer func(g time.Duration) { runGrace = g }(runGrace)
	runGrace = 100 * time.Millisecond
	fx := newFixture(t, []string{"dsh"}, func(o *Options) { o.Prefer = []string{"dsh"} })
	fx.fakes["dsh"].gate = make(chan struct{}) // never released: only ctx ends it
	res := fx.call(NameAgent, map[string]any{"prompt": "x", "timeout_seconds": 1})
	if r := result(t, res); r.Status != delegate.StatusTimeout || !strings.Contains(r.Error, "did not stop at its timeout") {
		t.Fatalf("result %+v", r)
	}
}

func TestDepthAndOffer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		offer       []string
		depth, maxd int
		background  int
		want        []string
	}{
		{name: "no agents", maxd: 2, background: 4},
		{name: "depth reached", offer: []string{"claude"}, depth: 2, maxd: 2, background: 4},
		{name: "delegation off", offer: []string{"claude"}, depth: 0, maxd: 0, background: 4},
		{name: "one level left", offer: []string{"claude"}, depth: 1, maxd: 2, background: 4, want: []string{"agent", "agent_wait", "agent_status", "agent_cancel"}},
		{name: "background off", offer: []string{"claude"}, maxd: 2, background: 0, want: []string{"agent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, tt.offer, func(o *Options) { o.Depth, o.MaxDepth, o.MaxBackground = tt.depth, tt.maxd, tt.background })
			var names []string
			reg := tools.NewRegistry()
			for _, tl := range fx.set.Tools() {
				names = append(names, tl.Spec().Name)
				if err := reg.Register(tl); err != nil {
					t.Fatal(err)
				}
			}
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("tools %v, want %v", names, tt.want)
			}
			if (fx.set.SystemSection() == "") != (len(tt.want) == 0) {
				t.Errorf("system section %q", fx.set.SystemSection())
			}
		})
	}
}

func TestClosedSetRefuses(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude"}, func(o *Options) { o.Prefer = []string{"claude"} })
	p, err := fx.prepare(NameAgent, map[string]any{"prompt": "x"})
	if err != nil {
		t.Fatal(err)
	}
	fx.set.Close(context.Background())
	if _, err := fx.prepare(NameAgent, map[string]any{"prompt": "x"}); err == nil || !strings.Contains(err.Error(), "closing") {
		t.Fatalf("prepare after close: %v", err)
	}
	res, err := p.Run(context.Background())
	if err != nil || res.Success || !strings.Contains(res.Output, "closing") {
		t.Fatalf("run after close: %+v %v", res, err)
	}
	if _, runs := fx.fakes["claude"].counts(); runs != 0 {
		t.Fatalf("%d runs after close", runs)
	}
}

// FuzzPrepare feeds arbitrary arguments to the agent tool: a call is
// either refused before the backend plans or runs anything, or planned
// with a prompt no CLI reads as a flag and a directory inside the
// workspace.
func FuzzPrepare(f *testing.F) {
	for _, seed := range []string{
		`{"prompt":"fix it"}`,
		`{"agent":"codex","prompt":"x","cwd":"proj","model":"gpt-5.5","effort":"high"}`,
		`{"agent":"claude","session":"codex-1","prompt":"x"}`,
		`{"prompt":"-rf","cwd":"../.."}`,
		`{"prompt":"x","cwd":"/","timeout_seconds":0}`,
		`{"prompt":"x","session":"claude-1","background":true}`,
		`{"agent":"dsh","prompt":"x","model":"@m"}`,
		`{"prompt":"x\u0000y"}`,
		`not json`,
	} {
		f.Add(seed)
	}
	fx := newFixture(f, []string{"claude", "codex", "dsh"}, func(o *Options) { o.Prefer = []string{"claude"} })
	f.Fuzz(func(t *testing.T, raw string) {
		fx.t = t
		fx.call(NameAgent, map[string]any{"prompt": "start"}) // keep a conversation claude-N around
		plans0, runs0 := totals(fx)
		p, err := fx.tool(NameAgent).Prepare(fx.env, []byte(raw))
		plans, runs := totals(fx)
		if runs != runs0 {
			t.Fatalf("Prepare ran the backend")
		}
		if err != nil {
			if plans > plans0+1 {
				t.Fatalf("a refused call was planned %d times", plans-plans0)
			}
			return
		}
		if p.Risk != protocol.RiskDelegate || !strings.HasPrefix(p.Summary, "agent ") {
			t.Fatalf("plan %+v", p)
		}
		var last delegate.Call
		for _, b := range fx.fakes {
			b.mu.Lock()
			if len(b.plans) > 0 && b.plans[len(b.plans)-1].Handle > last.Handle {
				last = b.plans[len(b.plans)-1]
			}
			b.mu.Unlock()
		}
		if strings.HasPrefix(last.Prompt, "-") || !within(fx.env.Workspace, last.Dir) {
			t.Fatalf("planned call %+v", last)
		}
	})
}

func totals(fx *fixture) (plans, runs int) {
	for _, f := range fx.fakes {
		p, r := f.counts()
		plans += p
		runs += r
	}
	return plans, runs
}

func TestClaimHandle(t *testing.T) {
	t.Parallel()
	h := claimHandle("codex", "codex-abc123")
	defer releaseHandle(h)
	if h != "codex-abc123" {
		t.Fatalf("claimed %s", h)
	}
	other := claimHandle("codex", "codex-abc123")
	defer releaseHandle(other)
	if other == h || !strings.HasPrefix(other, "codex-") || len(other) != len(h) {
		t.Fatalf("a live handle was claimed twice: %s", other)
	}
	releaseHandle(h)
	if again := claimHandle("codex", h); again != h {
		t.Fatalf("a released handle was not free: %s", again)
	} else {
		releaseHandle(again)
	}
}
