package sessionstore

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/shared/protocol"
)

// decodeRecord decodes one line of the log into rec.
//
// Decoding is nearly all the time a resume takes, so lines are first read
// by a small parser that knows the record's fields and only the compact
// JSON the log's encoder writes (no whitespace, no null, no unknown or
// differently cased key, integers only, no escaped surrogates). It gives up
// on anything else, and the line is then decoded by encoding/json, which
// has the last word: the fast path never accepts a line encoding/json would
// refuse or read differently (the tests compare the two).
func decodeRecord(line []byte, rec *record) error {
	p := fastParser{b: line}
	if p.record(rec) && p.i == len(line) {
		return nil
	}
	*rec = record{}
	return json.Unmarshal(line, rec)
}

// fastParser reads b from i. Each method reports whether it read what it
// expects; on false the caller gives up.
type fastParser struct {
	b    []byte
	i    int
	buf  []byte // for strings with escapes
	turn string // the last turn id read, shared by the records that repeat it
}

func (p *fastParser) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// fields reads an object, calling field for each key with the parser at
// its value.
func (p *fastParser) fields(field func(key string) bool) bool {
	if !p.eat('{') {
		return false
	}
	if p.eat('}') {
		return true
	}
	// A key given twice is left to encoding/json, which merges the
	// values of some fields.
	var seen [24]string
	n := 0
	for {
		key, ok := p.key()
		if !ok || key == "" || n == len(seen) {
			return false
		}
		for _, k := range seen[:n] {
			if k == key {
				return false
			}
		}
		seen[n] = key
		n++
		if !p.eat(':') || !field(key) {
			return false
		}
		if p.eat(',') {
			continue
		}
		return p.eat('}')
	}
}

// key reads an object key: a string of plain ASCII letters and
// underscores, as the record's keys are.
func (p *fastParser) key() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if c == '"' {
			k := p.b[start:p.i]
			p.i++
			return keyString(k), true
		}
		if !(c >= 'a' && c <= 'z' || c == '_') {
			return "", false
		}
		p.i++
	}
	return "", false
}

// keyString returns k as a string without allocating for the known keys.
func keyString(k []byte) string {
	switch string(k) {
	case "t":
		return "t"
	case "at":
		return "at"
	case "v":
		return "v"
	case "id":
		return "id"
	case "cwd":
		return "cwd"
	case "model":
		return "model"
	case "turn":
		return "turn"
	case "request":
		return "request"
	case "origin":
		return "origin"
	case "msg":
		return "msg"
	case "failed":
		return "failed"
	case "synthetic":
		return "synthetic"
	case "outcome":
		return "outcome"
	case "code":
		return "code"
	case "message":
		return "message"
	case "steps":
		return "steps"
	case "usage":
		return "usage"
	case "from":
		return "from"
	case "removed":
		return "removed"
	case "messages":
		return "messages"
	case "role":
		return "role"
	case "content":
		return "content"
	case "tool_calls":
		return "tool_calls"
	case "tool_call_id":
		return "tool_call_id"
	case "name":
		return "name"
	case "arguments":
		return "arguments"
	case "input_tokens":
		return "input_tokens"
	case "output_tokens":
		return "output_tokens"
	case "cached_input_tokens":
		return "cached_input_tokens"
	case "kind":
		return "kind"
	case "jobs":
		return "jobs"
	}
	return "" // unknown: no field matches it
}

// str reads a string value.
func (p *fastParser) str() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	ascii := true
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		p.i++
	}
	return "", false
}

// symbol reads a string value that is usually one of a few words (record
// types, roles, outcomes), without allocating for those.
func (p *fastParser) symbol() (string, bool) {
	if p.i < len(p.b) && p.b[p.i] == '"' {
		if end := bytes.IndexByte(p.b[p.i+1:], '"'); end >= 0 && end <= 16 {
			raw := p.b[p.i+1 : p.i+1+end]
			var sym string
			switch string(raw) {
			case recMsg:
				sym = recMsg
			case recTurn:
				sym = recTurn
			case recEnd:
				sym = recEnd
			case string(provider.RoleUser):
				sym = string(provider.RoleUser)
			case string(provider.RoleAssistant):
				sym = string(provider.RoleAssistant)
			case string(provider.RoleTool):
				sym = string(provider.RoleTool)
			case OutcomeCompleted:
				sym = OutcomeCompleted
			}
			if sym != "" {
				p.i += end + 2
				return sym, true
			}
		}
	}
	return p.str()
}

// turnID reads a turn id, sharing the string with the previous record's
// when it is the same.
func (p *fastParser) turnID() (string, bool) {
	if n := len(p.turn); n > 0 && p.i+n+2 <= len(p.b) && p.b[p.i] == '"' && p.b[p.i+n+1] == '"' && string(p.b[p.i+1:p.i+n+1]) == p.turn {
		p.i += n + 2
		return p.turn, true
	}
	s, ok := p.str()
	p.turn = s
	return s, ok
}

// escaped reads the rest of a string that has an escape at p.i.
func (p *fastParser) escaped(start int) (string, bool) {
	buf := append(p.buf[:0], p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			p.buf = buf
			if !utf8.Valid(buf) {
				return "", false
			}
			return string(buf), true
		case c < 0x20:
			return "", false
		case c != '\\':
			buf = append(buf, c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.b) {
			return "", false
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			if p.i+4 > len(p.b) {
				return "", false
			}
			var r rune
			for _, h := range p.b[p.i : p.i+4] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | rune(h-'0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | rune(h-'a'+10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | rune(h-'A'+10)
				default:
					return "", false
				}
			}
			if r >= 0xD800 && r < 0xE000 {
				return "", false // surrogates: encoding/json's rules apply
			}
			p.i += 4
			buf = utf8.AppendRune(buf, r)
		default:
			return "", false
		}
	}
	return "", false
}

// integer reads an integer value of at most 18 digits.
func (p *fastParser) integer() (int64, bool) {
	neg := p.eat('-')
	start := p.i
	var n int64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		n = n*10 + int64(p.b[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || digits > 18 || (digits > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) && (p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

func (p *fastParser) integerInt() (int, bool) {
	n, ok := p.integer()
	return int(n), ok && int64(int(n)) == n
}

func (p *fastParser) boolean() (bool, bool) {
	b := p.b[p.i:]
	switch {
	case len(b) >= 4 && string(b[:4]) == "true":
		p.i += 4
		return true, true
	case len(b) >= 5 && string(b[:5]) == "false":
		p.i += 5
		return false, true
	}
	return false, false
}

// array reads an array, calling item with the parser at each element.
func (p *fastParser) array(item func() bool) bool {
	if !p.eat('[') {
		return false
	}
	if p.eat(']') {
		return true
	}
	for {
		if !item() {
			return false
		}
		if p.eat(',') {
			continue
		}
		return p.eat(']')
	}
}

func (p *fastParser) record(r *record) bool {
	return p.fields(func(key string) bool {
		var ok bool
		switch key {
		case "t":
			r.T, ok = p.symbol()
		case "at":
			r.At, ok = p.str()
		case "v":
			r.V, ok = p.integerInt()
		case "id":
			r.ID, ok = p.str()
		case "cwd":
			r.Cwd, ok = p.str()
		case "model":
			r.Model, ok = p.str()
		case "turn":
			r.Turn, ok = p.turnID()
		case "request":
			r.Request, ok = p.str()
		case "origin":
			r.Origin = new(protocol.Origin)
			ok = p.origin(r.Origin)
		case "msg":
			r.Msg = new(provider.Message)
			ok = p.message(r.Msg)
		case "failed":
			r.Failed, ok = p.boolean()
		case "synthetic":
			r.Synthetic, ok = p.boolean()
		case "outcome":
			r.Outcome, ok = p.symbol()
		case "code":
			r.Code, ok = p.str()
		case "message":
			r.Message, ok = p.str()
		case "steps":
			r.Steps, ok = p.integerInt()
		case "usage":
			r.Usage = new(protocol.Usage)
			ok = p.usage(r.Usage)
		case "from":
			r.From, ok = p.integerInt()
		case "removed":
			r.Removed, ok = p.integerInt()
		case "messages":
			r.Messages = []provider.Message{}
			ok = p.array(func() bool {
				r.Messages = append(r.Messages, provider.Message{})
				return p.message(&r.Messages[len(r.Messages)-1])
			})
		}
		return ok
	})
}

func (p *fastParser) message(m *provider.Message) bool {
	return p.fields(func(key string) bool {
		var ok bool
		switch key {
		case "role":
			var s string
			s, ok = p.symbol()
			m.Role = provider.Role(s)
		case "content":
			m.Content, ok = p.str()
		case "tool_call_id":
			m.ToolCallID, ok = p.str()
		case "tool_calls":
			m.ToolCalls = []provider.ToolCall{}
			ok = p.array(func() bool {
				m.ToolCalls = append(m.ToolCalls, provider.ToolCall{})
				c := &m.ToolCalls[len(m.ToolCalls)-1]
				return p.fields(func(key string) bool {
					var ok bool
					switch key {
					case "id":
						c.ID, ok = p.str()
					case "name":
						c.Name, ok = p.str()
					case "arguments":
						c.Arguments, ok = p.str()
					}
					return ok
				})
			})
		}
		return ok
	})
}

func (p *fastParser) usage(u *protocol.Usage) bool {
	return p.fields(func(key string) bool {
		var ok bool
		switch key {
		case "input_tokens":
			u.InputTokens, ok = p.integer()
		case "output_tokens":
			u.OutputTokens, ok = p.integer()
		case "cached_input_tokens":
			var n int64
			n, ok = p.integer()
			u.CachedInputTokens = &n
		}
		return ok
	})
}

func (p *fastParser) origin(o *protocol.Origin) bool {
	return p.fields(func(key string) bool {
		var ok bool
		switch key {
		case "kind":
			o.Kind, ok = p.str()
		case "jobs":
			o.Jobs = []string{}
			ok = p.array(func() bool {
				s, ok := p.str()
				o.Jobs = append(o.Jobs, s)
				return ok
			})
		}
		return ok
	})
}
