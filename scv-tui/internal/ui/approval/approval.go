// Package approval is the dialog that asks the user to approve a tool
// call: its summary, risk and workspace, the session rule approving "for
// the session" would grant, and the full arguments on demand.
package approval

import (
	"strconv"
	"strings"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// Dialog is one open approval request.
type Dialog struct {
	Request   protocol.ApprovalRequested
	Arguments string // the call's arguments, indented, from tool.proposed
	ShowArgs  bool
	// maxArgLines bounds the arguments shown so the dialog fits the screen.
	maxArgLines int
}

// New opens a dialog for req; args are the call's arguments as the tool
// card holds them.
func New(req protocol.ApprovalRequested, args string) *Dialog {
	return &Dialog{Request: req, Arguments: args, maxArgLines: 12}
}

// CanApproveSession reports whether the request proposes a session rule.
func (d *Dialog) CanApproveSession() bool { return d.Request.Rule != nil }

// SetMaxArgLines bounds the argument lines shown.
func (d *Dialog) SetMaxArgLines(n int) { d.maxArgLines = max(n, 1) }

var riskWords = map[protocol.Risk]string{
	protocol.RiskReadOnly:   "read-only",
	protocol.RiskFilesystem: "changes or reads sensitive files",
	protocol.RiskProcess:    "runs a program",
	protocol.RiskDelegate:   "hands work to another agent",
	protocol.RiskNetwork:    "uses the network",
}

// View renders the dialog at width cells, frame included.
func (d *Dialog) View(st styles.Styles, width int) string {
	inner := max(width-4, 8) // border and padding
	r := d.Request
	var lines []string
	add := func(text string, style func(...string) string) {
		for _, l := range wrap.Lines(wrap.Sanitize(text), inner) {
			lines = append(lines, style(l))
		}
	}
	risk := string(r.Risk)
	if w, ok := riskWords[r.Risk]; ok {
		risk += ": " + w
	}
	add("Allow "+wrap.OneLine(r.Name)+"?", st.ToolWait.Render)
	add(r.Summary, st.Bold.Render)
	add("risk "+risk, st.Warning.Render)
	add("in "+r.Cwd, st.Dim.Render)
	if d.ShowArgs {
		args := wrap.Lines(d.Arguments, inner)
		if len(args) > d.maxArgLines {
			n := len(args) - d.maxArgLines
			args = append(args[:d.maxArgLines:d.maxArgLines], "… "+strconv.Itoa(n)+" more lines")
		}
		for _, l := range args {
			lines = append(lines, st.Dim.Render(l))
		}
	}
	lines = append(lines, "")
	add("y/Enter approve once", st.DialogHint.Render)
	if r.Rule != nil {
		add("a approve for this session: "+wrap.OneLine(r.Rule.Description), st.DialogHint.Render)
	}
	add("n/Esc deny", st.DialogHint.Render)
	if d.ShowArgs {
		add("v hide the arguments", st.DialogHint.Render)
	} else {
		add("v show the full arguments", st.DialogHint.Render)
	}
	return st.Dialog.Width(width).Render(strings.Join(lines, "\n"))
}
