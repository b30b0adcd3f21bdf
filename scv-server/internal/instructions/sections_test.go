package instructions

import (
	"strings"
	"testing"
)

func TestBaseSection(t *testing.T) {
	t.Parallel()
	if BaseSection("") != Base() || BaseSection("  \n") != Base() {
		t.Fatal("an empty override should keep the base")
	}
	if BaseSection("\n Be terse. \n") != "Be terse." {
		t.Fatal("override not trimmed")
	}
}

func TestWorkspaceSection(t *testing.T) {
	t.Parallel()
	if got := WorkspaceSection("/w", false); got != "# Workspace\n\nYou are working in /w." {
		t.Fatalf("got %q", got)
	}
	if got := WorkspaceSection("/w", true); !strings.Contains(got, "relative to it") {
		t.Fatalf("got %q", got)
	}
}

func TestAgentsSection(t *testing.T) {
	t.Parallel()
	if AgentsSection(nil) != "" {
		t.Fatal("no files should give no section")
	}
	got := AgentsSection([]AgentsFile{
		{Path: "/r/AGENTS.md", Content: "Outer.\n", Size: 7},
		{Path: "/r/w/AGENTS.md", Content: "Inner", Size: 9, Truncated: true},
	})
	for _, want := range []string{"# Project instructions", "outermost first", "## /r/AGENTS.md\n\nOuter.\n\n## /r/w/AGENTS.md\n\nInner\n[... truncated: 5 of 9 bytes shown"} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
}

func TestToolsSection(t *testing.T) {
	t.Parallel()
	if got := ToolsSection(nil); !strings.Contains(got, noToolsSentence) {
		t.Fatalf("got %q", got)
	}
	if got := ToolsSection([]string{"read", "bash"}); !strings.Contains(got, "Tools on offer: read, bash.") {
		t.Fatalf("got %q", got)
	}
}

func TestSkillsSection(t *testing.T) {
	if SkillsSection(nil, nil) != "" {
		t.Fatal("no skills should give no section")
	}
	got := SkillsSection([]Skill{{"release", "Release checks."}}, nil)
	for _, want := range []string{"# Skills", "untrusted input", `read_skill {"name": "<name>"}`, "\n- release: Release checks."} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "child projects") {
		t.Errorf("no children, but:\n%s", got)
	}
	got = SkillsSection(nil, []ChildSkill{{"api:deploy", "Deploy.", "/w/api"}})
	for _, want := range []string{"untrusted input", "## Skills of child projects", "agent tool", "- api:deploy (cwd /w/api): Deploy."} {
		if !strings.Contains(got, want) {
			t.Errorf("section lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Before using a skill, read it") {
		t.Errorf("child-only list offers read_skill:\n%s", got)
	}
}

func TestExtraSection(t *testing.T) {
	t.Parallel()
	if got := ExtraSection(Section{Title: "Delegation", Body: " Use agents. \n"}); got != "# Delegation\n\nUse agents." {
		t.Fatalf("got %q", got)
	}
	if got := ExtraSection(Section{Body: "Bare."}); got != "Bare." {
		t.Fatalf("got %q", got)
	}
}

// TestBuildFullOrder checks every part in its documented order.
func TestBuildFullOrder(t *testing.T) {
	t.Parallel()
	got := Build(full())
	marks := []string{Base(), "# Workspace", "# Project instructions", "# Tools", "# Skills", "# Delegation", "# Chat channel"}
	last := -1
	for _, m := range marks {
		i := strings.Index(got, m)
		if i <= last {
			t.Fatalf("%q missing or out of order:\n%s", m, got)
		}
		last = i
	}
	if !strings.HasSuffix(got, "\n") || strings.HasSuffix(got, "\n\n") {
		t.Fatal("prompt should end with exactly one newline")
	}
}

func full() Options {
	return Options{
		Workspace: "/home/user/repo/project",
		Agents: []AgentsFile{
			{Path: "/home/user/repo/AGENTS.md", Content: "Run `make check` before committing.\n", Size: 36},
			{Path: "/home/user/repo/project/AGENTS.md", Content: "This service is written in Go.", Size: 100, Truncated: true},
		},
		Tools:       []string{"bash", "read", "read_skill"},
		Skills:      []Skill{{"release", "Release checks for this repository."}, {"notes", "The user's note-taking conventions."}},
		ChildSkills: []ChildSkill{{"api:deploy", "Deploy the API.", "/home/user/repo/project/api"}},
		Sections:    []Section{{Title: "Delegation", Body: "Later feature."}, {Title: "Chat channel", Body: "Later feature."}},
	}
}
