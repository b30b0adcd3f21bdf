// Package approval is the dialog that asks the user to approve a tool
// call: its summary, risk and workspace, the session rule approving "for
// the session" would grant, and the full arguments on demand.
package approval

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// summaryLines bounds the summary: a web_fetch summary holds a whole URL,
// which can be kilobytes; its start (the host) is what the user judges.
const summaryLines = 4

// frameRows are the rows of the border above and below the dialog's text.
const frameRows = 2

// Marker ends a summary cut to fit; the arguments view shows it whole.
const Marker = "… (v shows the arguments)"

// Dialog is one open approval request.
type Dialog struct {
	Request   protocol.ApprovalRequested
	Arguments string // the call's arguments, indented, from tool.proposed
	ShowArgs  bool
	// argTop is the first argument line shown; argRows how many the last
	// View had room for (the page PgUp/PgDn move by).
	argTop  int
	argRows int
}

// New opens a dialog for req; args are the call's arguments as the tool
// card holds them. A request with a diff (a write or an edit, v4) opens
// with the diff shown in place of the arguments: the change is what the
// user judges.
func New(req protocol.ApprovalRequested, args string) *Dialog {
	d := &Dialog{Request: req, Arguments: args}
	if req.Diff != "" {
		d.Arguments = strings.TrimRight(wrap.Sanitize(req.Diff), "\n")
		d.ShowArgs = true
	}
	return d
}

// HasDiff reports whether the dialog shows a diff rather than arguments.
func (d *Dialog) HasDiff() bool { return d.Request.Diff != "" }

// CanApproveSession reports whether the request proposes a session rule.
func (d *Dialog) CanApproveSession() bool { return d.Request.Rule != nil }

// ToggleArgs shows or hides the arguments; they open at their top.
func (d *Dialog) ToggleArgs() {
	d.ShowArgs = !d.ShowArgs
	d.argTop = 0
}

// ScrollArgs moves the arguments view by n lines (negative is up). It
// reports false, doing nothing, when the arguments are hidden.
func (d *Dialog) ScrollArgs(n int) bool {
	if !d.ShowArgs {
		return false
	}
	d.argTop = max(d.argTop+n, 0) // View clamps the bottom
	return true
}

// PageArgs moves the arguments view by n pages, as ScrollArgs.
func (d *Dialog) PageArgs(n int) bool {
	return d.ScrollArgs(n * max(d.argRows, 1))
}

var riskWords = map[protocol.Risk]string{
	protocol.RiskReadOnly:   "read-only",
	protocol.RiskFilesystem: "changes or reads sensitive files",
	protocol.RiskProcess:    "runs a program",
	protocol.RiskDelegate:   "hands work to another agent",
	protocol.RiskNetwork:    "uses the network",
}

// section is a part of the dialog's text, already wrapped, and how far it
// may shrink when the screen is short.
type section struct {
	lines []string
	style func(...string) string
}

// View renders the dialog at width cells and at most height rows, frame
// included. When the height is short it gives up, in order: the blank
// line, the workspace, summary lines, the long key hints and title lines;
// the title, the summary's start, the risk and the keys stay. The
// arguments view takes the rows left.
func (d *Dialog) View(st styles.Styles, width, height int) string {
	inner := max(width-4, 8) // border and padding
	budget := height - frameRows
	r := d.Request
	wrapped := func(text string) []string { return wrap.Lines(wrap.Sanitize(text), inner) }
	risk := string(r.Risk)
	if w, ok := riskWords[r.Risk]; ok {
		risk += ": " + w
	}
	title := wrapped("Allow " + wrap.OneLine(r.Name) + "?")
	summary := summaryLinesOf(r.Summary, inner)
	riskLines := wrapped("risk " + risk)
	cwd := wrapped("in " + r.Cwd)
	// Full hints; all keys on few lines with the rule; without the rule.
	hints := [][]string{d.hints(inner, 0), d.hints(inner, 1), d.hints(inner, 2)}
	var args []string
	if d.ShowArgs {
		args = wrap.Lines(d.Arguments, inner)
	}

	// Each step gives up a little more; the first that fits is used.
	type shape struct {
		title, summary, risk, cwd int
		blank                     bool
		hints                     int
	}
	sumMax := summaryLines
	if d.ShowArgs {
		sumMax = 2 // the arguments show it all
	}
	steps := []shape{
		{2, sumMax, 2, 2, true, 0},
		{2, sumMax, 2, 2, false, 0},
		{2, sumMax, 2, 1, false, 0},
		{2, sumMax, 2, 0, false, 0},
		{2, 2, 2, 0, false, 0},
		{2, 2, 2, 0, false, 1},
		{1, 2, 1, 0, false, 1},
		{1, 2, 1, 0, false, 2},
		{1, 1, 1, 0, false, 2},
	}
	var head, tail []section
	rest := 0
	for _, s := range steps {
		head = []section{
			{cut(title, s.title, ""), st.ToolWait.Render},
			{cut(summary, s.summary, d.marker()), st.Bold.Render},
			{cut(riskLines, s.risk, ""), st.Warning.Render},
			{cut(cwd, s.cwd, ""), st.Dim.Render},
		}
		tail = tail[:0]
		if s.blank {
			tail = append(tail, section{[]string{""}, plain})
		}
		tail = append(tail, section{hints[s.hints], st.DialogHint.Render})
		rest = 0
		for _, sec := range append(head, tail...) {
			rest += len(sec.lines)
		}
		need := 0
		if d.ShowArgs {
			// Half the rows, or all the arguments when fewer.
			need = min(len(args), max(budget/2, 2))
		}
		if rest+need <= budget {
			break
		}
	}

	var lines []string
	emit := func(secs []section) {
		for _, sec := range secs {
			for _, l := range sec.lines {
				lines = append(lines, sec.style(l))
			}
		}
	}
	emit(head)
	if d.ShowArgs {
		window := d.argWindow(args, budget-rest, inner)
		for i, l := range window {
			style := st.Dim.Render
			if d.HasDiff() && (i < len(window)-1 || len(window) == len(args)) {
				style = diffStyle(st, l)
			}
			lines = append(lines, style(l))
		}
	}
	emit(tail)
	return st.Dialog.Width(width).Render(strings.Join(lines, "\n"))
}

// summaryLinesOf wraps the summary. A word longer than the line (a URL)
// is broken at the width, not moved to a line of its own, so the start of
// it shares the first line with the verb ("Fetch https://host/…") and the
// host survives cutting the summary to a line or two.
func summaryLinesOf(summary string, inner int) []string {
	clean := wrap.Sanitize(summary)
	for _, word := range strings.Fields(clean) {
		if wrap.Width(word) > inner {
			var out []string
			for l := range strings.SplitSeq(ansi.Hardwrap(clean, inner, true), "\n") {
				out = wrap.AppendLines(out, l, inner) // bounds wide graphemes
			}
			return out
		}
	}
	return wrap.Lines(clean, inner)
}

func plain(s ...string) string { return strings.Join(s, " ") }

// diffStyle colours a diff line: added lines as success, removed ones as
// failure, headers and hunk lines dim.
func diffStyle(st styles.Styles, l string) func(...string) string {
	switch {
	case strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "@@"):
		return st.Dim.Render
	case strings.HasPrefix(l, "+"):
		return st.ToolOK.Render
	case strings.HasPrefix(l, "-"):
		return st.ToolFail.Render
	}
	return st.Assistant.Render
}

// argWindow is the part of args shown in rows rows: all of them when they
// fit, else a window from argTop and a position line.
func (d *Dialog) argWindow(args []string, rows, inner int) []string {
	if len(args) <= rows {
		d.argTop, d.argRows = 0, len(args)
		return args
	}
	n := max(rows-1, 1)
	d.argRows = n
	d.argTop = min(d.argTop, len(args)-n)
	out := append([]string(nil), args[d.argTop:d.argTop+n]...)
	pos := "lines " + strconv.Itoa(d.argTop+1) + "–" + strconv.Itoa(d.argTop+n) +
		" of " + strconv.Itoa(len(args)) + " · ↑↓ PgUp/PgDn scroll"
	return append(out, wrap.Truncate(pos, inner))
}

func (d *Dialog) marker() string {
	switch {
	case d.ShowArgs && d.HasDiff():
		return "… (v shows the arguments)"
	case d.ShowArgs:
		return "… (the arguments below show it all)"
	}
	return Marker
}

// hints are the key lines: one per key (level 0), or all keys on as few
// lines as they wrap to when the screen is short, with the session rule
// (level 1) or, when even that does not fit, without it (level 2).
func (d *Dialog) hints(inner, level int) []string {
	v := "v show the full arguments"
	switch {
	case d.HasDiff() && d.ShowArgs:
		v = "v hide the diff"
	case d.HasDiff():
		v = "v show the diff"
	case d.ShowArgs:
		v = "v hide the arguments"
	}
	if level > 0 {
		keys := "y/Enter once"
		if r := d.Request.Rule; r != nil {
			keys += " · a session"
			if level == 1 {
				keys += " (" + wrap.OneLine(r.Description) + ")"
			}
		}
		keys += " · n/Esc deny"
		if level == 1 {
			keys += " · r with a reason"
		}
		keys += " · v " + map[bool]string{true: "diff", false: "arguments"}[d.HasDiff()]
		return wrap.Lines(keys, inner)
	}
	out := wrap.Lines("y/Enter approve once", inner)
	if r := d.Request.Rule; r != nil {
		out = wrap.AppendLines(out, "a approve for this session: "+wrap.OneLine(r.Description), inner)
	}
	out = wrap.AppendLines(out, "n/Esc deny · r deny and tell the model why", inner)
	return wrap.AppendLines(out, v, inner)
}

// cut keeps the first n of lines; when it drops some and marker is set,
// the last kept line becomes the marker (so the start stays), and without
// a marker the last kept line ends with "…". n of 0 drops them all.
func cut(lines []string, n int, marker string) []string {
	if len(lines) <= n {
		return lines
	}
	if n <= 0 {
		return nil
	}
	out := append([]string(nil), lines[:n]...)
	if marker != "" && n > 1 {
		out[n-1] = marker
		return out
	}
	w := max(wrap.Width(out[n-1]), 2)
	out[n-1] = wrap.Truncate(out[n-1]+" …", w)
	return out
}
