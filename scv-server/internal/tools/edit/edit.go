// Package edit is the edit tool: replace an exact string in a workspace
// text file, atomically, through the workspace's os.Root.
package edit

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/workspace"
	"github.com/scv-cli/scv/shared/protocol"
)

//go:embed description.md
var description string

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path relative to the workspace."},
    "old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace, whitespace and indentation included; it must occur exactly once unless replace_all is true."},
    "new_string": {"type": "string", "description": "The text to put in its place; empty deletes old_string."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence of old_string (default false)."},
    "expected_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "The sha256 (lowercase hex) the file must still have; the edit fails if it changed."}
  },
  "required": ["path", "old_string", "new_string"],
  "additionalProperties": false
}`

// Bounds of the diff excerpt in a result.
const (
	excerptLines     = 40
	excerptBytes     = 4 << 10
	excerptLineBytes = 200
	diffContext      = 3
	// matchLines is how many match positions an error lists.
	matchLines = 5
)

// Tool is the edit tool.
type Tool struct{}

// New returns the edit tool.
func New() *Tool { return &Tool{} }

type args struct {
	Path           string  `json:"path"`
	OldString      *string `json:"old_string"`
	NewString      *string `json:"new_string"`
	ReplaceAll     bool    `json:"replace_all"`
	ExpectedSHA256 *string `json:"expected_sha256"`
}

// Spec describes the tool.
func (*Tool) Spec() tools.Spec {
	return tools.Spec{Name: "edit", Description: strings.TrimSpace(description), Schema: json.RawMessage(schema)}
}

type call struct {
	rel        string
	old, new   string // as given
	replaceAll bool
	expected   string
}

// edited is a computed edit of one file content.
type edited struct {
	sha256  string // of the content it was computed from
	content []byte
	count   int
	// crlf is set when old_string and new_string were given CRLF line
	// endings to match the file.
	crlf    bool
	a, b    []string
	changes []workspace.Change
}

// Prepare checks the arguments and, as a dry run, computes the edit on
// the file as it is now, so an edit that would fail is refused before
// anyone is asked to approve it. Run computes it again if the file changed
// meanwhile.
func (*Tool) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("edit arguments: %w", err)
	}
	c, err := check(env, a)
	if err != nil {
		return nil, err
	}
	t, err := c.observe(env)
	if err != nil {
		return nil, err
	}
	e, err := c.compute(t)
	if err != nil {
		return nil, err
	}
	del, ins := workspace.Stat(e.changes)
	summary := "Edit " + c.rel
	if t.Real != c.rel {
		summary += " → " + t.Real
	}
	summary += fmt.Sprintf(" (%s, +%d -%d lines)", replacements(e.count), ins, del)
	rule, keys := workspace.WriteRule(c.rel, t.Real)
	preview, cut := workspace.Unified(t.Real, e.a, e.b, e.changes, workspace.PreviewLimits)
	if cut {
		preview += "[the diff goes on; the call's result shows the change]\n"
	}
	return &tools.Plan{
		Risk:    protocol.RiskFilesystem,
		Summary: summary,
		Rule:    rule,
		Keys:    keys,
		Preview: preview,
		Run: func(ctx context.Context) (tools.Result, error) {
			return c.run(ctx, env, e)
		},
	}, nil
}

func check(env tools.Env, a args) (*call, error) {
	if a.OldString == nil || *a.OldString == "" {
		return nil, errors.New("old_string is empty: give the exact text to replace (to write a whole file, use write)")
	}
	if a.NewString == nil {
		return nil, errors.New("new_string is missing: give the replacement text (empty to delete old_string)")
	}
	if *a.OldString == *a.NewString {
		return nil, errors.New("old_string and new_string are the same, so there is nothing to change")
	}
	if !utf8.ValidString(*a.OldString) || !utf8.ValidString(*a.NewString) {
		return nil, errors.New("old_string and new_string must be valid UTF-8 text")
	}
	rel, err := workspace.Rel(env.Workspace, a.Path)
	if err != nil {
		return nil, err
	}
	if rel == "." || strings.HasSuffix(a.Path, "/") {
		return nil, fmt.Errorf("path %s names a directory: give the path of a file", a.Path)
	}
	c := &call{rel: rel, old: *a.OldString, new: *a.NewString, replaceAll: a.ReplaceAll}
	if a.ExpectedSHA256 != nil {
		if err := workspace.CheckSHA256(*a.ExpectedSHA256); err != nil {
			return nil, err
		}
		c.expected = *a.ExpectedSHA256
	}
	return c, nil
}

func (c *call) observe(env tools.Env) (*workspace.Target, error) {
	t, err := workspace.Observe(env.Root, env.Workspace, c.rel)
	if err != nil {
		return nil, err
	}
	switch {
	case !t.Exists:
		return nil, fmt.Errorf("%s does not exist: to make a new file, use write with mode create", c.rel)
	case t.Large:
		return nil, fmt.Errorf("%s has %d bytes, more than edit handles (%d MiB); use write to replace it whole", c.rel, t.Info.Size(), workspace.MaxTextBytes>>20)
	case c.expected != "" && t.SHA256 != c.expected:
		return nil, workspace.StaleError(c.rel, c.expected, t.SHA256)
	}
	return t, nil
}

// compute applies the edit to t's content.
func (c *call) compute(t *workspace.Target) (*edited, error) {
	text := string(t.Content)
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("%s is not valid UTF-8 text (first bad byte at position %d): edit changes text files only", c.rel, invalidAt(text))
	}
	from, to := c.old, c.new
	e := &edited{sha256: t.SHA256}
	if isCRLF(text) {
		from, to = toCRLF(from), toCRLF(to)
		e.crlf = from != c.old || to != c.new
	}
	var pos []int
	if c.replaceAll {
		pos = findAll(text, from, false)
		if len(pos) == 0 {
			return nil, c.notFound(text, from)
		}
	} else {
		all := findAll(text, from, true)
		switch len(all) {
		case 0:
			return nil, c.notFound(text, from)
		case 1:
			pos = all
		default:
			return nil, fmt.Errorf("old_string occurs %d times in %s (%s), so the edit is ambiguous: include more of the surrounding text to make it unique, or set replace_all to replace every occurrence",
				len(all), c.rel, lineList(text, all))
		}
	}
	var b strings.Builder
	b.Grow(len(text) + len(pos)*(len(to)-len(from)))
	at := 0
	for _, p := range pos {
		b.WriteString(text[at:p])
		b.WriteString(to)
		at = p + len(from)
	}
	b.WriteString(text[at:])
	out := b.String()
	e.content = []byte(out)
	e.count = len(pos)
	e.a, e.b, e.changes = lineDiff(text, out, pos, len(from), len(to))
	return e, nil
}

func (c *call) notFound(text, old string) error {
	msg := fmt.Sprintf("old_string was not found in %s (0 matches)", c.rel)
	if u := unescape.Replace(old); u != old && strings.Contains(text, u) {
		return errors.New(msg + `: old_string has backslash escapes such as the two characters \n or \t where the file has the characters themselves; send real newlines, tabs and quotes`)
	}
	if line := looseMatch(text, old); line > 0 {
		return fmt.Errorf("%s: text matching it except for whitespace or indentation is at line %d; copy the exact text, whitespace included, from the file", msg, line)
	}
	return errors.New(msg + ": check whitespace, indentation, line endings and escaping, or read the file again to copy the exact text")
}

func (c *call) run(ctx context.Context, env tools.Env, prepared *edited) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	if real, err := workspace.Resolve(env.Workspace, c.rel); err == nil {
		defer workspace.Lock(env.Workspace, real)()
	}
	t, err := c.observe(env)
	if err != nil {
		return tools.Failed(err.Error()), nil
	}
	e := prepared
	if t.SHA256 != prepared.sha256 {
		// The file changed since the call was prepared: redo the edit on
		// what is there now, which may fail.
		if e, err = c.compute(t); err != nil {
			return tools.Failed(err.Error()), nil
		}
	}
	err = workspace.ReplaceFile(ctx, env.Root, t, e.content)
	var changed *workspace.ChangedError
	switch {
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		// Cancelled before the rename: the file is as it was.
		return tools.Result{}, err
	case errors.As(err, &changed) && c.expected != "":
		return tools.Failed(workspace.StaleError(c.rel, c.expected, changed.Current).Error()), nil
	case errors.As(err, &changed):
		return tools.Failed(fmt.Sprintf("%s changed while it was being edited (its sha256 is now %s), so it was left as it is; read it again and retry", c.rel, changed.Current)), nil
	case err != nil:
		return tools.Failed(workspace.DescribeWriteError(c.rel, err)), nil
	}
	out, cut := e.report(c.rel, t.Real, env.OutputLimit)
	return tools.Result{Success: true, Output: out, Truncated: cut}, nil
}

// report is the result text, a header line and a diff excerpt bounded by
// the excerpt limits and outputLimit, and whether the excerpt was cut.
func (e *edited) report(rel, real string, outputLimit int) (string, bool) {
	del, ins := workspace.Stat(e.changes)
	var b strings.Builder
	fmt.Fprintf(&b, "Edited %s", rel)
	if real != rel {
		fmt.Fprintf(&b, " (through a symlink: the file written is %s)", real)
	}
	fmt.Fprintf(&b, ": %s, +%d -%d lines; sha256 %s", replacements(e.count), ins, del, workspace.SHA256(e.content))
	if e.crlf {
		b.WriteString("; the file has CRLF line endings, so the newlines of old_string and new_string were taken as CRLF")
	}
	b.WriteByte('\n')
	if outputLimit <= 0 {
		outputLimit = 64 << 10
	}
	const note = "[diff excerpt truncated; read the file to see the rest]\n"
	room := min(excerptBytes, outputLimit-b.Len()-len(note))
	if room <= 0 {
		return b.String(), len(e.changes) > 0
	}
	diff, cut := workspace.Unified(real, e.a, e.b, e.changes, workspace.DiffLimits{
		Context: diffContext, MaxLines: excerptLines, MaxBytes: room, MaxLineBytes: excerptLineBytes,
	})
	b.WriteString(diff)
	if cut {
		b.WriteString(note)
	}
	return b.String(), cut
}

func replacements(n int) string {
	if n == 1 {
		return "1 replacement"
	}
	return fmt.Sprintf("%d replacements", n)
}

// findAll returns the positions of sub in s, left to right: every one when
// overlapping, else the non-overlapping ones a replace-all changes.
func findAll(s, sub string, overlapping bool) []int {
	var pos []int
	step := len(sub)
	for at := 0; at <= len(s); {
		i := strings.Index(s[at:], sub)
		if i < 0 {
			break
		}
		pos = append(pos, at+i)
		if overlapping {
			// The next match may start inside this one, at a character.
			_, size := utf8.DecodeRuneInString(s[at+i:])
			at += i + size
		} else {
			at += i + step
		}
	}
	return pos
}

// unescape undoes one level of JSON-style escaping, which models sometimes
// apply twice.
var unescape = strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\r`, "\r", `\"`, `"`, `\\`, `\`)

// lineList names the lines of the first few positions.
func lineList(s string, pos []int) string {
	var parts []string
	line, at := 1, 0
	for i, p := range pos {
		if i == matchLines {
			parts = append(parts, "…")
			break
		}
		line += strings.Count(s[at:p], "\n")
		at = p
		parts = append(parts, fmt.Sprint(line))
	}
	return "at lines " + strings.Join(parts, ", ")
}

// looseMatch returns the 1-based line where the lines of old start,
// compared with leading and trailing whitespace trimmed, or 0.
func looseMatch(text, old string) int {
	want := trimmedLines(old)
	for len(want) > 0 && want[0] == "" {
		want = want[1:]
	}
	for len(want) > 0 && want[len(want)-1] == "" {
		want = want[:len(want)-1]
	}
	if len(want) == 0 {
		return 0
	}
	have := trimmedLines(text)
	for i := 0; i+len(want) <= len(have); i++ {
		if have[i] != want[0] && !strings.Contains(have[i], want[0]) {
			continue
		}
		ok := true
		for j := range want {
			h, w := have[i+j], want[j]
			// A partial first or last line may be part of a longer line.
			if h != w && !((j == 0 && strings.HasSuffix(h, w)) || (j == len(want)-1 && strings.HasPrefix(h, w)) || (len(want) == 1 && strings.Contains(h, w))) {
				ok = false
				break
			}
		}
		if ok {
			return i + 1
		}
	}
	return 0
}

func trimmedLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return lines
}

// isCRLF reports whether text has CRLF line endings and no bare LF.
func isCRLF(text string) bool {
	n := strings.Count(text, "\n")
	return n > 0 && strings.Count(text, "\r\n") == n
}

// toCRLF turns every LF not preceded by CR into CRLF.
func toCRLF(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + strings.Count(s, "\n"))
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' && (i == 0 || s[i-1] != '\r') {
			b.WriteByte('\r')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func invalidAt(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				return i
			}
		}
	}
	return 0
}

// lineDiff returns the lines of old and new text and their line diff,
// computed only around the replaced places (pos in the old text, each of
// oldLen bytes becoming newLen): the text between them is known equal, so
// a replace-all of many scattered places stays exact and fast.
func lineDiff(oldText, newText string, pos []int, oldLen, newLen int) (a, b []string, changes []workspace.Change) {
	a, b = workspace.SplitLines(oldText), workspace.SplitLines(newText)
	as, bs := index(a), index(b)
	type region struct{ a0, a1, b0, b1 int }
	var regions []region
	delta := newLen - oldLen
	for i, p := range pos {
		q := p + i*delta
		r := region{
			a0: as.lineAt(p), a1: min(len(a), as.lineAt(p+oldLen)+1),
			b0: bs.lineAt(q), b1: min(len(b), bs.lineAt(q+newLen)+1),
		}
		if n := len(regions); n > 0 && r.a0 < regions[n-1].a1 {
			last := &regions[n-1]
			last.a1 = max(last.a1, r.a1)
			last.b1 = max(last.b1, r.b1)
			continue
		}
		regions = append(regions, r)
	}
	for _, r := range regions {
		for _, ch := range workspace.Diff(a[r.a0:r.a1], b[r.b0:r.b1]) {
			ch.A += r.a0
			ch.B += r.b0
			changes = append(changes, ch)
		}
	}
	return a, b, changes
}

// lineIndex maps byte offsets of a text to its lines.
type lineIndex struct {
	starts []int
	size   int
	// open is set when the text is empty or ends with a newline, so its
	// end is the start of a line after the last.
	open bool
}

func index(lines []string) lineIndex {
	ix := lineIndex{starts: make([]int, len(lines))}
	for i, l := range lines {
		ix.starts[i] = ix.size
		ix.size += len(l)
	}
	ix.open = len(lines) == 0 || strings.HasSuffix(lines[len(lines)-1], "\n")
	return ix
}

// lineAt is the index of the line holding byte off; the end of the text is
// on the last line, or past it when the text ends with a newline.
func (ix lineIndex) lineAt(off int) int {
	if off >= ix.size && ix.open {
		return len(ix.starts)
	}
	return max(0, sort.Search(len(ix.starts), func(i int) bool { return ix.starts[i] > off })-1)
}
