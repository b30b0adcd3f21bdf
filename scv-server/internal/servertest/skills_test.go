package servertest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/protocol"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const releaseSkill = "---\nname: release\ndescription: \"Release checks for this repository.\"\n---\nRun make release-check, then tag.\n"

// TestReadSkillEndToEnd: the session's system prompt lists the project's
// skills (as untrusted input), its child projects' and the user's, and its
// AGENTS.md; the model reads a skill by name with read_skill.
func TestReadSkillEndToEnd(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, ".agents/skills/release/SKILL.md"), releaseSkill)
	writeFile(t, filepath.Join(ws, ".claude/skills/broken/SKILL.md"), "no front matter\n")
	writeFile(t, filepath.Join(ws, "api/.claude/skills/deploy/SKILL.md"), "---\nname: deploy\ndescription: Deploy the API.\n---\n")
	writeFile(t, filepath.Join(s.Home, "skills/notes/SKILL.md"), "---\nname: notes\ndescription: 'The user''s notes.'\n---\nTake notes.\n")
	writeFile(t, filepath.Join(ws, "AGENTS.md"), "Use tabs.\n")

	s.Client.Init(3)
	sid := s.Client.StartSession(ws, 3).SessionID
	f.Enqueue(
		fo.Script(fo.ToolCall("call_1", "read_skill", `{"name":"release"}`)),
		fo.Script(fo.Text("Done.")),
	)
	c := s.Client
	c.Turn(sid, "prepare the release")
	evs, _ := st.Until[*protocol.TurnCompleted](c)
	var done *protocol.ToolCompleted
	for _, e := range evs {
		if a, ok := e.(*protocol.ApprovalRequested); ok {
			t.Fatalf("read_skill is read-only, yet asked for approval: %+v", a)
		}
		if d, ok := e.(*protocol.ToolCompleted); ok {
			done = d
		}
	}
	if done == nil || !done.Success || !strings.Contains(done.Output, "Run make release-check, then tag.") || !strings.Contains(done.Output, "untrusted skill content") {
		t.Fatalf("tool.completed = %+v", done)
	}
	reqs := f.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	var names []string
	for _, tl := range reqs[0].Tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "read_skill") {
		t.Fatalf("tools = %v", names)
	}
	system := reqs[0].Messages[0]
	if system.Role != "system" {
		t.Fatalf("first message = %+v", system)
	}
	for _, want := range []string{
		"# Project instructions", "## " + filepath.Join(ws, "AGENTS.md") + "\n\nUse tabs.",
		"# Skills", "untrusted input",
		"- release: Release checks for this repository.",
		"- notes: The user's notes.",
		"- api:deploy (cwd " + filepath.Join(ws, "api") + "): Deploy the API.",
		"read_skill",
	} {
		if !strings.Contains(system.Content, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, system.Content)
		}
	}
	if strings.Contains(system.Content, "broken") {
		t.Errorf("the invalid skill is listed:\n%s", system.Content)
	}
	if last := lastToolMessage(t, f); !strings.Contains(last, "Run make release-check") {
		t.Fatalf("tool message = %q", last)
	}
}

// TestReadSkillUnknownName: a name that is not in the session's map is
// refused with the available names; a path is never read.
func TestReadSkillUnknownName(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, ".agents/skills/release/SKILL.md"), releaseSkill)
	s.Client.Init(3)
	sid := s.Client.StartSession(ws, 3).SessionID
	f.Enqueue(
		fo.Script(fo.ToolCall("call_1", "read_skill", `{"name":"../../etc/passwd"}`)),
		fo.Script(fo.Text("Done.")),
	)
	s.Client.Turn(sid, "read it")
	st.Until[*protocol.TurnCompleted](s.Client)
	if last := lastToolMessage(t, f); !strings.Contains(last, `there is no skill named "../../etc/passwd"; available skills: release`) {
		t.Fatalf("tool message = %q", last)
	}
}

// TestNoSkillsNoReadSkill: a workspace without skills gets no read_skill
// and no Skills section.
func TestNoSkillsNoReadSkill(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	sid, _ := session(t, s, 3)
	f.Enqueue(fo.Script(fo.Text("Hi.")))
	s.Client.Turn(sid, "hi")
	st.Until[*protocol.TurnCompleted](s.Client)
	req := f.Requests()[0]
	for _, tl := range req.Tools {
		if tl.Name == "read_skill" {
			t.Fatal("read_skill registered without skills")
		}
	}
	if strings.Contains(req.Messages[0].Content, "# Skills") {
		t.Fatalf("system prompt has a Skills section:\n%s", req.Messages[0].Content)
	}
}

// TestProjectSkillsConfig: a project file's skills.max_skill_bytes bounds
// what read_skill returns in that workspace.
func TestProjectSkillsConfig(t *testing.T) {
	t.Parallel()
	f, s := fake(t, "", st.Options{})
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, ".scv/config.toml"), "[skills]\nmax_skill_bytes = 1024\n")
	writeFile(t, filepath.Join(ws, ".agents/skills/big/SKILL.md"), "---\nname: big\ndescription: Big.\n---\n"+strings.Repeat("x", 3000))
	s.Client.Init(3)
	sid := s.Client.StartSession(ws, 3).SessionID
	f.Enqueue(fo.Script(fo.ToolCall("call_1", "read_skill", `{"name":"big"}`)), fo.Script(fo.Text("Done.")))
	s.Client.Turn(sid, "read big")
	st.Until[*protocol.TurnCompleted](s.Client)
	last := lastToolMessage(t, f)
	if !strings.Contains(last, "truncated at skills.max_skill_bytes (1024)") || strings.Count(last, "x") > 1024 {
		t.Fatalf("tool message = %q", last)
	}
}
