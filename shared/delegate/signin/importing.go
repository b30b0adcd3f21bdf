package signin

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/paths"
)

// ImportsDirName is the directory of the import records in the state
// directory.
const ImportsDirName = "imports"

// ImportRecord is $SCV_HOME/state/imports/<agent>.json: what an import
// copied from where, as a digest, never the content.
type ImportRecord struct {
	Agent string `json:"agent"`
	// Command re-runs the import.
	Command string `json:"command"`
	// Source says where the copy came from: a directory, or
	// "scv-provider:<name>" for SCV's own active provider.
	Source string `json:"source"`
	// Files are the source files copied, relative to Source.
	Files []string `json:"files,omitempty"`
	// Digest is "sha256:<hex>" of what was copied.
	Digest       string `json:"digest"`
	ImportedUnix int64  `json:"imported_unix"`
}

// ImportRecordPath returns the import record of agent.
func ImportRecordPath(home, agent string) string {
	return filepath.Join(paths.StateDir(home), ImportsDirName, agent+".json")
}

func writeImportRecord(home string, r ImportRecord) error {
	r.ImportedUnix = time.Now().Unix()
	data, err := marshalJSON(r)
	if err != nil {
		return err
	}
	p := ImportRecordPath(home, r.Agent)
	if err := paths.EnsureDir(filepath.Dir(p)); err != nil {
		return err
	}
	if err := atomicWrite(p, data); err != nil {
		return fmt.Errorf("cannot record the import of %s: %w", r.Agent, err)
	}
	return nil
}

// RemoveImportRecord forgets agent's import (logout).
func RemoveImportRecord(home, agent string) error {
	_, err := removeFile(ImportRecordPath(home, agent))
	return err
}

// digest hashes parts, each length-prefixed so that boundaries count.
func digest(parts ...[]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ImportState says whether an agent's imported setup matches its source.
type ImportState struct {
	// Imported is set when an import was recorded.
	Imported bool
	// UpToDate is set when the source still has the digest recorded.
	UpToDate bool
	// Summary is `up to date` or what changed and the command to run.
	Summary string
}

// CheckImport compares agent's import source with the digest its last
// import recorded.
func CheckImport(home, agent string, env paths.Env) ImportState {
	if env == nil {
		env = paths.OSEnv()
	}
	data, err := readSmall(ImportRecordPath(home, agent))
	if errors.Is(err, fs.ErrNotExist) {
		return ImportState{Summary: "not imported"}
	}
	var r ImportRecord
	if err == nil {
		err = json.Unmarshal(data, &r)
	}
	if err != nil || r.Digest == "" {
		return ImportState{Imported: true, Summary: fmt.Sprintf("the import record %s cannot be read; run the import again", ImportRecordPath(home, agent))}
	}
	cur, err := sourceDigest(home, r, env)
	switch {
	case err != nil:
		return ImportState{Imported: true, Summary: fmt.Sprintf("%v; run %s again", err, r.Command)}
	case cur != r.Digest:
		return ImportState{Imported: true, Summary: fmt.Sprintf("%s has changed since the import; run %s", describeSource(r.Source), r.Command)}
	}
	return ImportState{Imported: true, UpToDate: true, Summary: "up to date"}
}

func describeSource(src string) string {
	if name, ok := strings.CutPrefix(src, scvProviderSource); ok {
		return "SCV's provider " + name
	}
	return src
}

const scvProviderSource = "scv-provider:"

// sourceDigest recomputes the digest of r's source as it is now.
func sourceDigest(home string, r ImportRecord, env paths.Env) (string, error) {
	if _, ok := strings.CutPrefix(r.Source, scvProviderSource); ok {
		name, p, key, search, err := activeProvider(home, env)
		if err != nil {
			return "", err
		}
		return providerDigest(name, p, key, search), nil
	}
	var parts [][]byte
	for _, f := range r.Files {
		data, err := readSmall(filepath.Join(r.Source, f))
		if err != nil {
			return "", fmt.Errorf("cannot read the import source %s: %v", filepath.Join(r.Source, f), redactErr(err))
		}
		parts = append(parts, data)
	}
	return digest(parts...), nil
}

// activeProvider loads SCV's configuration and returns its active
// provider with the key resolved (from api_key or the api_key_env
// variable) and whether it uses hosted web search.
func activeProvider(home string, env paths.Env) (name string, p config.ProviderConfig, key string, hostedSearch bool, err error) {
	cfg, _, err := config.Load(config.LoadOptions{Home: home, Env: env})
	if err != nil {
		return "", p, "", false, err
	}
	name, p, isDemo := cfg.ActiveProvider()
	if isDemo {
		return "", p, "", false, errors.New("SCV's active provider is the built-in demo, which delegated agents cannot use; configure a provider in $SCV_HOME/config.toml first (see docs/configuration.md)")
	}
	if p.Kind != config.KindOpenAI {
		return "", p, "", false, fmt.Errorf("SCV's active provider %s is of kind %q; only OpenAI-compatible providers can be copied", name, p.Kind)
	}
	key, err = config.ResolveAPIKey(p, env)
	if err != nil {
		return "", p, "", false, fmt.Errorf("cannot read the key of SCV's provider %s: %w", name, err)
	}
	return name, p, key, cfg.Web.Search == config.SearchProvider, nil
}

func providerDigest(name string, p config.ProviderConfig, key string, search bool) string {
	headers := make([]string, 0, len(p.Headers))
	for k, v := range p.Headers {
		headers = append(headers, k+"\x00"+v)
	}
	slices.Sort(headers)
	return digest([]byte(name), []byte(p.Kind), []byte(p.WireAPI), []byte(p.Model), []byte(p.BaseURL),
		[]byte(fmt.Sprint(p.TimeoutSeconds)), []byte(strings.Join(headers, "\x01")), []byte(key), []byte(fmt.Sprint(search)))
}

// ImportPiFromSCV points pi at SCV's active provider (see WritePi),
// resolving an api_key_env variable now, since delegated agents never
// inherit key variables, and records the import. It returns a summary
// without the key.
func ImportPiFromSCV(home string, env paths.Env) (string, error) {
	if env == nil {
		env = paths.OSEnv()
	}
	name, p, key, search, err := activeProvider(home, env)
	if err != nil {
		return "", err
	}
	if key == "" {
		key = "none" // a keyless endpoint; pi needs some value
	}
	e := PiEndpoint{BaseURL: p.BaseURL, WireAPI: p.WireAPI, Model: p.Model, Key: key}
	if err := WritePi(home, e); err != nil {
		return "", fmt.Errorf("cannot copy SCV's provider %s to pi: %w", name, err)
	}
	if err := writeImportRecord(home, ImportRecord{Agent: adapters.Pi, Command: "scv agents import pi --from-scv-provider",
		Source: scvProviderSource + name, Digest: providerDigest(name, p, key, search)}); err != nil {
		return "", err
	}
	return fmt.Sprintf("pi now uses SCV's provider %s as provider scv: %s API at %s, model %q (key stored in .pi/agent/auth.json)",
		name, piAPI(p.WireAPI), hostOf(p.BaseURL), p.Model), nil
}

// SCVConfigPath returns the nested SCV's configuration file.
func SCVConfigPath(home string) string { return agentFile(home, SCV, scvConfigFile) }

// ImportSCV gives the nested SCV a copy of SCV's active provider:
// [provider] active = "scv" and [providers.scv] with the same kind, wire
// API, model, base URL, timeout and headers, the key resolved now and
// stored, and [web] search = "provider" when SCV uses hosted search.
// Other settings in that file are kept; a file that cannot be read or
// parsed is left untouched and reported. The result is validated as an
// SCV configuration before it is written (0600, atomically).
func ImportSCV(home string, env paths.Env) (string, error) {
	if env == nil {
		env = paths.OSEnv()
	}
	name, p, key, search, err := activeProvider(home, env)
	if err != nil {
		return "", err
	}
	dest := SCVConfigPath(home)
	doc := map[string]any{}
	if data, err := readSmall(dest); err == nil {
		if err := toml.Unmarshal(data, &doc); err != nil {
			return "", fmt.Errorf("%s is not valid TOML, so it was left untouched; fix or remove it and run scv agents import scv again", dest)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("cannot read %s (%v), so it was left untouched", dest, redactErr(err))
	}
	prov := map[string]any{
		"kind":            string(p.Kind),
		"wire_api":        string(p.WireAPI),
		"model":           p.Model,
		"base_url":        p.BaseURL,
		"timeout_seconds": int64(p.TimeoutSeconds),
		"api_key_env":     "", // the key is stored; never read a variable
	}
	if key != "" {
		prov["api_key"] = key
	}
	if len(p.Headers) > 0 {
		h := map[string]any{}
		for k, v := range p.Headers {
			h[k] = v
		}
		prov["headers"] = h
	}
	providers, _ := doc["providers"].(map[string]any)
	if providers == nil {
		providers = map[string]any{}
	}
	providers["scv"] = prov
	doc["providers"] = providers
	sel, _ := doc["provider"].(map[string]any)
	if sel == nil {
		sel = map[string]any{}
	}
	sel["active"] = "scv"
	doc["provider"] = sel
	if search {
		web, _ := doc["web"].(map[string]any)
		if web == nil {
			web = map[string]any{}
		}
		web["search"] = config.SearchProvider
		doc["web"] = web
	}
	data, err := toml.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("cannot encode %s: %w", dest, err)
	}
	if err := validateSCVConfig(data); err != nil {
		return "", fmt.Errorf("the nested SCV's configuration would not load (%v); %s was left untouched", err, dest)
	}
	if err := writePrivate(home, dest, data); err != nil {
		return "", err
	}
	if err := writeImportRecord(home, ImportRecord{Agent: SCV, Command: "scv agents import scv",
		Source: scvProviderSource + name, Digest: providerDigest(name, p, key, search)}); err != nil {
		return "", err
	}
	return fmt.Sprintf("the nested SCV now uses a copy of SCV's provider %s: model %q at %s (key stored in agents/scv/config.toml)",
		name, p.Model, hostOf(p.BaseURL)), nil
}

// validateSCVConfig loads data as an SCV user configuration in a scratch
// instance directory.
func validateSCVConfig(data []byte) error {
	dir, err := os.MkdirTemp("", "scv-import-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, paths.ConfigFileName), data, 0o600); err != nil {
		return err
	}
	_, _, err = config.Load(config.LoadOptions{Home: dir, Env: paths.MapEnv(nil)})
	return err
}

// LogoutSCV removes the nested SCV's configuration file.
func LogoutSCV(home string) (bool, error) { return removeFile(SCVConfigPath(home)) }
