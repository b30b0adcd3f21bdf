package server

import (
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/scv-cli/scv/scv-server/internal/instructions"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/scv-server/internal/skills"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/readskill"
	"github.com/scv-cli/scv/shared/config"
)

// UserSkillsDirName is the user's skill root under SCV_HOME.
const UserSkillsDirName = "skills"

// maxPending bounds the discoveries waiting for their system prompt; see
// sessionSkills.
const maxPending = 1024

// sessionSkills runs skill discovery once per session and shares the result
// between the session's tools and its system prompt.
//
// session.Manager.Start calls the ToolsFunc and then, with the registry it
// returned, the SystemFunc. The ToolsFunc built by wrap discovers the
// skills, registers read_skill when there is at least one readable skill,
// and keeps the set under the registry, which is new for every session; the
// SystemFunc takes it from there (take removes it). A start that fails
// between the two leaves its entry behind: maxPending bounds those.
type sessionSkills struct {
	userRoot string
	log      *slog.Logger

	mu      sync.Mutex
	pending map[*tools.Registry]*skills.Set
}

func newSessionSkills(home string, log *slog.Logger) *sessionSkills {
	return &sessionSkills{
		userRoot: filepath.Join(home, UserSkillsDirName),
		log:      log,
		pending:  map[*tools.Registry]*skills.Set{},
	}
}

// withSkills returns wc with its tools wrapped (see wrap) when they are the
// built-in tools; tools given in Options (tests) are kept as they are.
func (s *sessionSkills) withSkills(wc session.WorkspaceConfig, sc config.SkillsConfig, custom bool) session.WorkspaceConfig {
	if !custom && wc.Tools != nil {
		wc.Tools = s.wrap(wc.Tools, sc)
	}
	return wc
}

// wrap returns base with the session's skills discovered (bounded by sc)
// and read_skill registered when the session has a readable skill.
func (s *sessionSkills) wrap(base session.ToolsFunc, sc config.SkillsConfig) session.ToolsFunc {
	return func(workspace string) (*tools.Registry, error) {
		reg, err := base(workspace)
		if err != nil || reg == nil {
			return reg, err
		}
		set, diags := skills.Discover(skills.Options{Workspace: workspace, UserRoot: s.userRoot, MaxSkills: sc.MaxSkills})
		for _, d := range diags {
			s.log.Warn(d.String())
		}
		if set.Len() > 0 {
			if err := reg.Register(readskill.New(set, sc.MaxSkillBytes)); err != nil {
				return nil, err
			}
		}
		s.mu.Lock()
		if len(s.pending) >= maxPending {
			clear(s.pending)
		}
		s.pending[reg] = set
		s.mu.Unlock()
		return reg, nil
	}
}

// take returns and forgets the skills discovered for reg; nil for a
// tool-free session or tools built without wrap.
func (s *sessionSkills) take(reg *tools.Registry) *skills.Set {
	if reg == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.pending[reg]
	delete(s.pending, reg)
	return set
}

// systemFunc builds each session's system prompt: the base (or override),
// the workspace, its AGENTS.md files, the tools, and the skills taken from
// s (docs/instructions.md).
func systemFunc(override string, s *sessionSkills, log *slog.Logger) session.SystemFunc {
	return func(ws string, reg *tools.Registry) string {
		o := instructions.Options{Override: override, Workspace: ws}
		if reg != nil {
			o.Tools = reg.Names()
		}
		var diags []string
		o.Agents, diags = instructions.DiscoverAgents(ws, instructions.AgentsLimits{})
		for _, d := range diags {
			log.Warn("AGENTS.md " + d)
		}
		set := s.take(reg)
		if set != nil {
			for _, sk := range set.Skills {
				o.Skills = append(o.Skills, instructions.Skill{Name: sk.Name, Description: sk.Description})
			}
			for _, c := range set.Children {
				o.ChildSkills = append(o.ChildSkills, instructions.ChildSkill{Name: c.Name, Description: c.Description, Cwd: c.Cwd})
			}
		}
		return instructions.Build(o)
	}
}
