package signin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/paths"
	"go.yaml.in/yaml/v4"
)

// ensureParent creates the directories from $SCV_HOME/agents down to the
// directory of p with mode 0700.
func ensureParent(home, p string) error {
	if err := paths.EnsureDir(paths.AgentsDir(home)); err != nil {
		return err
	}
	return paths.EnsureDir(filepath.Dir(p))
}

// writePrivate writes data to p atomically with mode 0600, creating its
// directories.
func writePrivate(home, p string, data []byte) error {
	if err := ensureParent(home, p); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(p, data, 0o600); err != nil {
		return fmt.Errorf("cannot write %s: %w", p, err)
	}
	return nil
}

// CheckKey refuses a key that cannot be stored as one: empty, with white
// space or control characters inside, or starting with '!' (pi would run
// it as a shell command). The error never quotes the key.
func CheckKey(key string) error {
	if key == "" {
		return errors.New("the API key is empty")
	}
	if strings.HasPrefix(key, "!") {
		return errors.New("the API key starts with '!', which pi would run as a shell command; check that you pasted the key itself")
	}
	for _, r := range key {
		if r <= ' ' || r == 0x7f {
			return errors.New("the API key contains white space or control characters; paste the key alone on one line")
		}
	}
	return nil
}

// DSHCredentialsPath returns DeepSeek Harness's credential file in its
// private home.
func DSHCredentialsPath(home string) string {
	return agentFile(home, adapters.DSH, dshCredFile)
}

// WriteDSHKey stores key as refs.DEEPSEEK_API_KEY in DeepSeek Harness's
// .dsh/.credentials.yaml, atomically with mode 0600. Other entries of an
// existing file are kept; a file that is not valid YAML is replaced.
func WriteDSHKey(home, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	p := DSHCredentialsPath(home)
	doc := map[string]any{}
	if data, err := readSmall(p); err == nil {
		if yaml.Unmarshal(data, &doc) != nil || doc == nil {
			doc = map[string]any{}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot read %s: %w", p, err)
	}
	refs, _ := doc["refs"].(map[string]any)
	if refs == nil {
		refs = map[string]any{}
	}
	refs[dshKeyRef] = key
	doc["refs"] = refs
	data, err := yaml.Marshal(doc)
	if err != nil {
		return fmt.Errorf("cannot encode %s: %w", p, err)
	}
	return writePrivate(home, p, data)
}

// RemoveDSHKey removes DeepSeek Harness's credential file; a missing one
// is not an error. It reports whether there was one.
func RemoveDSHKey(home string) (bool, error) {
	return removeFile(DSHCredentialsPath(home))
}

func removeFile(p string) (bool, error) {
	err := os.Remove(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cannot remove %s: %w", p, err)
	}
	return true, nil
}

// PiProvider is the name of the provider SCV writes into pi's files.
const PiProvider = "scv"

// piKeyPlaceholder fills the apiKey pi requires of a provider with
// models; pi takes the key from auth.json first, so it is never used
// while SCV's sign-in is stored.
const piKeyPlaceholder = "SCV_KEY_IS_IN_AUTH_JSON"

// PiEndpoint is an OpenAI-compatible endpoint for pi.
type PiEndpoint struct {
	// BaseURL is the endpoint, such as https://api.openai.com/v1.
	BaseURL string
	// WireAPI is config.WireResponses or config.WireChat.
	WireAPI config.WireAPI
	// Model is the default model id.
	Model string
	// Key is the API key; never printed.
	Key string
}

// Validate reports what is wrong with e, as a sentence.
func (e PiEndpoint) Validate() error {
	u, err := url.Parse(e.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("the base URL %q is not an http or https URL such as https://api.example.com/v1", e.BaseURL)
	}
	if e.WireAPI != config.WireResponses && e.WireAPI != config.WireChat {
		return fmt.Errorf("the wire API %q is not %q or %q", e.WireAPI, config.WireResponses, config.WireChat)
	}
	if !config.ValidModel(e.Model) {
		return fmt.Errorf("the model %q is not a model id (1-128 letters, digits or ._:/@[]-, not starting with - or @)", e.Model)
	}
	return CheckKey(e.Key)
}

// piAPI maps a wire API to pi's api name.
func piAPI(w config.WireAPI) string {
	if w == config.WireResponses {
		return "openai-responses"
	}
	return "openai-completions"
}

// PiFiles returns pi's auth.json, models.json and settings.json in its
// private home.
func PiFiles(home string) (auth, models, settings string) {
	return agentFile(home, adapters.Pi, piAuthFile),
		agentFile(home, adapters.Pi, piModelsFile),
		agentFile(home, adapters.Pi, piSettingsFile)
}

// WritePi points pi at e: provider "scv" in models.json (with
// compat.sessionAffinityFormat "openai-nosession" for the Responses API,
// since pi's default session_id header is refused by proxies that reject
// underscores in header names), its key in auth.json, and
// defaultProvider/defaultModel in settings.json. Each file is written
// atomically with mode 0600; other providers, sign-ins and settings are
// kept. All three are read and checked before any is written, so a file
// that is not a JSON object stops the write with nothing changed.
func WritePi(home string, e PiEndpoint) error {
	if err := e.Validate(); err != nil {
		return err
	}
	authPath, modelsPath, settingsPath := PiFiles(home)
	auth, err := readJSONObject(authPath)
	if err != nil {
		return fmt.Errorf("cannot update pi's sign-ins: %w; fix or remove the file", err)
	}
	models, err := readJSONObject(modelsPath)
	if err != nil {
		return fmt.Errorf("cannot update pi's providers: %w; fix or remove the file", err)
	}
	settings, err := readJSONObject(settingsPath)
	if err != nil {
		return fmt.Errorf("cannot update pi's settings: %w; fix or remove the file", err)
	}
	providers, _ := models["providers"].(map[string]any)
	if providers == nil {
		providers = map[string]any{}
	}
	prov := map[string]any{
		"baseUrl": strings.TrimRight(e.BaseURL, "/"),
		"api":     piAPI(e.WireAPI),
		"apiKey":  piKeyPlaceholder,
		"models":  []any{map[string]any{"id": e.Model, "name": e.Model}},
	}
	if e.WireAPI == config.WireResponses {
		// sendSessionIdHeader is the same switch in pi releases that
		// predate sessionAffinityFormat.
		prov["compat"] = map[string]any{"sessionAffinityFormat": "openai-nosession", "sendSessionIdHeader": false}
	}
	providers[PiProvider] = prov
	models["providers"] = providers
	auth[PiProvider] = map[string]any{"type": "api_key", "key": e.Key}
	settings["defaultProvider"] = PiProvider
	settings["defaultModel"] = e.Model
	for _, f := range []struct {
		path string
		v    map[string]any
	}{{modelsPath, models}, {authPath, auth}, {settingsPath, settings}} {
		data, err := marshalJSON(f.v)
		if err != nil {
			return err
		}
		if err := writePrivate(home, f.path, data); err != nil {
			return err
		}
	}
	return nil
}

func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// LogoutPi removes pi's auth.json, the "scv" provider from models.json,
// and a default provider in settings.json that points at it. It reports
// what it removed, as short phrases.
func LogoutPi(home string) ([]string, error) {
	authPath, modelsPath, settingsPath := PiFiles(home)
	var done []string
	if ok, err := removeFile(authPath); err != nil {
		return done, err
	} else if ok {
		done = append(done, "removed the stored sign-ins (.pi/agent/auth.json)")
	}
	models, err := readJSONObject(modelsPath)
	if err != nil {
		return done, fmt.Errorf("cannot remove the scv provider: %w", err)
	}
	if providers, _ := models["providers"].(map[string]any); providers != nil {
		if _, ok := providers[PiProvider]; ok {
			delete(providers, PiProvider)
			data, err := marshalJSON(models)
			if err != nil {
				return done, err
			}
			if err := writePrivate(home, modelsPath, data); err != nil {
				return done, err
			}
			done = append(done, "removed provider scv from .pi/agent/models.json")
		}
	}
	settings, err := readJSONObject(settingsPath)
	if err != nil {
		return done, fmt.Errorf("cannot reset the default provider: %w", err)
	}
	if p, _ := settings["defaultProvider"].(string); p == PiProvider {
		delete(settings, "defaultProvider")
		delete(settings, "defaultModel")
		data, err := marshalJSON(settings)
		if err != nil {
			return done, err
		}
		if err := writePrivate(home, settingsPath, data); err != nil {
			return done, err
		}
		done = append(done, "removed the default provider scv from .pi/agent/settings.json")
	}
	return done, nil
}

func atomicWrite(p string, data []byte) error { return atomicfile.WriteFile(p, data, 0o600) }
