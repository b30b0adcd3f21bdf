package output

import (
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/tidwall/gjson"
)

// pi reads `pi --mode json`: the session header (session id), assistant
// message_end events (the last one's text is the reply; usage adds up
// over them; errorMessage of a last message that stopped with an error),
// and tool_execution_start/end for progress.
type pi struct {
	session  string
	reply    string
	hasReply bool
	usage    *delegate.Usage
	stop     string
	errMsg   string
}

// piFileTools take a file path.
var piFileTools = map[string]bool{"read": true, "write": true, "edit": true, "ls": true}

func (c *pi) wants(typ string) bool {
	switch typ {
	case "session", "message_end", "tool_execution_start", "tool_execution_end":
		return true
	}
	return false
}

func (c *pi) line(p *Parser, l []byte, typ string) {
	switch typ {
	case "session":
		if s := gjson.GetBytes(l, "id").String(); s != "" {
			c.session = s
		}
	case "message_end":
		msg := gjson.GetBytes(l, "message")
		if msg.Get("role").String() != "assistant" {
			return
		}
		var text []string
		msg.Get("content").ForEach(func(_, part gjson.Result) bool {
			if part.Get("type").String() == "text" {
				text = append(text, part.Get("text").String())
			}
			return true
		})
		c.reply, c.hasReply = strings.Join(text, ""), true
		c.stop = msg.Get("stopReason").String()
		c.errMsg = msg.Get("errorMessage").String()
		if u := msg.Get("usage"); u.Exists() {
			if c.usage == nil {
				c.usage = &delegate.Usage{}
			}
			c.usage.InputTokens += u.Get("input").Int() + u.Get("cacheRead").Int() + u.Get("cacheWrite").Int()
			c.usage.OutputTokens += u.Get("output").Int()
		}
	case "tool_execution_start":
		if p.progress == nil {
			return
		}
		f := gjson.GetManyBytes(l, "toolName", "args")
		p.emit(piToolLine(f[0].String(), f[1]))
	case "tool_execution_end":
		f := gjson.GetManyBytes(l, "toolName", "isError")
		if f[1].Bool() {
			p.emit(f[0].String() + " failed")
		}
	}
}

func piToolLine(name string, args gjson.Result) string {
	switch {
	case name == "bash":
		return "$ " + args.Get("command").String()
	case piFileTools[name]:
		if f := args.Get("path").String(); f != "" {
			return name + " " + ShortPath(f)
		}
	}
	return name
}

func (c *pi) finish(p *Parser, r *Result) {
	r.Usage = c.usage
	r.CLISession = c.session
	switch {
	case c.stop == "error" || c.stop == "aborted":
		r.Failed = true
		msg := c.errMsg
		if msg == "" {
			msg = "pi stopped with " + c.stop
		}
		r.Error, _ = Bound(msg, closingBytes)
	case c.hasReply:
		p.setReply(r, c.reply)
	default:
		r.Failed = true
		r.Error = "pi ended without an assistant message"
	}
}
