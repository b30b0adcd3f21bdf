package exec

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/textcut"
)

// textView renders a turn for people: the assistant's text on stdout as it
// streams, tool activity on stderr. With text false (--json) it prints
// nothing; the raw events are the output then.
type textView struct {
	out, errOut io.Writer
	text        bool

	midLine  bool // stdout's last byte is not a newline
	streamed bool // the current assistant message arrived as deltas
}

// delta prints streamed assistant text.
func (v *textView) delta(s string) {
	if !v.text || s == "" {
		return
	}
	io.WriteString(v.out, s)
	v.midLine = s[len(s)-1] != '\n'
	v.streamed = true
}

// completed ends one assistant message. Its content is printed only when
// no delta carried it, and every message ends with a newline so the next
// message or tool line starts on its own line.
func (v *textView) completed(content string) {
	if !v.streamed {
		v.delta(content)
	}
	v.streamed = false
	v.endLine()
}

// endLine ends a partial line on stdout, so what follows on stderr does not
// land in the middle of the reply on a terminal.
func (v *textView) endLine() {
	if v.midLine {
		io.WriteString(v.out, "\n")
		v.midLine = false
	}
}

// warn prints a warning the server gave the user (a configuration one).
func (v *textView) warn(text string) {
	if !v.text {
		return
	}
	v.endLine()
	fmt.Fprintf(v.errOut, "scv: warning: %s\n", oneLine(text))
}

// retrying says that the model request is sent again, with the
// provider's own status and message.
func (v *textView) retrying(e *protocol.TurnRetrying) {
	if !v.text {
		return
	}
	v.endLine()
	line := fmt.Sprintf("scv: retrying (%d/%d) in %d s", e.Attempt, e.MaxAttempts, (e.DelayMS+999)/1000)
	if e.Status != 0 {
		line += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Message != "" {
		line += ": " + oneLine(e.Message)
	}
	fmt.Fprintln(v.errOut, line)
}

// toolProposed prints "• name detail" for a call the model asked for.
func (v *textView) toolProposed(name string, args json.RawMessage) {
	if !v.text {
		return
	}
	v.endLine()
	fmt.Fprintf(v.errOut, "• %s\n", describeCall(name, args))
}

// toolCompleted prints the outcome of a call under its proposal line.
func (v *textView) toolCompleted(success bool, output string) {
	if !v.text {
		return
	}
	v.endLine()
	if success {
		fmt.Fprintln(v.errOut, "  ✓ done")
		return
	}
	if line := firstLine(output); line != "" {
		fmt.Fprintf(v.errOut, "  ✗ failed: %s\n", line)
		return
	}
	fmt.Fprintln(v.errOut, "  ✗ failed")
}

// callDetail lists, in order of preference, the argument that best says what
// a call does: the path of read and write, the command of bash, the url of
// web_fetch, and so on for tools that follow the same naming.
var callDetail = []string{"path", "command", "url", "query", "prompt", "agent", "name"}

// describeCall returns the tool name followed by its most telling argument.
func describeCall(name string, args json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) == nil {
		for _, k := range callDetail {
			var s string
			if json.Unmarshal(m[k], &s) == nil && strings.TrimSpace(s) != "" {
				return name + " " + clip(oneLine(s), 120)
			}
		}
	}
	return name
}

// firstLine returns the first non-blank line of s, clipped.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return clip(line, 200)
		}
	}
	return ""
}

// oneLine folds runs of whitespace, newlines included, into single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip shortens s to at most n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if textcut.Runes(s, n) == s {
		return s
	}
	return textcut.Runes(s, n-1) + "…"
}
