package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/scv-cli/scv/shared/paths"
)

// Redaction words of Entries.
const (
	Set    = "set"
	NotSet = "not set"
)

// Entry is one key of a configuration with its value and its source, ready
// to be shown to a person: secrets are never in it.
type Entry struct {
	// Key is the dotted key, such as "tools.approval_policy".
	Key string
	// Value is the key's value, except for secrets: an api_key is Set or
	// NotSet, and every header value is Set (a map of header name to Set).
	Value any
	// Redacted is true when Value stands for a secret.
	Redacted bool
	// EnvSet, for an api_key_env or web.brave_api_key_env naming a
	// variable, tells whether that variable is set (to something other than
	// spaces) in the environment.
	EnvSet *bool
	// Source is where the value came from.
	Source Source
}

// Entries returns every key of c (in the order of Keys) with its value and
// source, secrets redacted. env is consulted only for whether the variables
// named by api_key_env are set; nil means paths.OSEnv().
func (c *Config) Entries(env paths.Env) []Entry {
	if env == nil {
		env = paths.OSEnv()
	}
	var out []Entry
	walkLeaves(configSchema(), reflect.ValueOf(c).Elem(), nil, func(path []string, v reflect.Value) {
		key := joinKey(path)
		e := Entry{Key: key, Value: v.Interface(), Source: c.Sources[key]}
		last := path[len(path)-1]
		switch {
		case len(path) == 3 && path[0] == "providers" && last == "api_key",
			len(path) == 4 && path[0] == "channels" && last == "app_secret":
			e.redactSecret(v)
		case len(path) == 3 && path[0] == "providers" && last == "headers",
			// Values may be secrets or name them: only the names show.
			len(path) == 3 && path[0] == "mcp_servers" && (last == "env" || last == "headers"):
			e.redactValues(v)
		case len(path) == 3 && path[0] == "providers" && last == "api_key_env",
			len(path) == 4 && path[0] == "channels" && last == "app_secret_env",
			key == "web.brave_api_key_env":
			e.markEnvSet(env, v.String())
		}
		out = append(out, e)
	})
	return out
}

// redactSecret shows only whether the secret v is set.
func (e *Entry) redactSecret(v reflect.Value) {
	e.Redacted = true
	e.Value = NotSet
	if v.String() != "" {
		e.Value = Set
	}
}

// redactValues shows the names of the table v, not its values.
func (e *Entry) redactValues(v reflect.Value) {
	e.Redacted = true
	h := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(v.Interface().(map[string]string))) {
		h[name] = Set
	}
	e.Value = h
}

// markEnvSet records whether the variable name (when not empty) is set.
func (e *Entry) markEnvSet(env paths.Env, name string) {
	if name == "" {
		return
	}
	val, _ := env.LookupEnv(name)
	set := strings.TrimSpace(val) != ""
	e.EnvSet = &set
}
