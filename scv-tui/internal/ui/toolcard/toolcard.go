// Package toolcard renders one tool call in the transcript: its name (an
// agent call labelled with the agent it names), a one-line summary of its
// arguments, its state (a spinner while it runs), progress lines, and its
// output, collapsed to a few lines until expanded.
package toolcard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// State is where a call is in its lifecycle.
type State int

// States of a call, in the order they happen.
const (
	Proposed  State = iota // tool.proposed: not yet running
	Waiting                // approval.requested: waiting for the user
	Running                // tool.started
	Succeeded              // tool.completed, success
	Failed                 // tool.completed, failure
	Stopped                // the turn ended before the call completed (cancelled or failed)
)

// CollapsedLines is how many output lines a collapsed card shows.
const CollapsedLines = 4

// maxProgress is how many of the latest progress lines a running card keeps.
const maxProgress = 3

// Card is one tool call. Its fields are set from protocol events; Render
// is a pure function of them.
type Card struct {
	CallID    string
	Name      string
	Label     string // the name shown: "agent codex" for an agent call
	Summary   string // the arguments on one line
	Arguments string // the arguments in full, indented JSON
	State     State
	Output    string // sanitized
	Truncated bool
	Progress  []string // the latest progress lines, oldest first
	Rule      string   // the session rule that let the call run, if any
	Expanded  bool
}

// New returns the card of a proposed call. args is the call's arguments as
// tool.proposed carries them: usually an object, sometimes the model's raw
// text as a JSON string.
func New(callID, name string, args json.RawMessage) *Card {
	name = wrap.OneLine(name)
	c := &Card{CallID: callID, Name: name, Label: name}
	var obj map[string]any
	if json.Unmarshal(args, &obj) == nil && obj != nil {
		if agent, ok := obj["agent"].(string); ok && name == "agent" && agent != "" {
			c.Label = "agent " + wrap.OneLine(agent)
		}
		c.Summary = summarize(name, obj)
	} else {
		var s string
		if json.Unmarshal(args, &s) == nil {
			c.Summary = wrap.OneLine(s)
		} else {
			c.Summary = wrap.OneLine(string(args))
		}
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, args, "", "  ") == nil {
		c.Arguments = wrap.Sanitize(pretty.String())
	} else {
		c.Arguments = wrap.Sanitize(string(args))
	}
	return c
}

// summaryKeys are the argument members that say most about a call, in the
// order they are preferred.
var summaryKeys = []string{"command", "path", "prompt", "url", "pattern", "query", "task"}

func summarize(name string, obj map[string]any) string {
	for _, k := range summaryKeys {
		if name == "agent" && k == "path" {
			continue
		}
		if v, ok := obj[k].(string); ok && v != "" {
			return wrap.OneLine(v)
		}
	}
	if len(obj) == 0 {
		return ""
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return ""
	}
	return wrap.OneLine(string(b))
}

// Start marks the call as running.
func (c *Card) Start(rule string) {
	c.State = Running
	c.Rule = wrap.OneLine(rule)
}

// AddProgress records a progress line of the running call.
func (c *Card) AddProgress(line string) {
	c.Progress = append(c.Progress, wrap.OneLine(line))
	if len(c.Progress) > maxProgress {
		c.Progress = append(c.Progress[:0], c.Progress[len(c.Progress)-maxProgress:]...)
	}
}

// Complete records the call's result.
func (c *Card) Complete(success bool, output string, truncated bool) {
	if success {
		c.State = Succeeded
	} else {
		c.State = Failed
	}
	c.Output = wrap.Sanitize(strings.TrimRight(output, "\n"))
	c.Truncated = truncated
	c.Progress = nil
}

// Stop records that the turn ended before the call completed (a cancel
// discards the call's result, so no tool.completed comes): the card stops
// spinning and keeps the output it had shown, under why.
func (c *Card) Stop(why string) {
	if c.State >= Succeeded {
		return
	}
	c.State = Stopped
	c.Output = why
}

// Size is the bytes the card holds, for the transcript's memory bound.
func (c *Card) Size() int {
	n := len(c.Name) + len(c.Label) + len(c.Summary) + len(c.Arguments) + len(c.Output) + len(c.Rule) + 64
	for _, p := range c.Progress {
		n += len(p)
	}
	return n
}

// Render returns the card's lines at width cells. frame is the spinner
// frame shown while the call runs.
func (c *Card) Render(st styles.Styles, width int, frame string) []string {
	width = max(width, 10)
	var icon string
	switch c.State {
	case Proposed:
		icon = st.Dim.Render("·")
	case Waiting:
		icon = st.ToolWait.Render("?")
	case Running:
		icon = st.ToolRun.Render(frame)
	case Succeeded:
		icon = st.ToolOK.Render("✓")
	case Failed:
		icon = st.ToolFail.Render("✗")
	case Stopped:
		icon = st.ToolWait.Render("■")
	}
	head := icon + " " + st.ToolName.Render(c.Label)
	if c.Summary != "" {
		room := width - wrap.Width(head) - 1
		if room > 3 {
			head += " " + st.Dim.Render(wrap.Truncate(c.Summary, room))
		}
	}
	lines := []string{wrap.Truncate(head, width)}
	bar := st.Dim.Render("│ ")
	inner := width - 2
	body := func(text string, style func(...string) string) {
		for _, l := range wrap.Lines(text, inner) {
			lines = append(lines, bar+style(l))
		}
	}
	switch c.State {
	case Waiting:
		body("waiting for your approval", st.ToolWait.Render)
	case Running:
		if c.Rule != "" {
			body("allowed by the session rule: "+c.Rule, st.Dim.Render)
		}
		for _, p := range c.Progress {
			lines = append(lines, bar+st.Dim.Render(wrap.Truncate(p, inner)))
		}
	case Stopped:
		body(c.Output, st.ToolWait.Render)
		for _, p := range c.Progress {
			lines = append(lines, bar+st.Dim.Render(wrap.Truncate(p, inner)))
		}
	case Succeeded, Failed:
		if c.Rule != "" {
			body("allowed by the session rule: "+c.Rule, st.Dim.Render)
		}
		out := wrap.Lines(c.Output, inner)
		if c.Output == "" {
			out = nil
		}
		style := st.Assistant.Render
		if c.State == Failed {
			style = st.ToolFail.Render
		}
		shown := out
		if !c.Expanded && len(out) > CollapsedLines {
			shown = out[:CollapsedLines]
		}
		for _, l := range shown {
			lines = append(lines, bar+style(l))
		}
		if len(shown) < len(out) {
			more := "lines"
			if len(out)-len(shown) == 1 {
				more = "line"
			}
			body(fmt.Sprintf("… %d more %s (Ctrl+O expands)", len(out)-len(shown), more), st.Dim.Render)
		} else if c.Expanded && len(out) > CollapsedLines {
			body("(Ctrl+O collapses)", st.Dim.Render)
		}
		if c.Truncated {
			body("[the output was cut at the server's output limit]", st.Warning.Render)
		}
	}
	return lines
}
