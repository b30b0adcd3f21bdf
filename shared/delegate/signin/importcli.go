package signin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/paths"
)

// DefaultSourceDir returns where an import of agent reads the user's own
// setup by default: $GROK_HOME or ~/.grok for grok, $CODEX_HOME or
// ~/.codex for codex.
func DefaultSourceDir(agent string, env paths.Env) (string, error) {
	if env == nil {
		env = paths.OSEnv()
	}
	var envVar, dir string
	switch agent {
	case adapters.Grok:
		envVar, dir = "GROK_HOME", ".grok"
	case adapters.Codex:
		envVar, dir = "CODEX_HOME", ".codex"
	default:
		return "", fmt.Errorf("%s has no setup to import from a directory", agent)
	}
	if v := env.Getenv(envVar); v != "" {
		return v, nil
	}
	h := env.Getenv("HOME")
	if h == "" || !filepath.IsAbs(h) {
		return "", fmt.Errorf("cannot find your own %s setup: HOME is not set; pass --from DIR", agent)
	}
	return filepath.Join(h, dir), nil
}

// GrokProfile describes one profile of an imported Grok config, without
// its key.
type GrokProfile struct {
	Key, Model string
	// HasAPIKey is set when the profile stores api_key.
	HasAPIKey bool
	// EnvKey is the variable the profile reads its key from; EnvKeyScrubbed
	// says SCV removes it from delegated agents.
	EnvKey         string
	EnvKeyScrubbed bool
}

// GrokImport is what ImportGrok copied.
type GrokImport struct {
	// Default is [models] default.
	Default  string
	Profiles []GrokProfile
	// Kept are top-level tables only SCV's copy had, which were kept.
	Kept []string
}

// ImportGrok copies from/config.toml into Grok's private
// .grok/config.toml, merged by top-level table: the source's tables win,
// and tables only SCV's copy has (such as Grok's [marketplace] state) are
// kept. The merged file is validated before anything is written; it is
// written atomically with mode 0600. auth.json is never copied. The
// import is recorded by digest.
func ImportGrok(home, from string) (GrokImport, error) {
	src := filepath.Join(from, "config.toml")
	srcData, err := readSmall(src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return GrokImport{}, fmt.Errorf("there is no Grok config at %s; pass --from DIR to import another one", src)
		}
		return GrokImport{}, fmt.Errorf("cannot read %s: %v", src, redactErr(err))
	}
	var srcDoc map[string]any
	if err := toml.Unmarshal(srcData, &srcDoc); err != nil {
		return GrokImport{}, fmt.Errorf("%s is not valid TOML (%s); fix it and import again", src, tomlPosition(err))
	}
	dest := agentFile(home, adapters.Grok, grokConfigFile)
	doc := map[string]any{}
	if data, err := readSmall(dest); err == nil {
		if err := toml.Unmarshal(data, &doc); err != nil {
			return GrokImport{}, fmt.Errorf("SCV's copy %s is not valid TOML, so nothing was written; remove it and import again", dest)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return GrokImport{}, fmt.Errorf("cannot read %s: %v", dest, redactErr(err))
	}
	var res GrokImport
	for k := range doc {
		if _, ok := srcDoc[k]; !ok {
			res.Kept = append(res.Kept, k)
		}
	}
	sort.Strings(res.Kept)
	for k, v := range srcDoc {
		doc[k] = v
	}
	merged, err := toml.Marshal(doc)
	if err != nil {
		return GrokImport{}, fmt.Errorf("cannot merge %s into SCV's copy: %w", src, err)
	}
	gc, err := parseGrokConfig(merged)
	if err != nil {
		return GrokImport{}, fmt.Errorf("the merged Grok config does not parse back (%s); nothing was written", tomlPosition(err))
	}
	res.Default = gc.Default
	for _, p := range gc.Profiles {
		res.Profiles = append(res.Profiles, GrokProfile{Key: p.Key, Model: p.ID, HasAPIKey: p.APIKey != "",
			EnvKey: p.EnvKey, EnvKeyScrubbed: p.EnvKey != "" && adapters.Scrubbed(p.EnvKey)})
	}
	if err := writePrivate(home, dest, merged); err != nil {
		return GrokImport{}, err
	}
	return res, writeImportRecord(home, ImportRecord{Agent: adapters.Grok, Command: "scv agents import grok --from " + from,
		Source: from, Files: []string{"config.toml"}, Digest: digest(srcData)})
}

// tomlPosition says where a TOML error is without quoting the line.
func tomlPosition(err error) string {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Sprintf("line %d, column %d", row, col)
	}
	return "not valid"
}

// CodexImport is what ImportCodex copied.
type CodexImport struct {
	Model, Provider, ApprovalPolicy, SandboxMode, ReasoningEffort string
	// AuthCopied is set when auth.json (an API key) was copied;
	// AuthSkipped says why it was not, when the source had one.
	AuthCopied  bool
	AuthSkipped string
	// EnvKeys are providers' env_key variables ("provider: VAR"), every
	// one flagged: SCV removes key variables from delegated agents, and
	// the user service does not load the shell profile, so the copy may
	// not see them.
	EnvKeys []string
}

// ImportCodex copies an existing Codex setup from the directory from:
// config.toml whole, and auth.json only when it holds an API key (a
// ChatGPT sign-in is never copied: its rotating refresh token must stay
// in one home). Both are validated before either is written; each is
// written atomically with mode 0600 into the private CODEX_HOME. The
// import is recorded by digest.
func ImportCodex(home, from string) (CodexImport, error) {
	cfgSrc := filepath.Join(from, "config.toml")
	cfgData, err := readSmall(cfgSrc)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return CodexImport{}, fmt.Errorf("there is no Codex config at %s; pass --from DIR to import another one", cfgSrc)
		}
		return CodexImport{}, fmt.Errorf("cannot read %s: %v", cfgSrc, redactErr(err))
	}
	var cfg struct {
		Model           string `toml:"model"`
		Provider        string `toml:"model_provider"`
		ApprovalPolicy  string `toml:"approval_policy"`
		SandboxMode     string `toml:"sandbox_mode"`
		ReasoningEffort string `toml:"model_reasoning_effort"`
		Providers       map[string]struct {
			EnvKey string `toml:"env_key"`
		} `toml:"model_providers"`
	}
	if err := toml.Unmarshal(cfgData, &cfg); err != nil {
		return CodexImport{}, fmt.Errorf("%s is not a valid Codex config (%s); fix it and import again", cfgSrc, tomlPosition(err))
	}
	res := CodexImport{Model: cfg.Model, Provider: cfg.Provider, ApprovalPolicy: cfg.ApprovalPolicy,
		SandboxMode: cfg.SandboxMode, ReasoningEffort: cfg.ReasoningEffort}
	for name, p := range cfg.Providers {
		if p.EnvKey != "" {
			res.EnvKeys = append(res.EnvKeys, name+": "+p.EnvKey)
		}
	}
	sort.Strings(res.EnvKeys)

	authSrc := filepath.Join(from, "auth.json")
	authData, err := readSmall(authSrc)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return CodexImport{}, fmt.Errorf("cannot read %s: %v", authSrc, redactErr(err))
	default:
		kind, err := codexAuthKind(authData)
		if err != nil {
			return CodexImport{}, fmt.Errorf("%s is not valid JSON; fix or remove it and import again", authSrc)
		}
		switch kind {
		case "apikey":
			res.AuthCopied = true
		case "chatgpt":
			res.AuthSkipped = "it holds a ChatGPT sign-in, which is never copied (its refresh token must stay in one home); run scv agents login codex to sign the delegated Codex in"
		default:
			res.AuthSkipped = "it holds no API key"
		}
	}
	codexHome := filepath.Join(paths.AgentsDir(home), adapters.Codex)
	if err := writePrivate(home, filepath.Join(codexHome, "config.toml"), cfgData); err != nil {
		return CodexImport{}, err
	}
	files, parts := []string{"config.toml"}, [][]byte{cfgData}
	if res.AuthCopied {
		if err := writePrivate(home, filepath.Join(codexHome, "auth.json"), authData); err != nil {
			return CodexImport{}, err
		}
		files, parts = append(files, "auth.json"), append(parts, authData)
	}
	return res, writeImportRecord(home, ImportRecord{Agent: adapters.Codex, Command: "scv agents import codex --from " + from,
		Source: from, Files: files, Digest: digest(parts...)})
}

// codexAuthKind classifies Codex's auth.json: "chatgpt" for a ChatGPT
// sign-in (tokens, or auth_mode chatgpt), "apikey" for an API key only,
// "" for neither.
func codexAuthKind(data []byte) (string, error) {
	var a struct {
		AuthMode string          `json:"auth_mode"`
		APIKey   *string         `json:"OPENAI_API_KEY"`
		Tokens   json.RawMessage `json:"tokens"`
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return "", err
	}
	tokens := bytes.TrimSpace(a.Tokens)
	if strings.EqualFold(a.AuthMode, "chatgpt") || (len(tokens) > 0 && !bytes.Equal(tokens, []byte("null"))) {
		return "chatgpt", nil
	}
	if a.APIKey != nil && strings.TrimSpace(*a.APIKey) != "" {
		return "apikey", nil
	}
	return "", nil
}
