package config

import (
	"fmt"
	"maps"
	"math"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// Bounds of numeric keys.
const (
	// maxSeconds bounds every timeout (30 days), well clear of
	// time.Duration overflow.
	maxSeconds = 30 * 24 * 3600
	// maxRetries bounds providers.<name>.max_retries.
	maxRetries = 20
	// minOutputLimit and maxOutputLimit bound tools.output_limit_bytes. A
	// tool result of 1 MiB still fits an 8 MiB server frame after the worst
	// JSON escaping (six bytes per byte); less than 1 KiB cannot page a
	// file usefully.
	minOutputLimit = 1 << 10
	maxOutputLimit = 1 << 20
	// maxSpill bounds tools.spill_max_bytes (4 GiB).
	maxSpill = 4 << 30
	// maxContextTokens bounds providers.<name>.context_max_tokens.
	maxContextTokens = 1 << 31
	// maxSteps bounds agent.max_steps.
	maxSteps = 100000
)

var (
	approvalPolicies = []string{string(ApprovalOnRisk), string(ApprovalNever), string(ApprovalAuto)}
	providerKinds    = []string{string(KindOpenAI)}
	wireAPIs         = []string{string(WireChat), string(WireResponses)}
	daemonUses       = []string{string(DaemonAuto), string(DaemonAlways), string(DaemonNever)}
)

func validApprovalPolicy(p ApprovalPolicy) bool {
	return p == ApprovalOnRisk || p == ApprovalNever || p == ApprovalAuto
}

// quoteList writes "a", "b" or "c" (with conj "or").
func quoteList(items []string, conj string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	default:
		return strings.Join(q[:len(q)-1], ", ") + " " + conj + " " + q[len(q)-1]
	}
}

type validator struct {
	c    *Config
	user *layer
	errs []error
	// rejected are keys whose values had the wrong type: their problem is
	// reported already, and the value checked here is not theirs.
	rejected map[string]bool
}

// fail records an error about key, located where its value came from.
func (v *validator) fail(key string, format string, args ...any) {
	if v.rejected[key] {
		return
	}
	e := &Error{Key: key, Message: fmt.Sprintf("key %s ", quoteKey(key)) + fmt.Sprintf(format, args...)}
	src, ok := v.c.Sources[key]
	switch {
	case ok && (src.Kind == SourceUser || src.Kind == SourceProject):
		e.File, e.Line = src.File, src.Line
	case ok && src.Kind == SourceEnv:
		e.Env = src.Env
	case v.user != nil:
		// A table without a value of its own (providers.<name>): point at
		// where the user file defines it.
		e.File = v.user.file
		if en, ok := v.user.ix.first(strings.Split(key, ".")...); ok {
			e.Line = en.line
		}
	}
	v.errs = append(v.errs, e)
}

func (v *validator) oneOf(key, val string, allowed []string, what string) {
	for _, a := range allowed {
		if val == a {
			return
		}
	}
	v.fail(key, "is %q, which is not %s; use %s", val, what, quoteList(allowed, "or"))
}

func (v *validator) intRange(key string, val, lo, hi int64, unit string) {
	if val < lo || val > hi {
		v.fail(key, "is %d, out of range: it must be %s from %d to %d", val, unit, lo, hi)
	}
}

// from says where the value of key came from, for messages: "the default"
// or "from /home/u/.scv/config.toml:3".
func (v *validator) from(key string) string {
	s := v.c.Sources[key]
	if s.Kind == SourceDefault || s.Kind == "" {
		return "the default"
	}
	return "from " + s.String()
}

// validate checks every value of the merged configuration.
func (l *loader) validate() []error {
	c := l.cfg
	v := &validator{c: c, user: l.user, rejected: l.rejected}

	// [provider]
	if a := c.Provider.Active; a == "" {
		v.fail("provider.active", "is empty; set it to the name of a [providers.<name>] table or to %q", DemoProvider)
	} else if _, ok := c.Providers[a]; !ok && a != DemoProvider {
		v.fail("provider.active", "is %q, but there is no [providers.%s] table; define that table or use %s",
			a, joinKey([]string{a}), quoteList(append(c.ProviderNames(), DemoProvider), "or"))
	}

	// [providers.<name>]
	for _, name := range c.ProviderNames() {
		p := c.Providers[name]
		k := func(field string) string { return joinKey([]string{"providers", name, field}) }
		table := joinKey([]string{"providers", name})
		switch {
		case name == DemoProvider:
			v.fail(table, "names a provider %q, but that name is reserved for the built-in demo provider; rename the table", name)
			continue
		case strings.TrimSpace(name) == "":
			v.fail(table, "has an empty provider name; give the table a name such as [providers.openai]")
			continue
		}
		v.oneOf(k("kind"), string(p.Kind), providerKinds, "a supported provider kind (\"openai\" covers any OpenAI-compatible endpoint)")
		v.oneOf(k("wire_api"), string(p.WireAPI), wireAPIs, "a supported wire API")
		v.checkBaseURL(k("base_url"), p.BaseURL)
		if p.APIKeyEnv != "" && !validEnvName(p.APIKeyEnv) {
			v.fail(k("api_key_env"), "is %q, which is not an environment variable name; use letters, digits and underscores, such as \"OPENAI_API_KEY\"", p.APIKeyEnv)
		}
		if strings.ContainsAny(p.APIKey, " \t\r\n") {
			// Never show the value.
			v.fail(k("api_key"), "contains spaces or line breaks; paste the key alone, without quotes or spaces")
		}
		if strings.TrimSpace(p.Model) == "" {
			v.fail(k("model"), "is empty; set it to the model name the endpoint expects, such as %q", DefaultOpenAIModel)
		}
		v.intRange(k("context_max_tokens"), p.ContextMaxTokens, 1, maxContextTokens, "a number of tokens")
		v.intRange(k("timeout_seconds"), int64(p.TimeoutSeconds), 1, maxSeconds, "a number of seconds")
		v.intRange(k("stream_idle_timeout_seconds"), int64(p.StreamIdleTimeoutSeconds), 1, maxSeconds, "a number of seconds")
		v.intRange(k("max_retries"), int64(p.MaxRetries), 0, maxRetries, "a count")
		for _, h := range slices.Sorted(maps.Keys(p.Headers)) {
			val := p.Headers[h]
			if !validHeaderName(h) {
				v.fail(k("headers"), "has the header name %q, which is not a valid HTTP header name", h)
			} else if strings.ContainsAny(val, "\r\n\x00") {
				v.fail(k("headers"), "has a value for header %q that contains a line break or NUL; remove it", h)
			}
		}
		v.validateModels(name, p)
	}

	v.validateTools(c)

	// [agent]
	v.intRange("agent.max_steps", int64(c.Agent.MaxSteps), 1, maxSteps, "a number of steps")
	v.intRange("agent.compact_threshold_percent", int64(c.Agent.CompactThresholdPercent), 10, 95, "a percentage of the context window")
	v.intRange("agent.compact_keep_turns", int64(c.Agent.CompactKeepTurns), 1, 100, "a number of turns")

	v.intRange("agent.max_conversations", int64(c.Agent.MaxConversations), 1, 64, "a number of conversations")
	v.intRange("agent.conversation_idle_seconds", int64(c.Agent.ConversationIdleSeconds), 60, maxSeconds, "a number of seconds")
	v.intRange("agent.max_background", int64(c.Agent.MaxBackground), 0, 32, "a number of jobs")
	v.intRange("agent.max_delegation_depth", int64(c.Agent.MaxDelegationDepth), 0, 8, "a nesting depth")
	v.intRange("tools.agent_timeout_seconds", int64(c.Tools.AgentTimeoutSeconds), 1, maxSeconds, "a number of seconds")
	v.validateAgents()
	v.validateMCP()
	v.validateChannels()
	v.validateWeChat()

	// [web]
	v.validateWeb()

	// [daemon]
	v.oneOf("daemon.use", string(c.Daemon.Use), daemonUses, "a daemon choice")
	v.intRange("daemon.session_idle_seconds", int64(c.Daemon.SessionIdleSeconds), 60, maxSeconds, "a number of seconds")
	v.intRange("daemon.restart_timeout_seconds", int64(c.Daemon.RestartTimeoutSeconds), 0, maxSeconds, "a number of seconds")

	// [channels]
	v.intRange("channels.keep_days", int64(c.Channels.KeepDays), 1, 3650, "a number of days")
	v.intRange("channels.max_waiting", int64(c.Channels.MaxWaiting), 1, 1000, "a number of messages")
	v.intRange("channels.media_max_mb", int64(c.Channels.MediaMaxMB), 1, 100, "a number of MiB")
	if a := c.Channels.Archive; a != "" && !filepath.IsAbs(a) {
		v.fail("channels.archive", "is %q, which is not an absolute path; use one such as \"/home/you/chat-archive\", or leave the key out for $SCV_HOME/archive", a)
	}

	// [skills]
	v.intRange("skills.max_skills", int64(c.Skills.MaxSkills), 1, 1000, "a number of skills")
	v.intRange("skills.max_skill_bytes", c.Skills.MaxSkillBytes, minOutputLimit, maxOutputLimit, "a size in bytes")

	return v.errs
}

// rank orders sources by precedence; within one file, later lines rank
// higher.
func rank(s Source) int {
	switch s.Kind {
	case SourceUser:
		return 1<<20 + s.Line
	case SourceProject:
		return 2<<20 + s.Line
	case SourceEnv:
		return 3 << 20
	default:
		return 0
	}
}

func (v *validator) checkBaseURL(key, raw string) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		v.fail(key, "is empty; set it to the endpoint's base URL, such as %q", DefaultOpenAIBaseURL)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		v.fail(key, "is %q, which is not an http:// or https:// URL; use a URL such as %q", raw, DefaultOpenAIBaseURL)
	case u.User != nil:
		// Do not echo the URL: it holds credentials.
		v.fail(key, "contains a user name or password; remove them from the URL and use api_key_env")
	}
}

func validEnvName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// checkAllowRule says what is wrong with a tools.allow entry, or "": it
// must be a session rule key of a known family, as approval.requested
// shows them (docs/protocol.md, Session rules).
func checkAllowRule(key string) string {
	family, rest, ok := strings.Cut(key, ":")
	switch {
	case !ok || rest == "" || strings.TrimSpace(rest) != rest || strings.ContainsAny(rest, "\n\r\t\x00"):
		return "which is not a rule key; write the family and what it covers, such as \"bash:go test\", \"fs:src/\" or \"mcp:tracker/\""
	case family == "bash":
		if strings.Contains(rest, "  ") {
			return "which has two spaces in a row; bash rules are the command's leading words, such as \"bash:go test\""
		}
	case family == "fs":
		if !strings.HasSuffix(rest, "/") || strings.HasPrefix(rest, "/") || strings.Contains(rest, "..") {
			return "which is not a directory of the workspace; fs rules name one relative to it, ending in /, such as \"fs:src/\" (or \"fs:./\" for the whole workspace)"
		}
	case family == "mcp":
		if !strings.Contains(rest, "/") || strings.HasPrefix(rest, "/") {
			return "which names no MCP server; write \"mcp:<server>/\" for every tool of a server or \"mcp:<server>/<tool>\" for one"
		}
	default:
		return fmt.Sprintf("whose family %q is unknown; use bash, fs or mcp", family)
	}
	return ""
}

// validateTools checks the [tools] table.
func (v *validator) validateTools(c *Config) {
	t := c.Tools
	v.oneOf("tools.approval_policy", string(t.ApprovalPolicy), approvalPolicies, "an approval policy")
	v.intRange("tools.output_limit_bytes", t.OutputLimitBytes, minOutputLimit, maxOutputLimit, "a number of bytes")
	v.intRange("tools.command_timeout_seconds", int64(t.CommandTimeoutSeconds), 1, maxSeconds, "a number of seconds")
	v.intRange("tools.max_timeout_seconds", int64(t.MaxTimeoutSeconds), 1, maxSeconds, "a number of seconds")
	v.intRange("tools.spill_max_bytes", t.SpillMaxBytes, 0, maxSpill, "a number of bytes")
	v.intRange("tools.max_processes", int64(t.MaxProcesses), 8, 65536, "a number of processes")
	v.intRange("tools.memory_limit_mb", t.MemoryLimitMB, 0, 1<<24, "a number of MiB (0 for no limit)")
	for _, key := range t.Allow {
		if msg := checkAllowRule(key); msg != "" {
			v.fail("tools.allow", "has %q, %s", key, msg)
		}
	}
	if t.CommandTimeoutSeconds > 0 && t.MaxTimeoutSeconds > 0 && t.MaxTimeoutSeconds < t.CommandTimeoutSeconds {
		// Blame the value set last.
		if rank(c.Sources["tools.command_timeout_seconds"]) > rank(c.Sources["tools.max_timeout_seconds"]) {
			v.fail("tools.command_timeout_seconds", "is %d, above tools.max_timeout_seconds (%d, %s); lower it or raise max_timeout_seconds",
				t.CommandTimeoutSeconds, t.MaxTimeoutSeconds, v.from("tools.max_timeout_seconds"))
		} else {
			v.fail("tools.max_timeout_seconds", "is %d, below tools.command_timeout_seconds (%d, %s); raise it to at least %d or lower command_timeout_seconds",
				t.MaxTimeoutSeconds, t.CommandTimeoutSeconds, v.from("tools.command_timeout_seconds"), t.CommandTimeoutSeconds)
		}
	}
}

// maxPrice bounds a configured price (US dollars per million tokens): far
// above any model's, low enough that a typo such as a price per token
// written per thousand stands out.
const maxPrice = 10000

// validateModels checks the [providers.<name>.models.<model>] tables.
func (v *validator) validateModels(name string, p ProviderConfig) {
	for _, model := range slices.Sorted(maps.Keys(p.Models)) {
		ms := p.Models[model]
		k := func(field string) string { return joinKey([]string{"providers", name, "models", model, field}) }
		if strings.TrimSpace(model) == "" {
			v.fail(joinKey([]string{"providers", name, "models", model}), "has an empty model name; name the table after the model, such as [providers.%s.models.\"%s\"]", name, DefaultOpenAIModel)
			continue
		}
		if v.set(k("context_max_tokens")) {
			v.intRange(k("context_max_tokens"), ms.ContextMaxTokens, 1, maxContextTokens, "a number of tokens")
		}
		// A price of the wrong type is reported as such, not again as missing.
		in := v.set(k("input_price")) || v.rejected[k("input_price")]
		out := v.set(k("output_price")) || v.rejected[k("output_price")]
		switch {
		case in && !out:
			v.fail(k("input_price"), "is set but output_price is not; set both (US dollars per million tokens), or neither")
		case out && !in:
			v.fail(k("output_price"), "is set but input_price is not; set both (US dollars per million tokens), or neither")
		}
		v.price(k("input_price"), ms.InputPrice, in)
		v.price(k("output_price"), ms.OutputPrice, out)
		cached := v.set(k("cached_input_price")) || v.rejected[k("cached_input_price")]
		if cached && !in {
			v.fail(k("cached_input_price"), "is set but input_price and output_price are not; set those too (US dollars per million tokens), or remove it")
		}
		v.price(k("cached_input_price"), ms.CachedInputPrice, cached)
	}
}

// set reports whether key was given a value (by a file or the
// environment) rather than keeping its default.
func (v *validator) set(key string) bool {
	s := v.c.Sources[key]
	return s.Kind != "" && s.Kind != SourceDefault
}

// price checks a configured price.
func (v *validator) price(key string, val float64, set bool) {
	if set && (math.IsNaN(val) || val < 0 || val > maxPrice) {
		v.fail(key, "is %v, out of range: it must be a price in US dollars per million tokens from 0 to %d", val, maxPrice)
	}
}
