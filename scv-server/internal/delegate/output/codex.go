package output

import (
	"strconv"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/tidwall/gjson"
)

// codex reads `codex exec --json`: thread.started (thread id), item
// events (the last agent_message is the reply; command executions, file
// changes and web searches become progress), turn.completed (usage),
// turn.failed and error (the error).
type codex struct {
	thread    string
	reply     string
	hasReply  bool
	usage     *delegate.Usage
	completed bool   // a turn.completed came after the last error
	failed    string // turn.failed's message
	lastError string // the last error event's message
	sawFailed bool
}

func (c *codex) wants(typ string) bool {
	switch typ {
	case "thread.started", "turn.started", "turn.completed", "turn.failed", "error", "item.started", "item.completed":
		return true
	}
	return false
}

func (c *codex) line(p *Parser, l []byte, typ string) {
	switch typ {
	case "thread.started":
		if s := gjson.GetBytes(l, "thread_id").String(); s != "" {
			c.thread = s
		}
	case "turn.started":
		c.completed = false
	case "turn.completed":
		c.completed = true
		if u := gjson.GetBytes(l, "usage"); u.Exists() {
			if c.usage == nil {
				c.usage = &delegate.Usage{}
			}
			// Each turn of an exec run reports its own usage.
			c.usage.InputTokens += u.Get("input_tokens").Int()
			c.usage.OutputTokens += u.Get("output_tokens").Int()
		}
	case "turn.failed":
		c.sawFailed = true
		c.failed = gjson.GetBytes(l, "error.message").String()
		if c.failed == "" {
			c.failed = "Codex reported that the turn failed"
		}
	case "error":
		// Codex also reports retried stream errors this way; they fail
		// the run only if no turn completes after them.
		if m := gjson.GetBytes(l, "message").String(); m != "" {
			c.lastError = m
			c.completed = false
		}
	case "item.started":
		item := gjson.GetBytes(l, "item")
		if item.Get("type").String() == "command_execution" {
			p.emit("$ " + unwrapShell(item.Get("command").String()))
		}
	case "item.completed":
		item := gjson.GetBytes(l, "item")
		switch item.Get("type").String() {
		case "agent_message":
			c.reply, c.hasReply = item.Get("text").String(), true
		case "command_execution":
			if code := item.Get("exit_code"); code.Exists() && code.Type == gjson.Number && code.Int() != 0 {
				p.emit("exit " + strconv.FormatInt(code.Int(), 10) + ": " + unwrapShell(item.Get("command").String()))
			}
		case "file_change":
			item.Get("changes").ForEach(func(_, ch gjson.Result) bool {
				kind := ch.Get("kind").String()
				if kind == "" {
					kind = "change"
				}
				p.emit(kind + " " + ShortPath(ch.Get("path").String()))
				return true
			})
		case "web_search":
			if q := item.Get("query").String(); q != "" {
				p.emit("search: " + q)
			}
		case "mcp_tool_call":
			if t := item.Get("tool").String(); t != "" {
				p.emit(t)
			}
		}
	}
}

// unwrapShell shows `bash -lc 'cmd'` as cmd.
func unwrapShell(cmd string) string {
	for _, sh := range []string{"bash -lc ", "/bin/bash -lc ", "/usr/bin/bash -lc ", "sh -c ", "/bin/sh -c ", "zsh -lc ", "/bin/zsh -lc ", "bash -c ", "/bin/bash -c "} {
		rest, ok := strings.CutPrefix(cmd, sh)
		if !ok {
			continue
		}
		if len(rest) >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[len(rest)-1] == rest[0] {
			return rest[1 : len(rest)-1]
		}
		return rest
	}
	return cmd
}

func (c *codex) finish(p *Parser, r *Result) {
	r.Usage = c.usage
	r.CLISession = c.thread
	if c.hasReply {
		p.setReply(r, c.reply)
	}
	switch {
	case c.sawFailed:
		r.Failed = true
		r.Error, _ = Bound(c.failed, closingBytes)
	case c.lastError != "" && !c.completed:
		r.Failed = true
		r.Error, _ = Bound(c.lastError, closingBytes)
	}
}

// HasReply reports whether a Codex stream carried a final agent message;
// without one the runner reads the -o file.
func (r Result) HasReply() bool { return r.Reply != "" }
