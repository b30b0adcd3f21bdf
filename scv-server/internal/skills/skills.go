// Package skills discovers a session's skills: directories holding a
// SKILL.md whose front matter gives a name and a description. Discovery runs
// once at session start and builds the name → canonical path map that
// read_skill reads from; Read revalidates an entry at call time.
//
// Roots, in precedence order (the first skill of a name wins, so project
// skills win over the user's):
//
//  1. <workspace>/.agents/skills/<dir>/SKILL.md
//  2. <workspace>/.claude/skills/<dir>/SKILL.md
//  3. <user root>/<dir>/SKILL.md ($SCV_HOME/skills)
//
// Child projects, the directories directly under the workspace that hold
// .agents/skills or .claude/skills, are listed as <project>:<name>. They are
// not readable here: the model delegates to that project instead.
//
// Skill names, descriptions and content are untrusted input.
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/scv-cli/scv/shared/statefile"

	"github.com/scv-cli/scv/shared/textcut"
)

// FileName is the name of a skill's file.
const FileName = "SKILL.md"

// Defaults of the skills.* configuration keys.
const (
	DefaultMaxSkills     = 64
	DefaultMaxSkillBytes = 64 << 10
)

// frontMatterBytes bounds how much of a SKILL.md discovery reads to find
// its front matter.
const frontMatterBytes = 16 << 10

// maxDescription bounds a description as listed in the prompt, in bytes.
const maxDescription = 1024

// maxName bounds a skill name.
const maxName = 64

// Source says where a skill was found.
type Source string

// Sources.
const (
	SourceProject Source = "project"
	SourceUser    Source = "user"
	SourceChild   Source = "child"
)

// Skill is one discovered skill.
type Skill struct {
	// Name is the skill's name; <project>:<name> for a child project's.
	Name        string
	Description string
	// Path is the canonical path of its SKILL.md (symlinks evaluated).
	Path string
	// Root is the canonical skill root it was found under; Read refuses
	// the skill once Path no longer resolves inside it.
	Root   string
	Source Source
	// Project is the child project's directory name, and Cwd its
	// canonical directory (SourceChild only).
	Project string
	Cwd     string
}

// Diagnostic is a skipped skill or root, for the caller to log as a warning.
type Diagnostic struct {
	Path    string
	Message string
}

func (d Diagnostic) String() string { return "skill " + d.Path + ": " + d.Message }

// Options configure Discover.
type Options struct {
	// Workspace is the canonical workspace directory.
	Workspace string
	// UserRoot is the user's skill root ($SCV_HOME/skills); empty for none.
	UserRoot string
	// MaxSkills bounds the skills kept, child projects' included;
	// 0 or less means DefaultMaxSkills.
	MaxSkills int
}

// Set is the result of a discovery. Its zero value (and nil) is empty.
type Set struct {
	// Skills are the readable skills (project and user), in discovery order.
	Skills []Skill
	// Children are the child projects' skills, listed for delegation.
	Children []Skill
	byName   map[string]int
}

// Len returns the number of readable skills.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.Skills)
}

// Lookup returns the readable skill named name.
func (s *Set) Lookup(name string) (Skill, bool) {
	if s == nil {
		return Skill{}, false
	}
	i, ok := s.byName[name]
	if !ok {
		return Skill{}, false
	}
	return s.Skills[i], true
}

// Child returns the child project skill named name (<project>:<name>).
func (s *Set) Child(name string) (Skill, bool) {
	if s == nil {
		return Skill{}, false
	}
	for _, c := range s.Children {
		if c.Name == name {
			return c, true
		}
	}
	return Skill{}, false
}

// Names returns the readable skills' names, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.Skills))
	for _, sk := range s.Skills {
		out = append(out, sk.Name)
	}
	sort.Strings(out)
	return out
}

// ProjectRoots returns the project skill roots of dir, in precedence order.
func ProjectRoots(dir string) []string {
	return []string{filepath.Join(dir, ".agents", "skills"), filepath.Join(dir, ".claude", "skills")}
}

type discoverer struct {
	max   int
	set   *Set
	diags []Diagnostic
	full  bool
}

// Discover finds the skills of a workspace and the user's skill root. It
// never fails: unreadable roots and invalid skills become Diagnostics.
func Discover(o Options) (*Set, []Diagnostic) {
	d := &discoverer{max: o.MaxSkills, set: &Set{byName: map[string]int{}}}
	if d.max <= 0 {
		d.max = DefaultMaxSkills
	}
	ws := o.Workspace
	if ws != "" {
		for _, r := range ProjectRoots(ws) {
			d.root(r, ws, SourceProject, "", "")
		}
	}
	if o.UserRoot != "" {
		d.root(o.UserRoot, "", SourceUser, "", "")
	}
	if ws != "" {
		d.children(ws)
	}
	return d.set, d.diags
}

func (d *discoverer) count() int { return len(d.set.Skills) + len(d.set.Children) }

// root scans one skill root. within, when set, is the canonical directory
// the root must resolve inside (the workspace, for project roots).
func (d *discoverer) root(root, within string, src Source, project, cwd string) {
	if d.full {
		return
	}
	canon, err := filepath.EvalSymlinks(root)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.diags = append(d.diags, Diagnostic{root, fmt.Sprintf("cannot resolve the skill root: %v", err)})
		}
		return
	}
	if within != "" && !Inside(within, canon) {
		d.diags = append(d.diags, Diagnostic{root, fmt.Sprintf("the skill root resolves to %s, outside %s; skipped", canon, within)})
		return
	}
	entries, err := os.ReadDir(canon)
	if err != nil {
		d.diags = append(d.diags, Diagnostic{root, fmt.Sprintf("cannot list the skill root: %v", err)})
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(root, e.Name(), FileName)
		sk, err := load(canon, filepath.Join(canon, e.Name(), FileName))
		if err != nil {
			if !errors.Is(err, errNoSkill) {
				d.diags = append(d.diags, Diagnostic{p, err.Error() + "; skipped"})
			}
			continue
		}
		sk.Source = src
		if src == SourceChild {
			sk.Project, sk.Cwd = project, cwd
			sk.Name = project + ":" + sk.Name
			if _, dup := d.set.Child(sk.Name); dup {
				d.diags = append(d.diags, Diagnostic{p, fmt.Sprintf("a skill named %q was already found; skipped", sk.Name)})
				continue
			}
		} else if prev, dup := d.set.Lookup(sk.Name); dup {
			d.diags = append(d.diags, Diagnostic{p, fmt.Sprintf("a skill named %q was already found at %s, which wins; skipped", sk.Name, prev.Path)})
			continue
		}
		if d.count() >= d.max {
			d.full = true
			d.diags = append(d.diags, Diagnostic{p, fmt.Sprintf("skills.max_skills (%d) reached; this and any further skills are skipped", d.max)})
			return
		}
		if src == SourceChild {
			d.set.Children = append(d.set.Children, sk)
		} else {
			d.set.byName[sk.Name] = len(d.set.Skills)
			d.set.Skills = append(d.set.Skills, sk)
		}
	}
}

// children lists the skills of the directories directly under ws that
// hold a project skill root. Symlinked directories are not followed.
func (d *discoverer) children(ws string) {
	entries, err := os.ReadDir(ws)
	if err != nil {
		return
	}
	for _, e := range entries {
		if d.full {
			return
		}
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || strings.Contains(e.Name(), ":") {
			continue
		}
		dir := filepath.Join(ws, e.Name())
		for _, r := range ProjectRoots(dir) {
			d.root(r, dir, SourceChild, e.Name(), dir)
		}
	}
}

var errNoSkill = errors.New("no SKILL.md")

// load reads the front matter of the SKILL.md at path, under the canonical
// root.
func load(root, path string) (Skill, error) {
	canon, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Skill{}, errNoSkill
		}
		return Skill{}, fmt.Errorf("cannot resolve: %v", err)
	}
	if !Inside(root, canon) {
		return Skill{}, fmt.Errorf("resolves to %s, outside its skill root %s", canon, root)
	}
	if filepath.Base(canon) != FileName {
		return Skill{}, fmt.Errorf("resolves to %s, which is not named %s", canon, FileName)
	}
	data, _, err := readRegular(canon, frontMatterBytes)
	if err != nil {
		return Skill{}, err
	}
	name, desc, err := ParseFrontMatter(data)
	if err != nil {
		return Skill{}, err
	}
	if err := validName(name); err != nil {
		return Skill{}, err
	}
	return Skill{Name: name, Description: clip(desc, maxDescription), Path: canon, Root: root}, nil
}

func validName(name string) error {
	if len(name) > maxName {
		return fmt.Errorf("name %q is longer than %d bytes", name, maxName)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || (i > 0 && (r == '-' || r == '_' || r == '.'))
		if !ok {
			return fmt.Errorf("name %q may hold only letters, digits, '-', '_' and '.', and must start with a letter or digit", name)
		}
	}
	return nil
}

// clip bounds s to n bytes on a character boundary, marking a cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return textcut.Prefix(s, n) + "…"
}

// ParseFrontMatter returns the name and description of a SKILL.md: front
// matter between a first line "---" and the next "---" line, with top-level
// "name:" and "description:" keys. Values may be quoted ('…' or "…") and
// a description may be a folded (>) or literal (|) block; only these two
// keys are read, the rest is ignored.
func ParseFrontMatter(data []byte) (name, description string, err error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	lines := strings.Split(text, "\n")
	if len(lines) == 0 || strings.TrimRight(lines[0], " \t") != "---" {
		return "", "", errors.New(`does not start with front matter (a "---" line)`)
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if strings.TrimRight(lines[i], " \t") == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return "", "", fmt.Errorf(`front matter has no closing "---" line within its first %d bytes`, frontMatterBytes)
	}
	vals := map[string]string{}
	fm := lines[1:end]
	for i := 0; i < len(fm); i++ {
		line := fm[i]
		if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if k != "name" && k != "description" {
			continue
		}
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, ">") || strings.HasPrefix(v, "|") {
			sep := " "
			if v[0] == '|' {
				sep = "\n"
			}
			var parts []string
			for i+1 < len(fm) && (fm[i+1] == "" || fm[i+1][0] == ' ' || fm[i+1][0] == '\t') {
				i++
				parts = append(parts, strings.TrimSpace(fm[i]))
			}
			v = strings.TrimSpace(strings.Join(parts, sep))
		} else {
			v = unquote(v)
		}
		if _, dup := vals[k]; !dup {
			vals[k] = v
		}
	}
	name, description = vals["name"], oneLine(vals["description"])
	switch {
	case name == "" && description == "":
		return "", "", errors.New("front matter has neither name nor description")
	case name == "":
		return "", "", errors.New("front matter has no name")
	case description == "":
		return "", "", errors.New("front matter has no description")
	}
	return name, description, nil
}

func unquote(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if u, err := strconv.Unquote(v); err == nil {
			return strings.TrimSpace(u)
		}
		return strings.TrimSpace(v[1 : len(v)-1])
	}
	if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
		return strings.TrimSpace(strings.ReplaceAll(v[1:len(v)-1], "''", "'"))
	}
	// An unquoted value ends at a comment.
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// oneLine folds s onto one line of valid UTF-8 without control characters,
// so a description cannot open a new prompt section.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// Inside reports whether path is dir or lies under it; both are clean
// absolute paths.
func Inside(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// readRegular reads at most max bytes of the regular file at path, without
// following a final symlink and without blocking on a FIFO; truncated says
// the file is longer.
func readRegular(path string, max int64) (data []byte, truncated bool, err error) {
	f, err := statefile.Open(filepath.Dir(path), filepath.Base(path), os.O_RDONLY, 0, statefile.NoLinks)
	if err != nil {
		return nil, false, fmt.Errorf("cannot open: %v", err)
	}
	defer f.Close()
	return readOpen(f, max)
}

func readOpen(f *os.File, max int64) ([]byte, bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("cannot stat: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("is not a regular file (%s)", fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, false, fmt.Errorf("cannot read: %v", err)
	}
	if int64(len(data)) > max {
		return data[:max], true, nil
	}
	return data, false, nil
}

// Content is what Read returns.
type Content struct {
	Text string
	// Size is the file's size in bytes; Truncated says Text holds less.
	Size      int64
	Truncated bool
}

// Read returns at most max bytes of sk's SKILL.md after revalidating it:
// its canonical path must still resolve (symlinks evaluated again) to
// itself, inside the root it was found under, and be a regular file named
// SKILL.md. The file is opened through an os.Root of that root, so a
// symlink swapped in between the check and the open cannot lead outside.
func Read(sk Skill, max int64) (Content, error) {
	if sk.Source == SourceChild {
		return Content{}, fmt.Errorf("skill %s belongs to the child project %s; delegate to that project with the agent tool and cwd %s", sk.Name, sk.Project, sk.Cwd)
	}
	if max <= 0 {
		max = DefaultMaxSkillBytes
	}
	root, err := filepath.EvalSymlinks(sk.Root)
	if err != nil || root != sk.Root {
		return Content{}, fmt.Errorf("skill %s is no longer available: its skill root %s moved or changed since the session started", sk.Name, sk.Root)
	}
	canon, err := filepath.EvalSymlinks(sk.Path)
	if err != nil {
		return Content{}, fmt.Errorf("skill %s is no longer available: %v", sk.Name, err)
	}
	if canon != sk.Path || !Inside(sk.Root, canon) || filepath.Base(canon) != FileName {
		return Content{}, fmt.Errorf("skill %s is refused: its SKILL.md now resolves to %s, not the file found at session start inside %s", sk.Name, canon, sk.Root)
	}
	rel, err := filepath.Rel(sk.Root, canon)
	if err != nil {
		return Content{}, fmt.Errorf("skill %s is refused: %v", sk.Name, err)
	}
	r, err := os.OpenRoot(sk.Root)
	if err != nil {
		return Content{}, fmt.Errorf("skill %s is no longer available: %v", sk.Name, err)
	}
	defer r.Close()
	f, err := r.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Content{}, fmt.Errorf("skill %s is refused: cannot open its SKILL.md inside %s: %v", sk.Name, sk.Root, err)
	}
	defer f.Close()
	data, truncated, err := readOpen(f, max)
	if err != nil {
		return Content{}, fmt.Errorf("skill %s: SKILL.md %v", sk.Name, err)
	}
	fi, _ := f.Stat()
	if truncated {
		// End on a character boundary.
		data = textcut.TrimPartialEnd(data)
	}
	return Content{Text: strings.ToValidUTF8(string(data), "\uFFFD"), Size: fi.Size(), Truncated: truncated}, nil
}
