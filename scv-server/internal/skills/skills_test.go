package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func skill(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n# " + name + "\n\nBody of " + name + ".\n"
}

func canonDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestParseFrontMatter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, name, desc, err string
	}{
		{in: "---\nname: a\ndescription: b\n---\nbody", name: "a", desc: "b"},
		{in: "\xef\xbb\xbf---\r\nname: a\r\ndescription: b\r\n---\r\n", name: "a", desc: "b"},
		{in: "---\nname: \"quoted name\"\ndescription: 'it''s: fine'\n---\n", name: "quoted name", desc: "it's: fine"},
		{in: "---\nname:   spaced   \ndescription:  trims  # comment\nother: x\n---\n", name: "spaced", desc: "trims"},
		{in: "---\nname: a\ndescription: >\n  folded\n  text\nlicense: MIT\n---\n", name: "a", desc: "folded text"},
		{in: "---\nname: a\ndescription: \"line\\nbreak\"\n---\n", name: "a", desc: "line break"},
		{in: "---\nname: a\nmetadata:\n  name: nested\ndescription: b\n---\n", name: "a", desc: "b"},
		{in: "# no front matter\n", err: "does not start with front matter"},
		{in: "---\nname: a\ndescription: b\n", err: "no closing"},
		{in: "---\ndescription: b\n---\n", err: "no name"},
		{in: "---\nname: a\n---\n", err: "no description"},
		{in: "---\nname: a\ndescription: \"\"\n---\n", err: "no description"},
		{in: "---\n---\n", err: "neither"},
	}
	for _, tc := range tests {
		n, d, err := ParseFrontMatter([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || n != tc.name || d != tc.desc {
			t.Errorf("%q: got %q %q %v, want %q %q", tc.in, n, d, err, tc.name, tc.desc)
		}
	}
}

func TestDiscoverPrecedenceAndDiagnostics(t *testing.T) {
	t.Parallel()
	ws, home := canonDir(t), canonDir(t)
	user := filepath.Join(home, "skills")
	write(t, filepath.Join(ws, ".agents/skills/release/SKILL.md"), skill("release", "Release checks."))
	write(t, filepath.Join(ws, ".claude/skills/release/SKILL.md"), skill("release", "Claude's release."))
	write(t, filepath.Join(ws, ".claude/skills/lint/SKILL.md"), skill("lint", "Lint it."))
	write(t, filepath.Join(ws, ".claude/skills/broken/SKILL.md"), "no front matter\n")
	write(t, filepath.Join(ws, ".claude/skills/badname/SKILL.md"), skill("bad name", "Spaces."))
	write(t, filepath.Join(ws, ".claude/skills/empty/README.md"), "not a skill")
	write(t, filepath.Join(user, "release/SKILL.md"), skill("release", "User release."))
	write(t, filepath.Join(user, "notes/SKILL.md"), skill("notes", "User notes."))

	set, diags := Discover(Options{Workspace: ws, UserRoot: user})
	got := map[string]Skill{}
	for _, s := range set.Skills {
		got[s.Name] = s
	}
	if len(got) != 3 || set.Len() != 3 {
		t.Fatalf("skills = %+v", set.Skills)
	}
	if r := got["release"]; r.Description != "Release checks." || r.Source != SourceProject || r.Root != filepath.Join(ws, ".agents/skills") {
		t.Errorf("release = %+v, want the .agents one", r)
	}
	if n := got["notes"]; n.Source != SourceUser || n.Root != user || n.Path != filepath.Join(user, "notes", FileName) {
		t.Errorf("notes = %+v", n)
	}
	if strings.Join(set.Names(), ",") != "lint,notes,release" {
		t.Errorf("names = %v", set.Names())
	}
	var all []string
	for _, d := range diags {
		all = append(all, d.String())
	}
	joined := strings.Join(all, "\n")
	for _, want := range []string{
		"broken/SKILL.md: does not start with front matter",
		"badname/SKILL.md: name \"bad name\" may hold only",
		".claude/skills/release/SKILL.md: a skill named \"release\" was already found",
		home + "/skills/release/SKILL.md: a skill named \"release\" was already found",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("diagnostics lack %q:\n%s", want, joined)
		}
	}
	if len(diags) != 4 {
		t.Errorf("%d diagnostics, want 4:\n%s", len(diags), joined)
	}
}

func TestDiscoverMaxSkills(t *testing.T) {
	t.Parallel()
	ws := canonDir(t)
	for i := range 10 {
		n := fmt.Sprintf("s%02d", i)
		write(t, filepath.Join(ws, ".agents/skills", n, FileName), skill(n, "Skill "+n))
	}
	set, diags := Discover(Options{Workspace: ws, MaxSkills: 3})
	if strings.Join(set.Names(), ",") != "s00,s01,s02" {
		t.Fatalf("names = %v", set.Names())
	}
	if len(diags) != 1 || !strings.Contains(diags[0].Message, "skills.max_skills (3) reached") {
		t.Fatalf("diags = %v", diags)
	}
	set, _ = Discover(Options{Workspace: ws})
	if set.Len() != 10 {
		t.Fatalf("default limit kept %d", set.Len())
	}
}

func TestDiscoverChildProjects(t *testing.T) {
	ws := canonDir(t)
	write(t, filepath.Join(ws, "api/.claude/skills/deploy/SKILL.md"), skill("deploy", "Deploy the API."))
	write(t, filepath.Join(ws, "web/.agents/skills/deploy/SKILL.md"), skill("deploy", "Deploy the web."))
	write(t, filepath.Join(ws, "docs/README.md"), "no skills")
	set, diags := Discover(Options{Workspace: ws})
	if set.Len() != 0 || len(diags) != 0 {
		t.Fatalf("skills = %+v diags = %v", set.Skills, diags)
	}
	if len(set.Children) != 2 {
		t.Fatalf("children = %+v", set.Children)
	}
	c := set.Children[0]
	if c.Name != "api:deploy" || c.Project != "api" || c.Cwd != filepath.Join(ws, "api") || c.Source != SourceChild {
		t.Fatalf("child = %+v", c)
	}
	if _, ok := set.Lookup("api:deploy"); ok {
		t.Fatal("a child skill is readable")
	}
	if _, err := Read(c, 0); err == nil || !strings.Contains(err.Error(), "delegate to that project with the agent tool") {
		t.Fatalf("Read(child) = %v", err)
	}
}

func TestDiscoverProjectRootOutsideWorkspace(t *testing.T) {
	ws, out := canonDir(t), canonDir(t)
	write(t, filepath.Join(out, "x/SKILL.md"), skill("x", "Outside."))
	if err := os.MkdirAll(filepath.Join(ws, ".agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(ws, ".agents/skills")); err != nil {
		t.Fatal(err)
	}
	// A skill directory symlinked outside its root is skipped too.
	write(t, filepath.Join(ws, ".claude/skills/.keep"), "")
	if err := os.Symlink(filepath.Join(out, "x"), filepath.Join(ws, ".claude/skills/x")); err != nil {
		t.Fatal(err)
	}
	set, diags := Discover(Options{Workspace: ws})
	if set.Len() != 0 || len(diags) != 2 {
		t.Fatalf("skills = %+v diags = %v", set.Skills, diags)
	}
	if !strings.Contains(diags[0].Message, "outside "+ws) || !strings.Contains(diags[1].Message, "outside its skill root") {
		t.Fatalf("diags = %v", diags)
	}
}

func TestReadAndByteCap(t *testing.T) {
	t.Parallel()
	ws := canonDir(t)
	body := skill("big", "Big.") + strings.Repeat("é", 100)
	write(t, filepath.Join(ws, ".agents/skills/big/SKILL.md"), body)
	set, _ := Discover(Options{Workspace: ws})
	sk, ok := set.Lookup("big")
	if !ok {
		t.Fatal("big not found")
	}
	c, err := Read(sk, 0)
	if err != nil || c.Text != body || c.Truncated || c.Size != int64(len(body)) {
		t.Fatalf("Read = %+v, %v", c, err)
	}
	// A cap that cuts a two-byte character ends before it.
	limit := int64(len(body) - 51)
	c, err = Read(sk, limit)
	if err != nil || !c.Truncated || int64(len(c.Text)) != limit-1 || !strings.HasPrefix(body, c.Text) {
		t.Fatalf("Read capped = %d bytes truncated=%v, %v", len(c.Text), c.Truncated, err)
	}
}

func TestReadRefusesSymlinkSwap(t *testing.T) {
	t.Parallel()
	for _, swap := range []string{"file", "dir"} {
		t.Run(swap, func(t *testing.T) {
			ws, out := canonDir(t), canonDir(t)
			dir := filepath.Join(ws, ".agents/skills/s")
			write(t, filepath.Join(dir, FileName), skill("s", "S."))
			write(t, filepath.Join(out, FileName), skill("s", "Stolen: secret contents."))
			set, _ := Discover(Options{Workspace: ws})
			sk, ok := set.Lookup("s")
			if !ok {
				t.Fatal("s not found")
			}
			target := filepath.Join(dir, FileName)
			if swap == "dir" {
				target = dir
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(out, dir); err != nil {
					t.Fatal(err)
				}
			} else {
				if err := os.Remove(target); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(filepath.Join(out, FileName), target); err != nil {
					t.Fatal(err)
				}
			}
			c, err := Read(sk, 0)
			if err == nil || !strings.Contains(err.Error(), "refused") || strings.Contains(c.Text, "secret") {
				t.Fatalf("Read after swapping the %s = %+v, %v", swap, c, err)
			}
		})
	}
}

func TestReadRefusesNonRegular(t *testing.T) {
	ws := canonDir(t)
	write(t, filepath.Join(ws, ".agents/skills/s/SKILL.md"), skill("s", "S."))
	set, _ := Discover(Options{Workspace: ws})
	sk, _ := set.Lookup("s")
	p := filepath.Join(ws, ".agents/skills/s/SKILL.md")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(sk, 0); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Read(dir) = %v", err)
	}
}
