// Package write is the write tool: create or replace a whole workspace
// file, atomically, through the workspace's os.Root.
package write

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
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
    "content": {"type": "string", "description": "The complete new content of the file, UTF-8 text."},
    "mode": {"type": "string", "enum": ["create", "replace"], "description": "create: the file must not exist yet. replace: the file must exist; all of its content is replaced."},
    "expected_sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "replace only: the sha256 (lowercase hex) the file must still have; the write fails if it changed."}
  },
  "required": ["path", "content", "mode"],
  "additionalProperties": false
}`

// Modes.
const (
	modeCreate  = "create"
	modeReplace = "replace"
)

// Tool is the write tool.
type Tool struct{}

// New returns the write tool.
func New() *Tool { return &Tool{} }

type args struct {
	Path           string  `json:"path"`
	Content        *string `json:"content"`
	Mode           string  `json:"mode"`
	ExpectedSHA256 *string `json:"expected_sha256"`
}

// Spec describes the tool.
func (*Tool) Spec() tools.Spec {
	return tools.Spec{Name: "write", Description: strings.TrimSpace(description), Schema: json.RawMessage(schema)}
}

// call is a checked write.
type call struct {
	rel      string
	content  []byte
	mode     string
	expected string
}

// Prepare checks the arguments and, as a dry run, the file as it is now,
// so a write that would fail is refused before anyone is asked to approve
// it. Run checks everything again.
func (*Tool) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("write arguments: %w", err)
	}
	c, err := check(env, a)
	if err != nil {
		return nil, err
	}
	t, err := c.observe(env)
	if err != nil {
		return nil, err
	}
	stat := diffStat(t, c.content)
	rule, keys := workspace.WriteRule(c.rel, t.Real)
	return &tools.Plan{
		Risk:    protocol.RiskFilesystem,
		Summary: c.summary(t, stat),
		Rule:    rule,
		Keys:    keys,
		Preview: c.preview(t),
		Run: func(ctx context.Context) (tools.Result, error) {
			return c.run(ctx, env, t.SHA256, stat)
		},
	}, nil
}

func check(env tools.Env, a args) (*call, error) {
	if a.Mode != modeCreate && a.Mode != modeReplace {
		return nil, fmt.Errorf("mode %q is not create or replace", a.Mode)
	}
	if a.Content == nil {
		return nil, errors.New("content is missing: give the complete new content of the file")
	}
	if !utf8.ValidString(*a.Content) {
		return nil, errors.New("content is not valid UTF-8 text")
	}
	rel, err := workspace.Rel(env.Workspace, a.Path)
	if err != nil {
		return nil, err
	}
	if rel == "." || strings.HasSuffix(a.Path, "/") {
		return nil, fmt.Errorf("path %s names a directory: give the path of a file", a.Path)
	}
	c := &call{rel: rel, content: []byte(*a.Content), mode: a.Mode}
	if a.ExpectedSHA256 != nil {
		if a.Mode == modeCreate {
			return nil, errors.New("expected_sha256 applies to mode replace only: a file to create has no content yet")
		}
		if err := workspace.CheckSHA256(*a.ExpectedSHA256); err != nil {
			return nil, err
		}
		c.expected = *a.ExpectedSHA256
	}
	return c, nil
}

// observe reads the target and checks it against the mode and the
// expected hash.
func (c *call) observe(env tools.Env) (*workspace.Target, error) {
	t, err := workspace.Observe(env.Root, env.Workspace, c.rel)
	if err != nil {
		return nil, err
	}
	switch {
	case c.mode == modeCreate && t.Exists && t.Large:
		return nil, fmt.Errorf("%s already exists (%s): use mode replace to overwrite it", c.rel, byteCount(t.Info.Size()))
	case c.mode == modeCreate && t.Exists:
		return nil, fmt.Errorf("%s already exists (%s, sha256 %s): use mode replace to overwrite it, or edit to change part of it", c.rel, byteCount(t.Info.Size()), t.SHA256)
	case c.expected != "" && t.Large:
		return nil, fmt.Errorf("%s has %s, more than the %d MiB whose sha256 is checked, so expected_sha256 cannot be: leave it out to replace the file whole (a change made to it meanwhile is still detected by its size and times)",
			c.rel, byteCount(t.Info.Size()), workspace.MaxTextBytes>>20)
	case c.mode == modeReplace && !t.Exists:
		return nil, fmt.Errorf("%s does not exist: use mode create to make it", c.rel)
	case c.expected != "" && t.SHA256 != c.expected:
		return nil, workspace.StaleError(c.rel, c.expected, t.SHA256)
	}
	return t, nil
}

func (c *call) summary(t *workspace.Target, stat string) string {
	var b strings.Builder
	b.WriteString("Write ")
	b.WriteString(c.rel)
	if t.Real != c.rel {
		b.WriteString(" → " + t.Real)
	}
	fmt.Fprintf(&b, " (%s, %s", c.mode, byteCount(int64(len(c.content))))
	if stat != "" {
		b.WriteString(", " + stat)
	}
	b.WriteString(")")
	return b.String()
}

// preview is the diff shown with the approval request: the whole new
// file against the old one (or against nothing for a new file, so its
// first lines show); "" when the old file is too large to diff or the
// content is not text.
func (c *call) preview(t *workspace.Target) string {
	if t.Large || !utf8.Valid(c.content) {
		return ""
	}
	old := ""
	if t.Exists {
		old = string(t.Content)
	}
	return workspace.Preview(t.Real, old, string(c.content))
}

// diffStat is the line diff stat of a replace ("+12 -3 lines"), or "".
func diffStat(t *workspace.Target, content []byte) string {
	switch {
	case !t.Exists:
		return ""
	case t.Large:
		return fmt.Sprintf("no line diff: the old file is over %d MiB", workspace.MaxTextBytes>>20)
	}
	del, ins := workspace.Stat(workspace.Diff(workspace.SplitLines(string(t.Content)), workspace.SplitLines(string(content))))
	return fmt.Sprintf("+%d -%d lines", ins, del)
}

func (c *call) run(ctx context.Context, env tools.Env, preparedSHA, preparedStat string) (tools.Result, error) {
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
	stat := preparedStat
	if t.SHA256 != preparedSHA {
		stat = diffStat(t, c.content)
	}
	if c.mode == modeCreate {
		err = workspace.CreateFile(ctx, env.Root, t, c.content)
	} else {
		err = workspace.ReplaceFile(ctx, env.Root, t, c.content)
	}
	var changed *workspace.ChangedError
	switch {
	case errors.As(err, &changed) && c.expected != "":
		return tools.Failed(workspace.StaleError(c.rel, c.expected, changed.Current).Error()), nil
	case errors.As(err, &changed):
		return tools.Failed(fmt.Sprintf("%s: %v, so it was left as it is; read it again and retry", c.rel, changed)), nil
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		// Cancelled before the rename: the file is as it was.
		return tools.Result{}, err
	case c.mode == modeCreate && errors.Is(err, fs.ErrExist):
		return tools.Failed(fmt.Sprintf("%s appeared while it was being created, so it was left as it is: read it, then use mode replace", c.rel)), nil
	case err != nil:
		return tools.Failed(workspace.DescribeWriteError(c.rel, err)), nil
	}
	var b strings.Builder
	if c.mode == modeCreate {
		b.WriteString("Created ")
	} else {
		b.WriteString("Replaced ")
	}
	b.WriteString(c.rel)
	if t.Real != c.rel {
		b.WriteString(" (through a symlink: the file written is " + t.Real + ")")
	}
	fmt.Fprintf(&b, ": wrote %s", byteCount(int64(len(c.content))))
	if stat != "" {
		b.WriteString(", " + stat)
	}
	fmt.Fprintf(&b, "; sha256 %s", workspace.SHA256(c.content))
	return tools.Result{Success: true, Output: b.String()}, nil
}

func byteCount(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}
