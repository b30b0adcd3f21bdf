// Package signin reads and writes the sign-in state of delegated agents
// in their private homes ($SCV_HOME/agents/<name>): whether an agent whose
// sign-in SCV checks by reading a local file (grok, dsh, pi and the nested
// scv) is signed in, and the files `scv agents login|logout|import` write
// for it. Claude Code and Codex report sign-in only through their own CLI,
// which is too slow to run at every session start, so Check leaves them
// unchecked. Nothing here ever returns or prints a credential: summaries
// say whether one is stored, never its value.
package signin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"
	"go.yaml.in/yaml/v4"
)

// Agent names this package knows besides the adapters' (the nested SCV).
const SCV = "scv"

// maxFile bounds what is read of one credential or configuration file.
const maxFile = 4 << 20

// State is an agent's sign-in state.
type State struct {
	// Checked is set when the sign-in is read from a file; false for
	// agents whose own CLI reports it (claude, codex).
	Checked bool
	// SignedIn is set when a credential is stored (meaningful only when
	// Checked).
	SignedIn bool
	// Summary says what was found, such as `signed in (API key)`; never
	// a secret.
	Summary string
}

// Check returns the sign-in state of agent from its private home inside
// the instance directory home. env is the environment delegated runs
// inherit from (a Grok profile's env_key must name a variable set there
// that SCV does not scrub); nil means the process environment.
func Check(home, agent string, env paths.Env) State {
	if env == nil {
		env = paths.OSEnv()
	}
	switch agent {
	case adapters.Claude, adapters.Codex:
		return State{Summary: "reported by its own CLI: run scv agents status"}
	case adapters.Grok:
		return checkGrok(home, env)
	case adapters.DSH:
		return checkDSH(home)
	case adapters.Pi:
		return checkPi(home)
	case SCV:
		return checkSCV(home)
	}
	return State{Summary: fmt.Sprintf("unknown agent %q", agent)}
}

// Files of the private homes, relative to $SCV_HOME/agents/<name>.
var (
	grokAuthFile   = filepath.Join(".grok", "auth.json")
	grokConfigFile = filepath.Join(".grok", "config.toml")
	dshCredFile    = filepath.Join(".dsh", ".credentials.yaml")
	piAuthFile     = filepath.Join(".pi", "agent", "auth.json")
	piModelsFile   = filepath.Join(".pi", "agent", "models.json")
	piSettingsFile = filepath.Join(".pi", "agent", "settings.json")
	scvConfigFile  = paths.ConfigFileName
)

// agentFile returns file inside agent's private home.
func agentFile(home, agent, file string) string {
	return filepath.Join(paths.AgentsDir(home), agent, file)
}

// readSmall reads a regular file of at most maxFile bytes, never through
// a symbolic link and never blocking on a FIFO. A missing file is an error
// wrapping fs.ErrNotExist.
func readSmall(p string) ([]byte, error) {
	return statefile.ReadFile(filepath.Dir(p), filepath.Base(p), maxFile, statefile.NoLinks)
}

func signedOut(reason string) State { return State{Checked: true, Summary: reason} }

func unreadable(p string, err error) State {
	return State{Checked: true, Summary: fmt.Sprintf("signed out (cannot read %s: %v)", p, redactErr(err))}
}

// redactErr keeps parse errors from quoting file content (a key).
func redactErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return "not valid"
}

// --- grok

func checkGrok(home string, env paths.Env) State {
	authPath := agentFile(home, adapters.Grok, grokAuthFile)
	if data, err := readSmall(authPath); err == nil {
		if mode, ok := grokAuthSignIn(data); ok {
			if mode == "api_key" {
				return State{Checked: true, SignedIn: true, Summary: "signed in (API key, grok login)"}
			}
			return State{Checked: true, SignedIn: true, Summary: "signed in (grok login)"}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return unreadable(authPath, err)
	}
	cfgPath := agentFile(home, adapters.Grok, grokConfigFile)
	data, err := readSmall(cfgPath)
	if errors.Is(err, fs.ErrNotExist) {
		return signedOut("signed out: run scv agents login grok, or scv agents import grok")
	}
	if err != nil {
		return unreadable(cfgPath, err)
	}
	gc, err := parseGrokConfig(data)
	if err != nil {
		return signedOut(fmt.Sprintf("signed out (%s is not valid TOML; run scv agents import grok again)", cfgPath))
	}
	p, ok := gc.defaultProfile()
	if !ok {
		if gc.Default == "" {
			return signedOut("signed out: no grok login, and .grok/config.toml has no [models] default; run scv agents login grok")
		}
		return signedOut(fmt.Sprintf("signed out: [models] default %q names no [model.<key>] profile; run scv agents login grok", gc.Default))
	}
	switch {
	case p.APIKey != "":
		return State{Checked: true, SignedIn: true, Summary: fmt.Sprintf("signed in (API key in config, model %q)", p.ID)}
	case p.EnvKey != "" && adapters.Scrubbed(p.EnvKey):
		return signedOut(fmt.Sprintf("signed out: model %q reads its key from %s, which SCV removes from delegated agents; put api_key in that profile, or run scv agents login grok", p.ID, p.EnvKey))
	case p.EnvKey != "":
		if v, _ := env.LookupEnv(p.EnvKey); strings.TrimSpace(v) != "" {
			return State{Checked: true, SignedIn: true, Summary: fmt.Sprintf("signed in (API key in config, model %q)", p.ID)}
		}
		return signedOut(fmt.Sprintf("signed out: model %q reads its key from %s, which is not set in SCV's environment", p.ID, p.EnvKey))
	}
	return signedOut(fmt.Sprintf("signed out: model %q has no api_key or env_key, and there is no grok login; run scv agents login grok", p.ID))
}

// grokAuthSignIn reports whether Grok's auth.json holds a sign-in: an
// object with at least one non-empty entry. mode is the entry's auth_mode
// when it has one.
func grokAuthSignIn(data []byte) (mode string, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return "", false
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := bytes.TrimSpace(m[k])
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) || bytes.Equal(raw, []byte(`""`)) || bytes.Equal(raw, []byte("{}")) {
			continue
		}
		var e struct {
			AuthMode string `json:"auth_mode"`
		}
		_ = json.Unmarshal(raw, &e)
		return e.AuthMode, true
	}
	return "", false
}

// grokProfile is one [model.<key>] table of Grok's config.toml.
type grokProfile struct {
	Key    string
	ID     string // its model id, or the key when it sets none
	APIKey string
	EnvKey string
}

// grokConfig is what SCV reads of Grok's config.toml.
type grokConfig struct {
	Default  string
	Profiles []grokProfile
}

func parseGrokConfig(data []byte) (grokConfig, error) {
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		return grokConfig{}, err
	}
	var gc grokConfig
	models, _ := raw["models"].(map[string]any)
	gc.Default, _ = models["default"].(string)
	add := func(tables map[string]any) {
		for k, v := range tables {
			t, ok := v.(map[string]any)
			if !ok {
				continue
			}
			p := grokProfile{Key: k}
			p.ID, _ = t["model"].(string)
			if p.ID == "" {
				p.ID = k
			}
			p.APIKey, _ = t["api_key"].(string)
			p.EnvKey, _ = t["env_key"].(string)
			gc.Profiles = append(gc.Profiles, p)
		}
	}
	if m, ok := raw["model"].(map[string]any); ok {
		add(m)
	}
	if models != nil {
		add(models) // profiles written as [models.<key>]
	}
	slices.SortFunc(gc.Profiles, func(a, b grokProfile) int { return strings.Compare(a.Key, b.Key) })
	return gc, nil
}

// defaultProfile returns the profile [models] default names, by catalog
// key first, then by model id.
func (gc grokConfig) defaultProfile() (grokProfile, bool) {
	if gc.Default == "" {
		return grokProfile{}, false
	}
	for _, p := range gc.Profiles {
		if p.Key == gc.Default {
			return p, true
		}
	}
	for _, p := range gc.Profiles {
		if p.ID == gc.Default {
			return p, true
		}
	}
	return grokProfile{}, false
}

// --- dsh

func checkDSH(home string) State {
	p := agentFile(home, adapters.DSH, dshCredFile)
	data, err := readSmall(p)
	if errors.Is(err, fs.ErrNotExist) {
		return signedOut("signed out: run scv agents login dsh")
	}
	if err != nil {
		return unreadable(p, err)
	}
	var c struct {
		Refs map[string]any `yaml:"refs"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		return signedOut(fmt.Sprintf("signed out (%s is not valid YAML; run scv agents login dsh again)", p))
	}
	if k, _ := c.Refs[dshKeyRef].(string); strings.TrimSpace(k) != "" {
		return State{Checked: true, SignedIn: true, Summary: "signed in (API key)"}
	}
	return signedOut("signed out: no " + dshKeyRef + " in .dsh/.credentials.yaml; run scv agents login dsh")
}

// dshKeyRef is the credential reference DeepSeek Harness reads its key
// from.
const dshKeyRef = "DEEPSEEK_API_KEY"

// --- pi

// piStoredSignIns returns the providers with a stored credential in pi's
// auth.json, sorted.
func piStoredSignIns(data []byte) ([]string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	var out []string
	for k, raw := range m {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if strings.TrimSpace(s) != "" {
				out = append(out, k)
			}
			continue
		}
		var e map[string]any
		if json.Unmarshal(raw, &e) != nil {
			continue
		}
		for _, f := range []string{"key", "access", "refresh"} {
			if v, _ := e[f].(string); v != "" {
				out = append(out, k)
				break
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func checkPi(home string) State {
	authPath := agentFile(home, adapters.Pi, piAuthFile)
	data, err := readSmall(authPath)
	if errors.Is(err, fs.ErrNotExist) {
		return signedOut("signed out: run scv agents login pi, or scv agents import pi --from-scv-provider")
	}
	if err != nil {
		return unreadable(authPath, err)
	}
	signIns, err := piStoredSignIns(data)
	if err != nil {
		return signedOut(fmt.Sprintf("signed out (%s is not valid JSON; run scv agents login pi again)", authPath))
	}
	if len(signIns) == 0 {
		return signedOut("signed out: no provider sign-in in .pi/agent/auth.json; run scv agents login pi")
	}
	return State{Checked: true, SignedIn: true, Summary: "signed in (" + piDescribe(home, signIns) + ")"}
}

// piDescribe says pi's default provider, its API, endpoint host and model,
// and which providers have stored sign-ins.
func piDescribe(home string, signIns []string) string {
	var parts []string
	settings, _ := readJSONObject(agentFile(home, adapters.Pi, piSettingsFile))
	prov, _ := settings["defaultProvider"].(string)
	model, _ := settings["defaultModel"].(string)
	if prov != "" {
		d := "default provider " + prov
		models, _ := readJSONObject(agentFile(home, adapters.Pi, piModelsFile))
		providers, _ := models["providers"].(map[string]any)
		if p, ok := providers[prov].(map[string]any); ok {
			if api, _ := p["api"].(string); api != "" {
				d += ", " + api + " API"
			}
			if base, _ := p["baseUrl"].(string); base != "" {
				d += " at " + hostOf(base)
			}
		}
		if model != "" {
			d += fmt.Sprintf(", model %q", model)
		}
		parts = append(parts, d)
	}
	parts = append(parts, "sign-ins: "+strings.Join(signIns, ", "))
	return strings.Join(parts, "; ")
}

// hostOf returns the host (and port) of a URL, never its path, query or
// user information.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "an invalid URL"
	}
	return u.Host
}

// readJSONObject reads a JSON object file; a missing file is an empty
// object and a nil error.
func readJSONObject(p string) (map[string]any, error) {
	data, err := readSmall(p)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if len(bytes.TrimSpace(data)) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %w", p, err)
	}
	return m, nil
}

// --- scv

func checkSCV(home string) State {
	p := agentFile(home, SCV, scvConfigFile)
	data, err := readSmall(p)
	if errors.Is(err, fs.ErrNotExist) {
		return signedOut("signed out: run scv agents import scv")
	}
	if err != nil {
		return unreadable(p, err)
	}
	var c struct {
		Provider struct {
			Active string `toml:"active"`
		} `toml:"provider"`
		Providers map[string]struct {
			Model   string `toml:"model"`
			BaseURL string `toml:"base_url"`
		} `toml:"providers"`
	}
	if err := toml.Unmarshal(data, &c); err != nil {
		return signedOut(fmt.Sprintf("signed out (%s is not valid TOML; run scv agents import scv again)", p))
	}
	prov, ok := c.Providers[c.Provider.Active]
	if c.Provider.Active == "" || !ok {
		return signedOut("signed out: " + p + " selects no configured provider; run scv agents import scv")
	}
	s := fmt.Sprintf("signed in (provider %s", c.Provider.Active)
	if prov.Model != "" {
		s += fmt.Sprintf(", model %q", prov.Model)
	}
	if prov.BaseURL != "" {
		s += " at " + hostOf(prov.BaseURL)
	}
	return State{Checked: true, SignedIn: true, Summary: s + ")"}
}
