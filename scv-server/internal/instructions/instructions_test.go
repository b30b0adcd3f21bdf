package instructions

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/testkit/golden"
)

const noToolsSentence = "This session has no tools: answer from the conversation alone."

func TestBase(t *testing.T) {
	t.Parallel()
	b := Base()
	if b == "" {
		t.Fatal("Base is empty")
	}
	if b != strings.TrimSpace(b) {
		t.Fatalf("Base is not trimmed: %q", b)
	}
	if !strings.Contains(b, "SCV") {
		t.Fatalf("Base does not name SCV: %q", b)
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	const ws = "/home/u/project"
	tests := []struct {
		name    string
		opts    Options
		wantHas []string
		wantNot []string
		// prefix is what the prompt must start with.
		prefix string
	}{
		{
			name:    "base with tools",
			opts:    Options{Workspace: ws, Tools: []string{"read", "write", "bash"}},
			prefix:  Base() + "\n\n# Workspace\n",
			wantHas: []string{"You are working in " + ws + ".", "Tools on offer: read, write, bash.", "approval"},
			wantNot: []string{noToolsSentence},
		},
		{
			name:    "base without tools",
			opts:    Options{Workspace: ws},
			prefix:  Base() + "\n\n",
			wantHas: []string{"You are working in " + ws + ".", "# Tools", noToolsSentence},
			wantNot: []string{"Tools on offer"},
		},
		{
			name:    "empty tool list is tool-free",
			opts:    Options{Workspace: ws, Tools: []string{}},
			wantHas: []string{noToolsSentence},
			wantNot: []string{"Tools on offer"},
		},
		{
			name:    "one tool",
			opts:    Options{Workspace: ws, Tools: []string{"read"}},
			wantHas: []string{"Tools on offer: read."},
			wantNot: []string{noToolsSentence},
		},
		{
			name:    "override replaces base",
			opts:    Options{Override: "You are a pirate.", Workspace: ws, Tools: []string{"read"}},
			prefix:  "You are a pirate.\n\n# Workspace\n",
			wantHas: []string{"You are working in " + ws + ".", "Tools on offer: read."},
			wantNot: []string{Base()},
		},
		{
			name:    "override is trimmed",
			opts:    Options{Override: "\n\n  Be terse.  \n\n", Workspace: ws},
			prefix:  "Be terse.\n\n# Workspace",
			wantHas: []string{noToolsSentence},
			wantNot: []string{Base()},
		},
		{
			name:    "multi-line override kept whole",
			opts:    Options{Override: "Line one.\n\nLine two.", Workspace: ws},
			prefix:  "Line one.\n\nLine two.\n\n# Workspace",
			wantNot: []string{Base()},
		},
		{
			name:    "workspace with spaces and unicode",
			opts:    Options{Workspace: "/home/ü/my project", Tools: []string{"read"}},
			wantHas: []string{"You are working in /home/ü/my project."},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Build(tc.opts)
			if tc.prefix != "" && !strings.HasPrefix(got, tc.prefix) {
				t.Fatalf("prompt does not start with %q:\n%s", tc.prefix, got)
			}
			for _, w := range tc.wantHas {
				if !strings.Contains(got, w) {
					t.Errorf("prompt does not contain %q:\n%s", w, got)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("prompt contains %q:\n%s", w, got)
				}
			}
			if !strings.HasSuffix(got, "\n") || strings.HasSuffix(got, "\n\n") {
				t.Errorf("prompt should end with exactly one newline: %q", got[max(0, len(got)-20):])
			}
		})
	}
}

// TestBuildSectionOrder checks the fixed order: the base (or override),
// then the workspace, then the tools, each section once.
func TestBuildSectionOrder(t *testing.T) {
	t.Parallel()
	for _, opts := range []Options{
		{Workspace: "/w", Tools: []string{"read"}},
		{Workspace: "/w"},
		{Override: "Custom.", Workspace: "/w", Tools: []string{"read", "bash"}},
	} {
		got := Build(opts)
		head := Base()
		if opts.Override != "" {
			head = opts.Override
		}
		marks := []string{head, "# Workspace", "You are working in /w.", "# Tools"}
		last := -1
		for _, m := range marks {
			i := strings.Index(got, m)
			if i < 0 {
				t.Fatalf("%+v: prompt lacks %q:\n%s", opts, m, got)
			}
			if i <= last {
				t.Fatalf("%+v: %q is out of order:\n%s", opts, m, got)
			}
			if strings.Count(got, m) != 1 {
				t.Fatalf("%+v: %q appears %d times", opts, m, strings.Count(got, m))
			}
			last = i
		}
		if !strings.HasPrefix(got, head) {
			t.Fatalf("%+v: prompt does not start with its base section", opts)
		}
	}
}

func TestBuildDeterministic(t *testing.T) {
	t.Parallel()
	o := Options{Workspace: "/w", Tools: []string{"b", "a"}}
	first := Build(o)
	for i := 0; i < 10; i++ {
		if Build(o) != first {
			t.Fatal("Build is not deterministic")
		}
	}
	// The tool list keeps the caller's order.
	if !strings.Contains(first, "Tools on offer: b, a.") {
		t.Fatalf("tool order not kept:\n%s", first)
	}
}

func TestBuildGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		opts Options
	}{
		{"default.golden", Options{Workspace: "/home/user/project", Tools: []string{"read"}}},
		{"no_tools.golden", Options{Workspace: "/home/user/project"}},
		{"full.golden", full()},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			got := Build(tc.opts)
			golden.Equal(t, filepath.Join("testdata", tc.file), got)
		})
	}
}
