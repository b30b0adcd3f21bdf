package readskill

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/skills"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/toolstest"
	"github.com/scv-cli/scv/shared/protocol"
)

const skillMD = "---\nname: release\ndescription: Release checks.\n---\nRun the release checks.\n"

func setup(t *testing.T) (tools.Env, *skills.Set) {
	t.Helper()
	env := toolstest.Env(t, map[string]string{
		".agents/skills/release/SKILL.md":    skillMD,
		"api/.claude/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploy.\n---\n",
	})
	set, diags := skills.Discover(skills.Options{Workspace: env.Workspace})
	if set.Len() != 1 || len(set.Children) != 1 || len(diags) != 0 {
		t.Fatalf("set = %+v, diags = %v", set, diags)
	}
	return env, set
}

func call(t *testing.T, tool *Tool, env tools.Env, name string) (tools.Result, *tools.Plan, error) {
	t.Helper()
	reg := tools.NewRegistry()
	if err := reg.Register(tool); err != nil {
		t.Fatal(err)
	}
	raw, err := reg.Validate(Name, string(toolstest.Args(t, map[string]any{"name": name})))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := tool.Prepare(env, raw)
	if err != nil {
		return tools.Result{}, nil, err
	}
	res, err := plan.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res, plan, nil
}

func TestReadSkill(t *testing.T) {
	t.Parallel()
	env, set := setup(t)
	res, plan, err := call(t, New(set, 0), env, "release")
	if err != nil {
		t.Fatal(err)
	}
	if plan.Risk != protocol.RiskReadOnly || plan.Summary != "Read skill release" {
		t.Fatalf("plan = %+v", plan)
	}
	if !res.Success || res.Truncated || !strings.HasSuffix(res.Output, skillMD) || !strings.Contains(res.Output, "[untrusted skill content") {
		t.Fatalf("result = %+v", res)
	}
}

func TestReadSkillByteCap(t *testing.T) {
	t.Parallel()
	env, set := setup(t)
	res, _, err := call(t, New(set, 10), env, "release")
	if err != nil {
		t.Fatal(err)
	}
	if !res.Success || !res.Truncated || !strings.Contains(res.Output, "\n---\nname: \n[... skill truncated]") || !strings.Contains(res.Output, "truncated at skills.max_skill_bytes (10)") {
		t.Fatalf("result = %+v", res)
	}
}

func TestReadSkillRefusals(t *testing.T) {
	t.Parallel()
	env, set := setup(t)
	tool := New(set, 0)
	for name, want := range map[string]string{
		"nope":                     `there is no skill named "nope"; available skills: release`,
		"../../etc/passwd":         "available skills: release",
		".agents/skills/release":   "never a path",
		"api:deploy":               "delegate to that project with the agent tool and cwd " + filepath.Join(env.Workspace, "api"),
		"release/../release/SKILL": "there is no skill named",
	} {
		if _, _, err := call(t, tool, env, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", name, err, want)
		}
	}
}

func TestReadSkillSymlinkSwapRefused(t *testing.T) {
	t.Parallel()
	env, set := setup(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "SKILL.md"), []byte("stolen secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(env.Workspace, ".agents/skills/release/SKILL.md")
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "SKILL.md"), p); err != nil {
		t.Fatal(err)
	}
	res, _, err := call(t, New(set, 0), env, "release")
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || strings.Contains(res.Output, "stolen") || !strings.Contains(res.Output, "refused") {
		t.Fatalf("result = %+v", res)
	}
}
