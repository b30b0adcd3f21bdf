package config

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/scv-cli/scv/shared/paths"
)

// MCPServer is one [mcp_servers.<name>] table: a Model Context Protocol
// server whose tools sessions offer as mcp__<name>__<tool>. A stdio server
// has Command (and Args, Env, Cwd); a Streamable HTTP server has URL (and
// Headers). Only the user file may name one: a project file cannot start
// programs. Values of Env and Headers are never printed.
type MCPServer struct {
	// Command is the program of a stdio server, looked up on PATH.
	Command string   `toml:"command"`
	Args    []string `toml:"args"`
	// Env are the variables the server gets on top of the child
	// environment's allow-list. A value "$NAME" or "${NAME}" is the
	// server's variable NAME. Never printed.
	Env map[string]string `toml:"env" json:"-"`
	// Cwd is the server's working directory (absolute, or relative to the
	// workspace); empty: the workspace.
	Cwd string `toml:"cwd"`
	// URL is the endpoint of a Streamable HTTP server.
	URL string `toml:"url"`
	// Headers are sent with every HTTP request; values may name
	// variables like Env's. Never printed.
	Headers map[string]string `toml:"headers" json:"-"`
	// Enabled false keeps the server configured but not started.
	Enabled bool `toml:"enabled"`
	// StartupTimeoutSeconds bounds the start and the initialize handshake.
	StartupTimeoutSeconds int `toml:"startup_timeout_seconds"`
	// ToolTimeoutSeconds bounds one tool call.
	ToolTimeoutSeconds int `toml:"tool_timeout_seconds"`
	// EnabledTools, when not empty, are the only tools offered;
	// DisabledTools are never offered.
	EnabledTools  []string `toml:"enabled_tools"`
	DisabledTools []string `toml:"disabled_tools"`
}

// DefaultMCPServer is what a new [mcp_servers.<name>] starts from.
func DefaultMCPServer() MCPServer {
	return MCPServer{Enabled: true, StartupTimeoutSeconds: 10, ToolTimeoutSeconds: 60, Args: []string{}}
}

// StartupTimeout is StartupTimeoutSeconds as a duration.
func (s MCPServer) StartupTimeout() time.Duration {
	return time.Duration(s.StartupTimeoutSeconds) * time.Second
}

// ToolTimeout is ToolTimeoutSeconds as a duration.
func (s MCPServer) ToolTimeout() time.Duration {
	return time.Duration(s.ToolTimeoutSeconds) * time.Second
}

// Stdio reports whether the server is started as a child process.
func (s MCPServer) Stdio() bool { return s.Command != "" }

// ToolAllowed reports whether the server's tool named tool is offered.
func (s MCPServer) ToolAllowed(tool string) bool {
	if len(s.EnabledTools) > 0 && !slices.Contains(s.EnabledTools, tool) {
		return false
	}
	return !slices.Contains(s.DisabledTools, tool)
}

// envRef matches a value that names a variable: $NAME or ${NAME}.
var envRef = regexp.MustCompile(`^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$`)

// ResolveValue returns v, or the value of the variable it names ($NAME,
// ${NAME}) in env. A named variable that is unset is an error naming the
// variable, never the value.
func ResolveValue(v string, env paths.Env) (string, error) {
	m := envRef.FindStringSubmatch(v)
	if m == nil {
		return v, nil
	}
	name := m[1] + m[2]
	val, ok := env.LookupEnv(name)
	if !ok {
		return "", fmt.Errorf("the environment variable %s is not set", name)
	}
	return val, nil
}

// mcpNameRE is what a server name may be: the tool names mcp__<server>__
// <tool> must stay within the providers' ^[a-zA-Z0-9_-]{1,64}$, and "__"
// separates the parts.
var mcpNameRE = regexp.MustCompile(`^[a-zA-Z0-9-]+(_[a-zA-Z0-9-]+)*$`)

// maxMCPName bounds a server's name, leaving room for its tools' names.
const maxMCPName = 24

// validateMCP checks every [mcp_servers.<name>] table.
func (v *validator) validateMCP() {
	for _, name := range slices.Sorted(maps.Keys(v.c.MCPServers)) {
		s := v.c.MCPServers[name]
		k := func(field string) string { return joinKey([]string{"mcp_servers", name, field}) }
		table := joinKey([]string{"mcp_servers", name})
		if len(name) > maxMCPName || !mcpNameRE.MatchString(name) {
			v.fail(table, "names the server %q; use 1-%d letters, digits, '-' or single '_' (its tools are called mcp__<server>__<tool>)", name, maxMCPName)
		}
		switch {
		case s.Command == "" && s.URL == "":
			v.fail(table, "has neither command (a stdio server) nor url (a Streamable HTTP server); set one")
		case s.Command != "" && s.URL != "":
			v.fail(table, "has both command and url; a server is either a program (command) or an HTTP endpoint (url)")
		}
		if s.Command != "" && strings.TrimSpace(s.Command) != s.Command {
			v.fail(k("command"), "has leading or trailing spaces; give the program alone and its arguments in args")
		}
		if s.URL != "" {
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				v.fail(k("url"), "is %q, which is not an http(s) URL such as \"https://mcp.example.com/mcp\"", s.URL)
			}
			if len(s.Args) > 0 || len(s.Env) > 0 || s.Cwd != "" {
				v.fail(table, "sets args, env or cwd, which only a stdio server (command) takes")
			}
		}
		if s.Command != "" && len(s.Headers) > 0 {
			v.fail(k("headers"), "is set, but only an HTTP server (url) takes headers")
		}
		for _, e := range slices.Sorted(maps.Keys(s.Env)) {
			if !validEnvName(e) {
				v.fail(k("env"), "has the variable name %q, which is not an environment variable name", e)
			} else if strings.ContainsRune(s.Env[e], 0) {
				v.fail(k("env"), "has a value for %s that contains NUL; remove it", e)
			}
		}
		for _, h := range slices.Sorted(maps.Keys(s.Headers)) {
			if !validHeaderName(h) {
				v.fail(k("headers"), "has the header name %q, which is not a valid HTTP header name", h)
			} else if strings.ContainsAny(s.Headers[h], "\r\n\x00") {
				v.fail(k("headers"), "has a value for header %q that contains a line break or NUL; remove it", h)
			}
		}
		v.intRange(k("startup_timeout_seconds"), int64(s.StartupTimeoutSeconds), 1, 600, "a number of seconds")
		v.intRange(k("tool_timeout_seconds"), int64(s.ToolTimeoutSeconds), 1, maxSeconds, "a number of seconds")
		for _, t := range s.EnabledTools {
			if slices.Contains(s.DisabledTools, t) {
				v.fail(k("disabled_tools"), "names %q, which enabled_tools also names; list a tool in one of them", t)
			}
		}
	}
}

// String shows s with the values of env and headers redacted (their names
// show), so that a configuration printed with %v reveals no secret.
func (s MCPServer) String() string {
	redact := func(m map[string]string) string {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, k+"="+Redacted)
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return fmt.Sprintf("{command=%q args=%q env=%s cwd=%q url=%q headers=%s enabled=%t startup_timeout_seconds=%d tool_timeout_seconds=%d enabled_tools=%q disabled_tools=%q}",
		s.Command, s.Args, redact(s.Env), s.Cwd, s.URL, redact(s.Headers), s.Enabled, s.StartupTimeoutSeconds, s.ToolTimeoutSeconds, s.EnabledTools, s.DisabledTools)
}

// GoString is String for %#v.
func (s MCPServer) GoString() string { return "config.MCPServer" + s.String() }
