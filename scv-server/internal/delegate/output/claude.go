package output

import (
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/tidwall/gjson"
)

// claude reads Claude Code's --output-format stream-json: system/init
// (session id), assistant messages (tool uses and interim text become
// progress; a refusal stop reason is remembered) and the closing result
// event (reply, is_error, usage, stop_reason).
type claude struct {
	sawResult  bool
	result     string
	isError    bool
	subtype    string
	stop       string // the result's or the last assistant message's stop reason
	usage      *delegate.Usage
	session    string
	errorsText []string // the result's "errors" array, if any
}

// claudeFileTools take a file path.
var claudeFileTools = map[string]string{
	"Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
	"NotebookEdit": "notebook_path", "NotebookRead": "notebook_path",
}

func (c *claude) wants(typ string) bool {
	switch typ {
	case "system", "assistant", "result":
		return true
	}
	return false
}

func (c *claude) line(p *Parser, l []byte, typ string) {
	switch typ {
	case "system":
		if s := gjson.GetBytes(l, "session_id").String(); s != "" {
			c.session = s
		}
	case "assistant":
		msg := gjson.GetBytes(l, "message")
		if s := msg.Get("stop_reason").String(); s != "" {
			c.stop = s
		}
		if p.progress == nil {
			return
		}
		msg.Get("content").ForEach(func(_, item gjson.Result) bool {
			switch item.Get("type").String() {
			case "tool_use":
				p.emit(claudeToolLine(item.Get("name").String(), item.Get("input")))
			case "text":
				if t := firstLine(item.Get("text").String()); t != "" {
					p.emit(t)
				}
			}
			return true
		})
	case "result":
		c.sawResult = true
		f := gjson.GetManyBytes(l, "result", "is_error", "subtype", "stop_reason", "usage", "session_id", "errors")
		c.result = f[0].String()
		c.isError = f[1].Bool()
		c.subtype = f[2].String()
		if s := f[3].String(); s != "" {
			c.stop = s
		}
		if u := f[4]; u.Exists() {
			in := u.Get("input_tokens").Int() + u.Get("cache_creation_input_tokens").Int() + u.Get("cache_read_input_tokens").Int()
			c.usage = &delegate.Usage{InputTokens: in, OutputTokens: u.Get("output_tokens").Int()}
		}
		if s := f[5].String(); s != "" {
			c.session = s
		}
		c.errorsText = nil
		f[6].ForEach(func(_, e gjson.Result) bool {
			if s := e.String(); s != "" {
				c.errorsText = append(c.errorsText, s)
			}
			return true
		})
	}
}

func claudeToolLine(name string, in gjson.Result) string {
	switch name {
	case "Bash":
		return "$ " + in.Get("command").String()
	case "WebSearch":
		return "search: " + in.Get("query").String()
	case "WebFetch":
		return "fetch " + stripQuery(in.Get("url").String())
	}
	if key, ok := claudeFileTools[name]; ok {
		if f := in.Get(key).String(); f != "" {
			return name + " " + ShortPath(f)
		}
	}
	return name
}

func (c *claude) finish(p *Parser, r *Result) {
	r.Usage = c.usage
	r.CLISession = c.session
	switch {
	case !c.sawResult:
		// The stream ended without a result: the run was cut short.
		r.Failed = true
		r.Error = "Claude Code ended without a result event"
	case c.isError || (c.subtype != "" && c.subtype != "success"):
		r.Failed = true
		msg := c.result
		if len(c.errorsText) > 0 {
			msg = strings.TrimSpace(msg + "\n" + strings.Join(c.errorsText, "\n"))
		}
		if msg == "" {
			msg = "Claude Code reported an error (" + c.subtype + ")"
		}
		r.Error, _ = Bound(msg, closingBytes)
	default:
		p.setReply(r, c.result)
	}
	if c.stop == "refusal" {
		r.Declined = true
		if r.Reply == "" && c.result != "" {
			p.setReply(r, c.result)
		}
		r.Failed, r.Error = false, ""
	}
}
