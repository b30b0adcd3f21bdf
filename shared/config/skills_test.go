package config

import (
	"strings"
	"testing"
)

func TestSkillsConfig(t *testing.T) {
	t.Parallel()
	d := Defaults().Skills
	if d.MaxSkills != 64 || d.MaxSkillBytes != 64<<10 {
		t.Fatalf("defaults = %+v", d)
	}
	// A project may set both keys, over the user's.
	f := newFixture(t, "[skills]\nmax_skills = 10\nmax_skill_bytes = 2048\n", "[skills]\nmax_skills = 5\n")
	c, diags := mustLoad(t, f, nil)
	if c.Skills.MaxSkills != 5 || c.Skills.MaxSkillBytes != 2048 || len(diags) != 0 {
		t.Fatalf("skills = %+v, diags = %v", c.Skills, diags)
	}
	if s := c.Sources["skills.max_skills"]; s.Kind != SourceProject {
		t.Fatalf("source = %+v", s)
	}
	for _, tc := range []struct{ file, want string }{
		{"[skills]\nmax_skills = 0\n", `key "skills.max_skills" is 0, out of range: it must be a number of skills from 1 to 1000`},
		{"[skills]\nmax_skills = 1001\n", `key "skills.max_skills" is 1001, out of range`},
		{"[skills]\nmax_skill_bytes = 100\n", `key "skills.max_skill_bytes" is 100, out of range: it must be a size in bytes from 1024 to 1048576`},
	} {
		f := newFixture(t, "", tc.file)
		if _, _, err := f.load(nil); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), f.projectFile+":2:") {
			t.Errorf("%q: err = %v, want %q", tc.file, err, tc.want)
		}
	}
}
