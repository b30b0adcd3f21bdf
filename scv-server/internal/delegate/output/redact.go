package output

import (
	"strings"
	"unicode/utf8"
)

// MaxProgress bounds a progress line in bytes.
const MaxProgress = 200

// Redaction is a display heuristic (tools.md, "Progress"), not a
// guarantee: it hides values that look like credentials.
var (
	// Authorization: Bearer <token>, Basic <token>.
	bearerRE = lazyRE(`(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{6,}`)
	// NAME=value, --name value, --name=value, "name": "value" and
	// name: value where the name mentions a key, token, secret or
	// password.
	assignRE = lazyRE(`(?i)([A-Za-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|credential|auth)[A-Za-z0-9_.-]*)("?\s*[=:]\s*"?)([^\s"',;&|]+)`)
	flagRE   = lazyRE(`(?i)(--?[A-Za-z0-9_-]*(?:key|token|secret|passw(?:or)?d|credential)[A-Za-z0-9_-]*)(\s+)([^\s-][^\s]*)`)
	// Well-known token prefixes.
	prefixRE = lazyRE(`\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{8,}|gh[pousr]_[A-Za-z0-9]{10,}|github_pat_[A-Za-z0-9_]{10,}|xox[abposr]-[A-Za-z0-9-]{8,}|(?:AKIA|ASIA)[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{10,}|AIza[0-9A-Za-z_-]{20,}|xai-[A-Za-z0-9]{10,}|hf_[A-Za-z0-9]{10,}|npm_[A-Za-z0-9]{10,}|pypi-[A-Za-z0-9_-]{10,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+)`)
	// user:password@ in a URL.
	userinfoRE = lazyRE(`(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@`)
)

// Redact turns one status line into what clients may see: its first line
// only, credential-looking values replaced by "…", URLs without their
// query, absolute paths shortened to their last two components, at most
// MaxProgress bytes.
func Redact(line string) string {
	first, rest, multi := strings.Cut(line, "\n")
	line = strings.TrimSpace(first)
	if multi && strings.TrimSpace(rest) != "" {
		line += " …"
	}
	if line == "" {
		return ""
	}
	if !utf8.ValidString(line) {
		line = strings.ToValidUTF8(line, "\uFFFD")
	}
	line = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, line)
	// Cheap tests first: most lines hold nothing to redact, and the
	// regular expressions cost more than the rest of the parse.
	lower := strings.ToLower(line)
	if strings.Contains(line, "://") && strings.Contains(line, "@") {
		line = userinfoRE().ReplaceAllString(line, "${1}…@")
	}
	named := containsAny(lower, credentialWords)
	if named || strings.Contains(lower, "bearer") || strings.Contains(lower, "basic") {
		line = bearerRE().ReplaceAllString(line, "${1}${2}…")
	}
	if named && strings.ContainsAny(line, "=:") {
		line = assignRE().ReplaceAllStringFunc(line, redactAssign)
	}
	if named && strings.Contains(line, "-") {
		line = flagRE().ReplaceAllString(line, "${1}${2}…")
	}
	if containsAny(line, tokenPrefixes) {
		line = prefixRE().ReplaceAllString(line, "…")
	}
	if strings.ContainsAny(line, "/~") {
		line = shortenTokens(line)
	}
	if len(line) > MaxProgress {
		line, _ = Bound(line, MaxProgress-len("…"))
		line += "…"
	}
	return line
}

// credentialWords are what a credential's name mentions (lower case);
// a line without any needs no name-based redaction.
var credentialWords = []string{"key", "token", "secret", "passw", "credential", "auth", "pwd", "pass"}

// tokenPrefixes start the well-known token formats prefixRE matches.
var tokenPrefixes = []string{"sk-", "gh", "github_pat_", "xox", "AKIA", "ASIA", "glpat-", "AIza", "xai-", "hf_", "npm_", "pypi-", "eyJ"}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// redactAssign replaces the value of one NAME=value match, leaving
// names that only contain "auth" or "key" as part of a longer word
// without a credential look alone (author=, keyboard=, monkey=) when the
// value is short and plain.
func redactAssign(m string) string {
	sub := assignRE().FindStringSubmatch(m)
	name, sep, value := sub[1], sub[2], sub[3]
	lower := strings.ToLower(name)
	if value == "…" || strings.HasPrefix(value, "$") || strings.EqualFold(value, "bearer") || strings.EqualFold(value, "basic") {
		return m // already redacted, or a variable reference
	}
	if !credentialName(lower) {
		return m
	}
	return name + sep + "…"
}

// credentialName reports whether a lower-case variable or flag name names
// a credential.
func credentialName(n string) bool {
	for _, w := range []string{"token", "secret", "passw", "credential", "apikey", "api_key", "api-key", "private_key", "privatekey", "access_key", "accesskey", "auth_key"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	// "key" alone, or as a word of the name (KEY, X_KEY, key.id), but
	// not inside a word (monkey, keyboard).
	for _, f := range strings.FieldsFunc(n, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		if f == "key" || f == "auth" || f == "authorization" || f == "pass" || f == "pwd" {
			return true
		}
	}
	return false
}

// shortenTokens shortens absolute paths and strips URL queries, token by
// token (whitespace-separated, surrounding quotes kept).
func shortenTokens(line string) string {
	var b strings.Builder
	b.Grow(len(line))
	for len(line) > 0 {
		i := strings.IndexFunc(line, func(r rune) bool { return r != ' ' })
		if i < 0 {
			b.WriteString(line)
			break
		}
		b.WriteString(line[:i])
		line = line[i:]
		j := strings.IndexByte(line, ' ')
		if j < 0 {
			j = len(line)
		}
		b.WriteString(shortenToken(line[:j]))
		line = line[j:]
	}
	return b.String()
}

func shortenToken(tok string) string {
	// Keep surrounding quotes and brackets.
	lead := len(tok) - len(strings.TrimLeft(tok, `'"(=`))
	trail := len(tok) - len(strings.TrimRight(tok, `'"),;:`))
	if lead+trail >= len(tok) {
		return tok
	}
	core := tok[lead : len(tok)-trail]
	if k := strings.Index(core, "://"); k > 0 && isScheme(core[:k]) {
		if q := strings.IndexAny(core, "?#"); q >= 0 {
			core = core[:q]
		}
		return tok[:lead] + core + tok[len(tok)-trail:]
	}
	if eq := strings.IndexByte(core, '='); eq > 0 && eq+1 < len(core) && core[eq+1] == '/' {
		// NAME=/some/path or --flag=/some/path
		return tok[:lead] + core[:eq+1] + ShortPath(core[eq+1:]) + tok[len(tok)-trail:]
	}
	if strings.HasPrefix(core, "/") || strings.HasPrefix(core, "~/") {
		return tok[:lead] + ShortPath(core) + tok[len(tok)-trail:]
	}
	return tok
}

func isScheme(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '.' || c == '-')) {
			return false
		}
	}
	return true
}

// ShortPath returns the last two components of a path, prefixed by "…/"
// when it had more; relative paths of at most two components are
// returned as they are.
func ShortPath(p string) string {
	trimmed := strings.TrimRight(p, "/")
	if trimmed == "" {
		return p
	}
	parts := strings.Split(trimmed, "/")
	var comps []string
	for _, c := range parts {
		if c != "" {
			comps = append(comps, c)
		}
	}
	if len(comps) <= 2 {
		return p
	}
	return "…/" + strings.Join(comps[len(comps)-2:], "/")
}

// stripQuery removes a URL's query and fragment.
func stripQuery(u string) string {
	if q := strings.IndexAny(u, "?#"); q >= 0 {
		return u[:q]
	}
	return u
}

// firstLine returns the first non-blank line of s, trimmed.
func firstLine(s string) string {
	for s != "" {
		var l string
		l, s, _ = strings.Cut(s, "\n")
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
