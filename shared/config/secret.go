package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/scv-cli/scv/shared/paths"
)

// Redacted replaces secret values wherever a configuration is printed.
const Redacted = "[redacted]"

// ResolveAPIKey returns the API key of p: APIKey when set, otherwise the
// value of the environment variable named by APIKeyEnv (surrounding spaces
// removed). A provider with neither needs no key: it returns "", nil. When
// the variable is unset or empty the error wraps ErrAPIKeyMissing and names
// the variable; no error ever contains a key.
func ResolveAPIKey(p ProviderConfig, env paths.Env) (string, error) {
	if p.APIKey != "" {
		return p.APIKey, nil
	}
	if p.APIKeyEnv == "" {
		return "", nil
	}
	return secretFromEnv(env, p.APIKeyEnv, "api_key_env", "<your key>, or set api_key in $SCV_HOME/config.toml")
}

// secretFromEnv returns the value of the variable name (surrounding spaces
// removed), or an error wrapping ErrAPIKeyMissing that names the variable
// and the key that named it (key) and says what to export (hint).
func secretFromEnv(env paths.Env, name, key, hint string) (string, error) {
	if env == nil {
		env = paths.OSEnv()
	}
	v, _ := env.LookupEnv(name)
	if v = strings.TrimSpace(v); v == "" {
		return "", fmt.Errorf("the environment variable %s (%s) is not set: export %s=%s: %w", name, key, name, hint, ErrAPIKeyMissing)
	}
	return v, nil
}

// String describes p without its secrets: api_key and header values are
// shown as [redacted].
func (p ProviderConfig) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{kind=%s wire_api=%s base_url=%s model=%s", p.Kind, p.WireAPI, p.BaseURL, p.Model)
	if p.APIKey != "" {
		b.WriteString(" api_key=" + Redacted)
	}
	if p.APIKeyEnv != "" {
		b.WriteString(" api_key_env=" + p.APIKeyEnv)
	}
	fmt.Fprintf(&b, " context_max_tokens=%d timeout_seconds=%d stream_idle_timeout_seconds=%d max_retries=%d",
		p.ContextMaxTokens, p.TimeoutSeconds, p.StreamIdleTimeoutSeconds, p.MaxRetries)
	if len(p.Headers) > 0 {
		b.WriteString(" headers={")
		for i, h := range slices.Sorted(maps.Keys(p.Headers)) {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(h + "=" + Redacted)
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.String()
}

// GoString is String for %#v.
func (p ProviderConfig) GoString() string { return "config.ProviderConfig" + p.String() }

// LogValue implements slog.LogValuer: api_key and header values are
// redacted.
func (p ProviderConfig) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("kind", string(p.Kind)),
		slog.String("wire_api", string(p.WireAPI)),
		slog.String("base_url", p.BaseURL),
		slog.String("model", p.Model),
	}
	if p.APIKey != "" {
		attrs = append(attrs, slog.String("api_key", Redacted))
	}
	if p.APIKeyEnv != "" {
		attrs = append(attrs, slog.String("api_key_env", p.APIKeyEnv))
	}
	attrs = append(attrs,
		slog.Int64("context_max_tokens", p.ContextMaxTokens),
		slog.Int("timeout_seconds", p.TimeoutSeconds),
		slog.Int("stream_idle_timeout_seconds", p.StreamIdleTimeoutSeconds),
		slog.Int("max_retries", p.MaxRetries),
	)
	if len(p.Headers) > 0 {
		hs := make([]slog.Attr, 0, len(p.Headers))
		for _, h := range slices.Sorted(maps.Keys(p.Headers)) {
			hs = append(hs, slog.String(h, Redacted))
		}
		attrs = append(attrs, slog.Attr{Key: "headers", Value: slog.GroupValue(hs...)})
	}
	return slog.GroupValue(attrs...)
}

// MarshalJSON encodes p without its secrets: api_key is left out and header
// values are redacted, so that a configuration dumped as JSON reveals none.
func (p ProviderConfig) MarshalJSON() ([]byte, error) {
	type plain ProviderConfig // no methods: no recursion; APIKey is json:"-"
	r := plain(p)
	if len(r.Headers) > 0 {
		h := make(map[string]string, len(r.Headers))
		for k := range r.Headers {
			h[k] = Redacted
		}
		r.Headers = h
	}
	return json.Marshal(r)
}

// LogValue implements slog.LogValuer for the whole configuration, with
// every provider redacted as by ProviderConfig.LogValue.
func (c *Config) LogValue() slog.Value {
	ps := make([]slog.Attr, 0, len(c.Providers))
	for _, name := range c.ProviderNames() {
		ps = append(ps, slog.Any(name, c.Providers[name]))
	}
	return slog.GroupValue(
		slog.String("provider.active", c.Provider.Active),
		slog.Attr{Key: "providers", Value: slog.GroupValue(ps...)},
		slog.Any("tools", c.Tools),
		slog.Any("agent", c.Agent),
	)
}
