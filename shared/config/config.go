// Package config loads SCV's configuration: the user file
// $SCV_HOME/config.toml and the project file <workspace>/.scv/config.toml,
// validated strictly (unknown keys, wrong types and out-of-range values are
// errors that name the file, the line and the key), merged in the order
// defaults, user file, project file, environment.
//
// A project file may set only [tools] and [skills] options (spec decision 6); any other
// key it sets is reported as a Diagnostic and ignored. The package never
// logs: warnings are returned to the caller as Diagnostics.
//
// To add a key: add a field with a `toml` tag to the struct of its table,
// give it its default in Defaults (or DefaultProvider), check its range in
// validate, and describe it in docs/configuration.md. Merging, source
// tracking and unknown-key suggestions follow from the struct tags.
package config

import (
	"maps"
	"path/filepath"
	"slices"
	"time"
)

// DemoProvider is the name of the built-in demo provider, a scripted local
// model that needs no network or key. It is active when nothing else is
// configured. No [providers.demo] table may be defined.
const DemoProvider = "demo"

// ProviderKind is the protocol family of a provider.
type ProviderKind string

// Provider kinds.
const (
	// KindOpenAI is any OpenAI-compatible endpoint.
	KindOpenAI ProviderKind = "openai"
	// KindDemo is the built-in demo provider. It is what ActiveProvider
	// reports for the demo and is never accepted in a configuration file.
	KindDemo ProviderKind = "demo"
)

// WireAPI is the request format used with an OpenAI-compatible endpoint.
type WireAPI string

// Wire APIs.
const (
	// WireChat is the Chat Completions API (POST /chat/completions).
	WireChat WireAPI = "chat"
	// WireResponses is the Responses API (POST /responses).
	WireResponses WireAPI = "responses"
)

// ApprovalPolicy decides which tool calls need the client's approval (spec
// decision 3).
type ApprovalPolicy string

// Approval policies.
const (
	// ApprovalOnRisk runs read-only calls and asks for every other risk.
	ApprovalOnRisk ApprovalPolicy = "on-risk"
	// ApprovalNever runs read-only calls and denies the rest without asking.
	ApprovalNever ApprovalPolicy = "never"
	// ApprovalAuto runs every call without asking (trusted automation).
	ApprovalAuto ApprovalPolicy = "auto"
)

// Config is SCV's merged configuration. Get one from Load (or Defaults).
type Config struct {
	// Provider selects the active provider.
	Provider ProviderSelection `toml:"provider"`
	// Providers are the configured providers, by name ([providers.<name>]).
	Providers map[string]ProviderConfig `toml:"providers"`
	// Tools are the tool options; the only table a project file may set.
	Tools ToolsConfig `toml:"tools"`
	// Agent are the agent loop options.
	Agent AgentConfig `toml:"agent"`
	// Skills bound skill discovery and read_skill; a project may set them.
	Skills SkillsConfig `toml:"skills"`
	// Agents are the user's settings of delegated agents, by agent name
	// ([agents.<name>]).
	Agents map[string]AgentSettings `toml:"agents"`
	// MCPServers are the Model Context Protocol servers whose tools
	// sessions offer ([mcp_servers.<name>], user file only; docs/mcp.md).
	MCPServers map[string]MCPServer `toml:"mcp_servers"`
	// Web configures web_fetch and web_search.
	Web WebConfig `toml:"web"`
	// Daemon configures the daemon (docs/daemon.md).
	Daemon DaemonConfig `toml:"daemon"`
	// Channels configures chat channels (docs/channels.md).
	Channels ChannelsConfig `toml:"channels"`

	// Sources tells where each value came from, by dotted key (for example
	// "tools.approval_policy" or "providers.openai.model"). Every key of
	// the configuration has an entry.
	Sources map[string]Source `toml:"-" json:"-"`
}

// ProviderSelection is the [provider] table.
type ProviderSelection struct {
	// Active is the name of a [providers.<name>] table, or DemoProvider.
	Active string `toml:"active"`
}

// ProviderConfig is one [providers.<name>] table. Its String, GoString and
// LogValue methods never reveal APIKey or header values.
type ProviderConfig struct {
	// Kind is the protocol family; only KindOpenAI in files for now.
	Kind ProviderKind `toml:"kind"`
	// WireAPI is the request format: WireChat or WireResponses.
	WireAPI WireAPI `toml:"wire_api"`
	// BaseURL is the endpoint's base URL, such as https://api.openai.com/v1.
	BaseURL string `toml:"base_url"`
	// APIKey is the key itself. Prefer APIKeyEnv; when both are set APIKey
	// wins. Never printed.
	APIKey string `toml:"api_key" json:"-"`
	// APIKeyEnv names the environment variable holding the key. With
	// neither APIKey nor APIKeyEnv the endpoint is used without a key.
	APIKeyEnv string `toml:"api_key_env"`
	// Model is the model name sent with every request.
	Model string `toml:"model"`
	// ContextMaxTokens is the model's context window, in tokens.
	ContextMaxTokens int64 `toml:"context_max_tokens"`
	// TimeoutSeconds bounds a whole model request.
	TimeoutSeconds int `toml:"timeout_seconds"`
	// StreamIdleTimeoutSeconds bounds the silence between two stream
	// events.
	StreamIdleTimeoutSeconds int `toml:"stream_idle_timeout_seconds"`
	// MaxRetries is how many times a failed request is retried before its
	// first event (0: never).
	MaxRetries int `toml:"max_retries"`
	// Headers are extra HTTP headers sent with every request. Their values
	// are never printed.
	Headers map[string]string `toml:"headers"`
	// Models are what the user tells SCV about single models of the
	// endpoint, by model name ([providers.NAME.models."MODEL"]).
	Models map[string]ModelSettings `toml:"models"`
}

// ModelSettings is one [providers.<name>.models.<model>] table.
type ModelSettings struct {
	// ContextMaxTokens is the model's context window; 0 (unset) takes the
	// provider's context_max_tokens.
	ContextMaxTokens int64 `toml:"context_max_tokens"`
	// InputPrice and OutputPrice are what the model costs, in US dollars
	// per million input and output tokens. Both or neither are set:
	// Priced says which.
	InputPrice  float64 `toml:"input_price"`
	OutputPrice float64 `toml:"output_price"`
	// CachedInputPrice is what an input token read from the provider's
	// prompt cache costs, in US dollars per million; it needs input_price.
	// CachedPriced says whether it is set: unset, cached input tokens are
	// counted at InputPrice (an upper bound).
	CachedInputPrice float64 `toml:"cached_input_price"`
	CachedPriced     bool    `toml:"-"`
}

// ModelSettings returns the settings of model on the provider name, and
// whether a price is configured for it.
func (c *Config) ModelSettings(name, model string) (ms ModelSettings, priced bool) {
	ms = c.Providers[name].Models[model]
	set := func(field string) bool {
		src := c.Sources[joinKey([]string{"providers", name, "models", model, field})]
		return src.Kind != "" && src.Kind != SourceDefault
	}
	ms.CachedPriced = set("cached_input_price")
	return ms, set("input_price")
}

// ToolsConfig is the [tools] table.
type ToolsConfig struct {
	// ApprovalPolicy is on-risk, never or auto.
	ApprovalPolicy ApprovalPolicy `toml:"approval_policy"`
	// OutputLimitBytes caps the output a tool call returns to the model.
	OutputLimitBytes int64 `toml:"output_limit_bytes"`
	// CommandTimeoutSeconds is the default timeout of a command.
	CommandTimeoutSeconds int `toml:"command_timeout_seconds"`
	// MaxTimeoutSeconds is the largest timeout a call may ask for; at least
	// CommandTimeoutSeconds.
	MaxTimeoutSeconds int `toml:"max_timeout_seconds"`
	// SpillMaxBytes bounds the file that keeps a truncated command output
	// in full, in the session's state directory; 0 keeps no file.
	SpillMaxBytes int64 `toml:"spill_max_bytes"`
	// AgentTimeoutSeconds is the default timeout of a delegated agent
	// call; a call may raise it up to MaxTimeoutSeconds.
	AgentTimeoutSeconds int `toml:"agent_timeout_seconds"`
	// MaxProcesses bounds the processes a session's bash calls may have
	// alive at once, all calls together; a call whose processes go past
	// it is killed, so a fork loop is stopped.
	MaxProcesses int `toml:"max_processes"`
	// MemoryLimitMB is the address-space limit (RLIMIT_AS) of every
	// process of a bash call, in MiB; 0 sets none.
	MemoryLimitMB int64 `toml:"memory_limit_mb"`
	// Allow are approval rules in force in every session, in the keys of
	// session rules ("bash:go test", "fs:src/", "mcp:tracker/"): calls
	// they cover run without asking. Only the user's file sets them.
	Allow []string `toml:"allow"`
	// LoginSnapshot runs the login shell once per session and each bash
	// call as a non-login shell with its snapshot; false starts a login
	// shell for every call (docs/tools.md).
	LoginSnapshot bool `toml:"login_snapshot"`
}

// AgentConfig is the [agent] table.
type AgentConfig struct {
	// MaxSteps bounds the model requests of one turn.
	MaxSteps int `toml:"max_steps"`
	// SystemPrompt replaces the base instructions when not empty.
	SystemPrompt string `toml:"system_prompt"`
	// CompactThresholdPercent is the share of the model's context window,
	// in percent, that a request may fill before the older history is
	// summarized.
	CompactThresholdPercent int `toml:"compact_threshold_percent"`
	// CompactKeepTurns is how many recent turns a compaction keeps
	// verbatim.
	CompactKeepTurns int `toml:"compact_keep_turns"`
	// Prefer names delegated agents in the user's order of preference; the
	// first one a session offers runs an agent call that names none.
	Prefer []string `toml:"prefer"`
	// MaxConversations bounds the delegated-agent conversations a session
	// remembers; starting another forgets the least recently used idle one.
	MaxConversations int `toml:"max_conversations"`
	// ConversationIdleSeconds forgets a conversation left unused this long.
	ConversationIdleSeconds int `toml:"conversation_idle_seconds"`
	// MaxBackground bounds the background agent jobs a session runs at
	// once; 0 turns background jobs off.
	MaxBackground int `toml:"max_background"`
	// MaxDelegationDepth is the nesting depth below which the agent tool
	// is offered.
	MaxDelegationDepth int `toml:"max_delegation_depth"`
}

// AgentSettings is one [agents.<name>] table.
type AgentSettings struct {
	// UseFor is the user's one-line note on when to use the agent.
	UseFor string `toml:"use_for"`
	// Model and Effort are the selections to pass for that work (or
	// always, without UseFor).
	Model  string `toml:"model"`
	Effort string `toml:"effort"`
	// Permissions is "" (the agent's own settings) or "full" (its
	// full-autonomy switches).
	Permissions string `toml:"permissions"`
	// Transport is how the agent runs: "" or "auto" (its ACP server when
	// that resolves and Command is the built-in one, else one CLI process
	// per turn), "acp" (its ACP server only; the agent is not offered
	// without it) or "resume" (one CLI process per turn).
	Transport string `toml:"transport"`
	// Command replaces the agent's built-in executable: an absolute path
	// or a program name looked up like the built-in one. A custom command
	// keeps "auto" on one process per turn.
	Command string `toml:"command"`
}

// Transports of [agents.<name>] transport.
const (
	TransportAuto   = "auto"
	TransportACP    = "acp"
	TransportResume = "resume"
)

// EffectiveTransport returns Transport with "" read as "auto".
func (a AgentSettings) EffectiveTransport() string {
	if a.Transport == "" {
		return TransportAuto
	}
	return a.Transport
}

// Web search backends (web.search).
const (
	SearchOff      = ""
	SearchProvider = "provider"
	SearchSearXNG  = "searxng"
	SearchBrave    = "brave"
)

// WebConfig is the [web] table.
type WebConfig struct {
	// FetchMaxBytes bounds what web_fetch downloads of one page.
	FetchMaxBytes int64 `toml:"fetch_max_bytes"`
	// MaxRedirects bounds the redirects web_fetch follows.
	MaxRedirects int `toml:"max_redirects"`
	// FetchTimeoutSeconds bounds one fetch.
	FetchTimeoutSeconds int `toml:"fetch_timeout_seconds"`
	// AllowPrivateAddresses lifts the public-address policy of web_fetch.
	AllowPrivateAddresses bool `toml:"allow_private_addresses"`
	// AutoApproveDomains are HTTPS hosts web_fetch reads without approval.
	AutoApproveDomains []string `toml:"auto_approve_domains"`
	// AllowedPorts are the ports web_fetch connects to: "443" or
	// "8000-8999" (see Ports).
	AllowedPorts []string `toml:"allowed_ports"`
	// Search is the web search backend: "" (none), "provider", "searxng"
	// or "brave".
	Search string `toml:"search"`
	// SearXNGURL is the base URL of the SearXNG instance.
	SearXNGURL string `toml:"searxng_url"`
	// BraveAPIKeyEnv names the environment variable holding the Brave
	// Search API key.
	BraveAPIKeyEnv string `toml:"brave_api_key_env"`
	// MaxSearchResults bounds the results of one search.
	MaxSearchResults int `toml:"max_search_results"`
}

// FetchTimeout returns FetchTimeoutSeconds as a duration.
func (w WebConfig) FetchTimeout() time.Duration {
	return time.Duration(w.FetchTimeoutSeconds) * time.Second
}

// AgentTimeout returns AgentTimeoutSeconds as a duration.
func (t ToolsConfig) AgentTimeout() time.Duration {
	return time.Duration(t.AgentTimeoutSeconds) * time.Second
}

// ConversationIdle returns ConversationIdleSeconds as a duration.
func (a AgentConfig) ConversationIdle() time.Duration {
	return time.Duration(a.ConversationIdleSeconds) * time.Second
}

// DaemonUse says whether clients (the TUI, scv exec) run their sessions
// in the daemon.
type DaemonUse string

// The values of daemon.use.
const (
	// DaemonAuto attaches to the daemon when one runs, and otherwise
	// starts a server of the client's own.
	DaemonAuto DaemonUse = "auto"
	// DaemonAlways needs a running daemon: without one, the client says
	// how to start it and exits.
	DaemonAlways DaemonUse = "always"
	// DaemonNever always starts a server of the client's own.
	DaemonNever DaemonUse = "never"
)

// ChannelsConfig is the [channels] table's own keys (docs/channels.md):
// what every chat channel shares.
type ChannelsConfig struct {
	// Archive is the directory of the chat logs and kept files of owners'
	// direct chats, absolute; empty means ArchiveDirName in SCV_HOME.
	Archive string `toml:"archive"`
	// KeepDays is how long files chat users send stay in the chat media
	// directory before they are removed, unless kept (chat_keep).
	KeepDays int `toml:"keep_days"`
	// MaxWaiting bounds the messages waiting in one conversation of the
	// chat bridge; beyond it an event is left unacknowledged, and the
	// platform delivers it again later.
	MaxWaiting int `toml:"max_waiting"`
	// MediaMaxMB bounds one file a chat user sends that the bridge
	// downloads, in MiB; a larger one is "not saved".
	MediaMaxMB int `toml:"media_max_mb"`
	// Feishu are the Feishu or Lark apps scv-bridge serves, by account
	// name ([channels.feishu.<account>]); nil until the user file names
	// one.
	Feishu map[string]FeishuAccount `toml:"feishu"`
	// WeChat are the WeChat accounts bound by QR code, by account name
	// ([channels.wechat.<account>]); nil until the user file names one.
	WeChat map[string]WeChatAccount `toml:"wechat"`
}

// ArchiveDirName is the default chat archive, inside SCV_HOME.
const ArchiveDirName = "archive"

// ArchiveDir returns the chat archive: channels.archive, or
// $SCV_HOME/archive when it is not set.
func (c ChannelsConfig) ArchiveDir(home string) string {
	if c.Archive != "" {
		return filepath.Clean(c.Archive)
	}
	return filepath.Join(home, ArchiveDirName)
}

// DaemonConfig is the [daemon] table.
type DaemonConfig struct {
	// Use says whether clients run their sessions in the daemon (auto,
	// always, never); --daemon and --no-daemon override it.
	Use DaemonUse `toml:"use"`
	// SessionIdleSeconds is how long the daemon keeps a session open with
	// no client attached, no turn running or queued and no background job
	// counting, before it ends it (it stays stored and can be resumed).
	SessionIdleSeconds int `toml:"session_idle_seconds"`
	// RestartTimeoutSeconds bounds how long a planned restart waits for
	// running turns to finish before it restarts anyway.
	RestartTimeoutSeconds int `toml:"restart_timeout_seconds"`
}

// SessionIdle returns SessionIdleSeconds as a duration.
func (d DaemonConfig) SessionIdle() time.Duration {
	return time.Duration(d.SessionIdleSeconds) * time.Second
}

// RestartTimeout returns RestartTimeoutSeconds as a duration.
func (d DaemonConfig) RestartTimeout() time.Duration {
	return time.Duration(d.RestartTimeoutSeconds) * time.Second
}

// SkillsConfig is the [skills] table.
type SkillsConfig struct {
	// MaxSkills bounds the skills a session discovers.
	MaxSkills int `toml:"max_skills"`
	// MaxSkillBytes bounds what read_skill returns of a SKILL.md.
	MaxSkillBytes int64 `toml:"max_skill_bytes"`
}

// Defaults returns the configuration used when no file sets anything: the
// demo provider, no configured providers, and the default tool and agent
// options. Its Sources say "default" for every key.
func Defaults() *Config {
	c := &Config{
		Provider:  ProviderSelection{Active: DemoProvider},
		Providers: map[string]ProviderConfig{},
		Tools: ToolsConfig{
			ApprovalPolicy:        ApprovalOnRisk,
			OutputLimitBytes:      65536,
			CommandTimeoutSeconds: 600,
			MaxTimeoutSeconds:     14400,
			SpillMaxBytes:         64 << 20,
			MaxProcesses:          512,
			MemoryLimitMB:         4096,
			AgentTimeoutSeconds:   3600,
			LoginSnapshot:         true,
		},
		Agent: AgentConfig{
			MaxSteps:                32,
			SystemPrompt:            "",
			CompactThresholdPercent: 80,
			CompactKeepTurns:        2,
			Prefer:                  []string{},
			MaxConversations:        8,
			ConversationIdleSeconds: 86400,
			MaxBackground:           4,
			MaxDelegationDepth:      2,
		},
		Agents:     map[string]AgentSettings{},
		MCPServers: map[string]MCPServer{},
		Web: WebConfig{
			FetchMaxBytes:       2 << 20,
			MaxRedirects:        5,
			FetchTimeoutSeconds: 30,
			AutoApproveDomains:  []string{},
			AllowedPorts:        []string{"80", "443", "8000-8999"},
			BraveAPIKeyEnv:      "BRAVE_API_KEY",
			MaxSearchResults:    8,
		},
		Skills:   SkillsConfig{MaxSkills: 64, MaxSkillBytes: 64 << 10},
		Daemon:   DaemonConfig{Use: DaemonAuto, SessionIdleSeconds: 3600, RestartTimeoutSeconds: 600},
		Channels: ChannelsConfig{KeepDays: 30, MaxWaiting: 64, MediaMaxMB: 100},
	}
	c.Sources = map[string]Source{}
	for _, k := range c.Keys() {
		c.Sources[k] = Source{Kind: SourceDefault}
	}
	return c
}

// DefaultProvider returns the values a [providers.<name>] table starts from:
// every key it does not set keeps the value given here.
func DefaultProvider() ProviderConfig {
	return ProviderConfig{
		Kind:                     KindOpenAI,
		WireAPI:                  WireChat,
		BaseURL:                  DefaultOpenAIBaseURL,
		APIKeyEnv:                "OPENAI_API_KEY",
		Model:                    DefaultOpenAIModel,
		ContextMaxTokens:         128000,
		TimeoutSeconds:           120,
		StreamIdleTimeoutSeconds: 120,
		MaxRetries:               3,
	}
}

// Defaults of the OpenAI provider, also used by the implicit provider that
// OPENAI_API_KEY enables.
const (
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"
	DefaultOpenAIModel   = "gpt-4.1-mini"
)

// demoProviderConfig is what ActiveProvider reports for the demo.
func demoProviderConfig() ProviderConfig {
	p := DefaultProvider()
	p.Kind = KindDemo
	p.BaseURL = ""
	p.APIKeyEnv = ""
	p.Model = DemoProvider
	p.MaxRetries = 0
	return p
}

// ActiveProvider returns the active provider. For the demo it returns
// DemoProvider, the demo's settings (Kind KindDemo, Model "demo", default
// timeouts) and isDemo true. A Config from Load always names an existing
// provider; otherwise a missing one yields the zero ProviderConfig.
func (c *Config) ActiveProvider() (name string, p ProviderConfig, isDemo bool) {
	name = c.Provider.Active
	if name == "" || name == DemoProvider {
		return DemoProvider, demoProviderConfig(), true
	}
	return name, c.Providers[name], false
}

// SecretEnvNames returns the names of the environment variables that hold
// SCV's own secrets: the active provider's api_key_env first, then every
// other provider's, then web.brave_api_key_env; each once, empty names
// left out. The server removes them from the environment of the bash
// tool's commands.
func (c *Config) SecretEnvNames() []string {
	var out []string
	add := func(name string) {
		if name != "" && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if _, p, demo := c.ActiveProvider(); !demo {
		add(p.APIKeyEnv)
	}
	for _, n := range c.ProviderNames() {
		add(c.Providers[n].APIKeyEnv)
	}
	add(c.Web.BraveAPIKeyEnv)
	return out
}

// ProviderNames returns the names of the configured providers, sorted.
func (c *Config) ProviderNames() []string {
	return slices.Sorted(maps.Keys(c.Providers))
}

// Keys returns the dotted key of every value of the configuration, in
// declaration order, providers sorted by name (for example
// "provider.active", "providers.openai.model", "tools.max_timeout_seconds").
func (c *Config) Keys() []string {
	return leafKeys(c)
}

// Timeout returns TimeoutSeconds as a duration.
func (p ProviderConfig) Timeout() time.Duration {
	return time.Duration(p.TimeoutSeconds) * time.Second
}

// StreamIdleTimeout returns StreamIdleTimeoutSeconds as a duration.
func (p ProviderConfig) StreamIdleTimeout() time.Duration {
	return time.Duration(p.StreamIdleTimeoutSeconds) * time.Second
}

// CommandTimeout returns CommandTimeoutSeconds as a duration.
func (t ToolsConfig) CommandTimeout() time.Duration {
	return time.Duration(t.CommandTimeoutSeconds) * time.Second
}

// MaxTimeout returns MaxTimeoutSeconds as a duration.
func (t ToolsConfig) MaxTimeout() time.Duration {
	return time.Duration(t.MaxTimeoutSeconds) * time.Second
}
