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
		if len(path) == 3 && path[0] == "providers" {
			switch path[2] {
			case "api_key":
				e.Redacted = true
				e.Value = NotSet
				if v.String() != "" {
					e.Value = Set
				}
			case "headers":
				e.Redacted = true
				h := map[string]string{}
				for _, name := range slices.Sorted(maps.Keys(v.Interface().(map[string]string))) {
					h[name] = Set
				}
				e.Value = h
			case "api_key_env":
				if name := v.String(); name != "" {
					val, _ := env.LookupEnv(name)
					set := strings.TrimSpace(val) != ""
					e.EnvSet = &set
				}
			}
		}
		if len(path) == 3 && path[0] == "mcp_servers" && (path[2] == "env" || path[2] == "headers") {
			// Values may be secrets or name them: only the names show.
			e.Redacted = true
			h := map[string]string{}
			for _, name := range slices.Sorted(maps.Keys(v.Interface().(map[string]string))) {
				h[name] = Set
			}
			e.Value = h
		}
		if len(path) == 4 && path[0] == "channels" {
			switch path[3] {
			case "app_secret":
				e.Redacted = true
				e.Value = NotSet
				if v.String() != "" {
					e.Value = Set
				}
			case "app_secret_env":
				if name := v.String(); name != "" {
					val, _ := env.LookupEnv(name)
					set := strings.TrimSpace(val) != ""
					e.EnvSet = &set
				}
			}
		}
		if key == "web.brave_api_key_env" {
			if name := v.String(); name != "" {
				val, _ := env.LookupEnv(name)
				set := strings.TrimSpace(val) != ""
				e.EnvSet = &set
			}
		}
		out = append(out, e)
	})
	return out
}
