package agenttool

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/testkit/golden"
)

// offers are the offer sets of the golden tests.
var offers = []struct {
	name string
	opts func(*Options)
	// names are the agents offered.
	names []string
}{
	{name: "all", names: []string{"claude", "codex", "grok", "dsh", "pi"}, opts: func(o *Options) {
		o.Prefer = []string{"codex", "claude"}
		o.Defaults = map[string]AgentDefaults{
			"codex":  {UseFor: "coding", Model: "gpt-5.5", Effort: "high"},
			"claude": {Model: "opus-5.5", Effort: "xhigh"},
			"grok":   {UseFor: "current events, and anything that needs posts on X"},
			"dsh":    {UseFor: "quick DeepSeek questions", Model: "ignored-dsh-takes-no-model"},
		}
	}},
	{name: "no_default", names: []string{"claude", "codex"}, opts: func(o *Options) {
		o.Prefer = []string{"grok"}
		o.Defaults = map[string]AgentDefaults{"claude": {UseFor: "reviews", Model: "sonnet"}}
	}},
	{name: "no_background", names: []string{"codex", "pi"}, opts: func(o *Options) {
		o.Prefer = []string{"pi"}
		o.MaxBackground = 0
		o.DefaultTimeout, o.MaxTimeout = 1800*time.Second, 7200*time.Second
	}},
	{name: "dsh_only", names: []string{"dsh"}, opts: func(o *Options) { o.Prefer = []string{"dsh"} }},
	{name: "grok_and_scv", names: []string{"grok", "scv"}, opts: func(o *Options) {
		o.Defaults = map[string]AgentDefaults{"grok": {Effort: "high"}}
	}},
}

// TestGolden compares each offer set's tool specs and system section with
// testdata/<name>.golden; -update rewrites them.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, o := range offers {
		t.Run(o.name, func(t *testing.T) {
			fx := newFixture(t, o.names, o.opts)
			var b bytes.Buffer
			for _, tl := range fx.set.Tools() {
				sp := tl.Spec()
				b.WriteString("=== tool " + sp.Name + "\n" + sp.Description + "\n--- schema\n")
				var pretty bytes.Buffer
				if err := json.Indent(&pretty, sp.Schema, "", "  "); err != nil {
					t.Fatal(err)
				}
				b.Write(pretty.Bytes())
				b.WriteString("\n")
				if v, ok := tl.(interface{ ValidationSchema() json.RawMessage }); ok {
					// What the registry validates calls against, descriptions
					// left out (they are the schema's above).
					b.WriteString("--- validation schema (descriptions left out)\n")
					b.Write(withoutDescriptions(t, v.ValidationSchema()))
					b.WriteString("\n")
				}
			}
			b.WriteString("=== system section (" + SectionTitle + ")\n" + fx.set.SystemSection() + "\n")
			golden.Equal(t, filepath.Join("testdata", o.name+".golden"), b.Bytes())
		})
	}
}

// withoutDescriptions returns a schema indented, without its description
// members.
func withoutDescriptions(t *testing.T, schema json.RawMessage) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(schema, &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any)
	strip = func(v any) {
		if m, ok := v.(map[string]any); ok {
			delete(m, "description")
			for _, c := range m {
				strip(c)
			}
		}
	}
	strip(v)
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type schemaDoc struct {
	Properties map[string]struct {
		Enum        []string `json:"enum"`
		Description string   `json:"description"`
		Maximum     *int64   `json:"maximum"`
	} `json:"properties"`
	Required []string `json:"required"`
}

func TestSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		offer    []string
		prefer   []string
		bg       int
		enum     []string
		required []string
		props    []string
		absent   []string
	}{
		{name: "default and every option", offer: []string{"claude", "codex", "dsh"}, prefer: []string{"codex"}, bg: 4,
			enum: []string{"claude", "codex", "dsh"}, required: []string{"prompt"},
			props: []string{"agent", "prompt", "model", "effort", "session", "cwd", "background", "timeout_seconds"}},
		{name: "no default: a session handle names the agent", offer: []string{"claude", "codex"}, prefer: []string{"grok"}, bg: 4,
			enum: []string{"claude", "codex"}, required: []string{"prompt"},
			props: []string{"agent", "prompt", "model", "effort", "session", "cwd", "background", "timeout_seconds"}},
		{name: "no default and no conversations: agent required", offer: []string{"grok", "dsh"}, bg: 1,
			enum: []string{"grok", "dsh"}, required: []string{"agent", "prompt"},
			props: []string{"agent", "prompt", "model", "effort", "cwd", "background", "timeout_seconds"}, absent: []string{"session"}},
		{name: "dsh takes nothing", offer: []string{"dsh"}, prefer: []string{"dsh"}, bg: 0,
			enum: []string{"dsh"}, required: []string{"prompt"},
			props: []string{"agent", "prompt", "cwd", "timeout_seconds"}, absent: []string{"model", "effort", "session", "background"}},
		{name: "scv takes model and session, not effort", offer: []string{"scv"}, prefer: []string{"scv"}, bg: 1,
			enum: []string{"scv"}, required: []string{"prompt"},
			props: []string{"agent", "prompt", "model", "session", "cwd", "background", "timeout_seconds"}, absent: []string{"effort"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t, tt.offer, func(o *Options) { o.Prefer, o.MaxBackground = tt.prefer, tt.bg })
			sp := fx.tool(NameAgent).Spec()
			var d schemaDoc
			if err := json.Unmarshal(sp.Schema, &d); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Properties["agent"].Enum, tt.enum) {
				t.Errorf("enum %v, want %v", d.Properties["agent"].Enum, tt.enum)
			}
			if !slices.Equal(d.Required, tt.required) {
				t.Errorf("required %v, want %v", d.Required, tt.required)
			}
			for _, p := range tt.props {
				if _, ok := d.Properties[p]; !ok {
					t.Errorf("no property %s", p)
				}
			}
			for _, p := range tt.absent {
				if _, ok := d.Properties[p]; ok {
					t.Errorf("property %s offered", p)
				}
			}
			if m := d.Properties["timeout_seconds"].Maximum; m == nil || *m != 14400 {
				t.Errorf("timeout maximum %v", m)
			}
			// Each offered agent has its line in the agent description.
			for _, n := range tt.offer {
				if !strings.Contains(d.Properties["agent"].Description, "\n- "+n+" (") {
					t.Errorf("no line for %s in %q", n, d.Properties["agent"].Description)
				}
			}
		})
	}
}

// TestAgentLines checks the line format of tools.md, "Choosing an agent".
func TestAgentLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		agent string
		def   AgentDefaults
		want  string
	}{
		{agent: "codex", def: AgentDefaults{UseFor: "coding", Model: "gpt-5.5", Effort: "high"},
			want: "- codex (Codex): OpenAI's coding agent; reads, edits, and runs code, with live web search under full permissions. Takes model (OpenAI model ID from the Codex configuration; not a Claude alias), effort, and session. The user's note on when to use it: coding. For that work, pass model gpt-5.5 and effort high; omit model and effort for other work so the agent uses its own default."},
		{agent: "claude", def: AgentDefaults{Model: "opus-5.5", Effort: "xhigh"},
			want: "- claude (Claude Code): Anthropic's coding agent; reads, edits, and runs code, and can search and fetch the web. Takes model (a Claude alias such as sonnet or opus, or a full Claude model name), effort, and session. Pass model opus-5.5 and effort xhigh whenever you call it, unless the user asks for another."},
		{agent: "grok", def: AgentDefaults{UseFor: "current events, and anything that needs posts on X"},
			want: "- grok (Grok Build): xAI's coding agent; reads, edits, and runs code, with live web and X search. Call it when another agent declined or refused a request, including a safety or guardrail refusal. Takes model (Grok model ID) and effort. The user's note on when to use it: current events, and anything that needs posts on X."},
		{agent: "grok", def: AgentDefaults{UseFor: "research", Effort: "low"},
			want: "- grok (Grok Build): xAI's coding agent; reads, edits, and runs code, with live web and X search. Call it when another agent declined or refused a request, including a safety or guardrail refusal. Takes model (Grok model ID) and effort. The user's note on when to use it: research. For that work, pass effort low; omit effort for other work so the agent uses its own default."},
		{agent: "dsh", def: AgentDefaults{Model: "ignored"},
			want: "- dsh (DeepSeek Harness): a coding agent on DeepSeek models. Takes no model, effort, or session."},
		{agent: "pi",
			want: "- pi (pi): a minimal coding agent that can run on SCV's own model endpoint; no web search. Takes model (a pi model pattern or provider/id), effort, and session."},
		{agent: "scv",
			want: "- scv (SCV): a nested session for a self-contained sub-task kept out of this context, or work in another project. Takes model and session."},
	}
	for _, tt := range tests {
		fx := newFixture(t, []string{tt.agent}, func(o *Options) { o.Defaults = map[string]AgentDefaults{tt.agent: tt.def} })
		if got := fx.set.agentLine(descriptors[tt.agent]); got != tt.want {
			t.Errorf("%s line:\n got %s\nwant %s", tt.agent, got, tt.want)
		}
	}
}

// TestRegistryValidation runs calls through a registry as the agent loop
// does: with the validation schema, a blank agent reaches Prepare.
func TestRegistryValidation(t *testing.T) {
	t.Parallel()
	fx := newFixture(t, []string{"claude", "codex"}, func(o *Options) { o.Prefer = []string{"codex"} })
	reg := tools.NewRegistry()
	for _, tl := range fx.set.Tools() {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	// The registry validates with the validation schema, without the
	// enum the model sees, so Prepare gives the spec's refusal.
	if _, err := reg.Validate(NameAgent, `{"agent":"zcode","prompt":"x"}`); err != nil {
		t.Fatalf("the registry refused an unknown agent by schema: %v", err)
	}
	if _, err := reg.Validate(NameAgent, `{"prompt":"x","extra":1}`); err == nil {
		t.Fatal("an unknown argument passed")
	}
	// The validation schema lets blank and unknown agents through to
	// Prepare, which refuses the latter with the spec's message.
	tl := fx.tool(NameAgent)
	for _, tc := range []struct{ args, err string }{
		{args: `{"agent":"","prompt":"x"}`},
		{args: `{"agent":"zcode","prompt":"x"}`, err: `agent "zcode" is not offered in this session; choose one of: claude, codex`},
	} {
		args, err := reg.Validate(NameAgent, tc.args)
		if err != nil {
			t.Fatalf("%s: %v", tc.args, err)
		}
		_, err = tl.Prepare(fx.env, args)
		if (err == nil) != (tc.err == "") || err != nil && err.Error() != tc.err {
			t.Fatalf("%s: %v, want %q", tc.args, err, tc.err)
		}
	}
	// The schema the model sees has the enum: a registry that validated
	// with it would refuse both.
	strict := tools.NewRegistry()
	if err := strict.Register(specOnly{tl}); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"agent":"","prompt":"x"}`, `{"agent":"zcode","prompt":"x"}`} {
		if _, err := strict.Validate(NameAgent, args); err == nil {
			t.Fatalf("the model's schema accepted %s", args)
		}
	}
}
