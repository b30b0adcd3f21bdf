package agenttool

import (
	"fmt"
	"unicode/utf8"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/jobs"
	"github.com/scv-cli/scv/scv-server/internal/tools"
)

// The runner bounds a reply by the output limit, but the JSON around it
// (escaping, stderr_tail, error, hint, fallback, note, session) can take
// the output over tools.output_limit_bytes, where the agent loop would cut
// it mid-JSON: the model would get invalid JSON and lose its `session`.
// So every output embedding a result is fitted here: while its JSON is
// over the limit, its text fields are shortened on a character boundary,
// the reply first, and `truncated` is set.

// outputLimit is the call's output limit: the server's for this call,
// else the Set's.
func (s *Set) outputLimit(env tools.Env) int {
	if env.OutputLimit > 0 {
		return env.OutputLimit
	}
	return s.opts.OutputLimit
}

// fitField is a text field an output may shorten to fit the limit.
type fitField struct {
	s *string
	// fromStart makes it lose its start rather than its end (a tail,
	// such as stderr_tail, keeps its end).
	fromStart bool
	// truncated, when set, is set once the field is shortened.
	truncated *bool
}

// resultFields are the fields of r that fitting may shorten, in order:
// the reply first, the error last.
func resultFields(r *delegate.Result) []fitField {
	t := &r.Truncated
	return []fitField{
		{s: &r.Reply, truncated: t},
		{s: &r.StderrTail, fromStart: true, truncated: t},
		{s: &r.Note, truncated: t},
		{s: &r.Fallback, truncated: t},
		{s: &r.Hint, truncated: t},
		{s: &r.Error, truncated: t},
	}
}

// viewFields are the fields of a job view that fitting may shorten.
func viewFields(v *jobs.View) []fitField {
	var fs []fitField
	if v.Result != nil {
		fs = resultFields(v.Result)
	}
	return append(fs, fitField{s: &v.Progress}, fitField{s: &v.Note})
}

// fitResult returns r as JSON within limit bytes, shortening r's fields
// as needed; it reports whether it shortened any.
func fitResult(r *delegate.Result, limit int) (string, bool) {
	return fitJSON(r, limit, resultFields(r))
}

// fitView returns v as JSON within limit bytes, shortening its fields (the
// embedded reply first) as needed; it reports whether it shortened any.
func fitView(v *jobs.View, limit int) (string, bool) {
	return fitJSON(v, limit, viewFields(v))
}

// fitJSON returns v (which fields point into) as JSON of at most limit
// bytes: while the JSON is over, the fields are shortened in order, each by
// the overflow as JSON counts it, on a character boundary. It reports
// whether it shortened anything. A limit of 0 or less does not bound.
func fitJSON(v any, limit int, fields []fitField) (string, bool) {
	out := encode(v)
	cut := false
	for _, f := range fields {
		for limit > 0 && len(out) > limit && *f.s != "" {
			*f.s = shorten(*f.s, len(out)-limit, f.fromStart)
			if f.truncated != nil {
				*f.truncated = true
			}
			cut = true
			out = encode(v)
		}
	}
	if limit > 0 && len(out) > limit {
		// Only a limit far below tools.output_limit_bytes' minimum gets
		// here; the output stays valid JSON as long as any can fit.
		cut = true
		for _, o := range []string{fmt.Sprintf(`{"error":"the result does not fit the output limit of %d bytes","truncated":true}`, limit), `{"truncated":true}`, `{}`} {
			if out = o; len(o) <= limit {
				break
			}
		}
	}
	return out, cut
}

// shorten drops characters from the end of s (from its start with
// fromStart) until the JSON string they took is at least over bytes
// shorter.
func shorten(s string, over int, fromStart bool) string {
	saved := 0
	if fromStart {
		i := 0
		for i < len(s) && saved < over {
			r, n := utf8.DecodeRuneInString(s[i:])
			saved += escapedLen(r, n)
			i += n
		}
		return s[i:]
	}
	i := len(s)
	for i > 0 && saved < over {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		saved += escapedLen(r, n)
		i -= n
	}
	return s[:i]
}

// escapedLen is how many bytes encoding/json writes for the character r,
// encoded in n bytes, inside a string.
func escapedLen(r rune, n int) int {
	switch {
	case r == '"', r == '\\', r == '\n', r == '\r', r == '\t', r == '\b', r == '\f':
		return 2
	case r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
		return 6
	case r == utf8.RuneError && n == 1:
		return 6 // an invalid byte becomes \ufffd
	}
	return n
}
