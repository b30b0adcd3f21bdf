package signin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
)

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func readJSON(t *testing.T, p string) map[string]any {
	t.Helper()
	m, err := readJSONObject(p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWriteDSHKey(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for _, bad := range []string{"", "a b", "!cmd", "k\n"} {
		if err := WriteDSHKey(home, bad); err == nil || strings.Contains(err.Error(), bad) && bad != "" {
			t.Errorf("WriteDSHKey(%q) = %v", bad, err)
		}
	}
	writeFiles(t, home, map[string]string{"agents/dsh/.dsh/.credentials.yaml": "refs:\n  OTHER: keep\nversion: 2\n"})
	if err := WriteDSHKey(home, secret); err != nil {
		t.Fatal(err)
	}
	p := DSHCredentialsPath(home)
	if m := mode(t, p); m != 0o600 {
		t.Fatalf("mode %v", m)
	}
	data, _ := os.ReadFile(p)
	for _, want := range []string{"DEEPSEEK_API_KEY: " + secret, "OTHER: keep", "version: 2"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("credentials %q lack %q", data, want)
		}
	}
	if st := Check(home, "dsh", nil); !st.SignedIn {
		t.Fatalf("after login: %+v", st)
	}
	if ok, err := RemoveDSHKey(home); !ok || err != nil {
		t.Fatalf("RemoveDSHKey = %v, %v", ok, err)
	}
	if ok, err := RemoveDSHKey(home); ok || err != nil {
		t.Fatalf("second RemoveDSHKey = %v, %v", ok, err)
	}
}

func TestWritePiAndLogout(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFiles(t, home, map[string]string{
		"agents/pi/.pi/agent/auth.json":     `{"anthropic":{"type":"oauth","access":"a","refresh":"r"}}`,
		"agents/pi/.pi/agent/models.json":   `{"providers":{"ollama":{"baseUrl":"http://localhost:11434/v1","api":"openai-completions","apiKey":"x","models":[{"id":"llama"}]}}}`,
		"agents/pi/.pi/agent/settings.json": `{"theme":"dark","defaultProvider":"anthropic"}`,
	})
	e := PiEndpoint{BaseURL: "https://relay.example/v1/", WireAPI: config.WireResponses, Model: "gpt-x", Key: secret}
	for _, bad := range []PiEndpoint{
		{BaseURL: "ftp://x", WireAPI: config.WireChat, Model: "m", Key: "k"},
		{BaseURL: "https://x", WireAPI: "grpc", Model: "m", Key: "k"},
		{BaseURL: "https://x", WireAPI: config.WireChat, Model: "-m", Key: "k"},
		{BaseURL: "https://x", WireAPI: config.WireChat, Model: "m", Key: ""},
	} {
		if err := WritePi(home, bad); err == nil {
			t.Errorf("WritePi(%+v) succeeded", bad)
		}
	}
	if err := WritePi(home, e); err != nil {
		t.Fatal(err)
	}
	authPath, modelsPath, settingsPath := PiFiles(home)
	for _, p := range []string{authPath, modelsPath, settingsPath} {
		if m := mode(t, p); m != 0o600 {
			t.Errorf("%s mode %v", p, m)
		}
	}
	auth := readJSON(t, authPath)
	if auth["anthropic"] == nil || auth["scv"].(map[string]any)["key"] != secret {
		t.Fatalf("auth.json = %v", auth)
	}
	models := readJSON(t, modelsPath)
	provs := models["providers"].(map[string]any)
	scv := provs["scv"].(map[string]any)
	if provs["ollama"] == nil || scv["api"] != "openai-responses" || scv["baseUrl"] != "https://relay.example/v1" ||
		scv["compat"].(map[string]any)["sessionAffinityFormat"] != "openai-nosession" {
		t.Fatalf("models.json = %v", models)
	}
	if data, _ := os.ReadFile(modelsPath); strings.Contains(string(data), secret) {
		t.Fatal("models.json holds the key")
	}
	settings := readJSON(t, settingsPath)
	if settings["theme"] != "dark" || settings["defaultProvider"] != "scv" || settings["defaultModel"] != "gpt-x" {
		t.Fatalf("settings.json = %v", settings)
	}
	if st := Check(home, "pi", nil); !st.SignedIn || !strings.Contains(st.Summary, "default provider scv, openai-responses API at relay.example") {
		t.Fatalf("Check = %+v", st)
	}

	// Chat wire: no compat.
	if err := WritePi(home, PiEndpoint{BaseURL: "http://127.0.0.1:1/v1", WireAPI: config.WireChat, Model: "m", Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if scv := readJSON(t, modelsPath)["providers"].(map[string]any)["scv"].(map[string]any); scv["compat"] != nil || scv["api"] != "openai-completions" {
		t.Fatalf("chat provider = %v", scv)
	}

	done, err := LogoutPi(home)
	if err != nil || len(done) != 3 {
		t.Fatalf("LogoutPi = %v, %v", done, err)
	}
	if _, err := os.Stat(authPath); !os.IsNotExist(err) {
		t.Fatal("auth.json still there")
	}
	if provs := readJSON(t, modelsPath)["providers"].(map[string]any); provs["scv"] != nil || provs["ollama"] == nil {
		t.Fatalf("models.json after logout = %v", provs)
	}
	if s := readJSON(t, settingsPath); s["defaultProvider"] != nil || s["theme"] != "dark" {
		t.Fatalf("settings.json after logout = %v", s)
	}
}

func TestWritePiRefusesCorruptFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFiles(t, home, map[string]string{"agents/pi/.pi/agent/settings.json": `[1,2`})
	err := WritePi(home, PiEndpoint{BaseURL: "https://x/v1", WireAPI: config.WireChat, Model: "m", Key: secret})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("WritePi = %v", err)
	}
	authPath, _, _ := PiFiles(home)
	if _, err := os.Stat(authPath); !os.IsNotExist(err) {
		t.Fatal("auth.json written although settings.json is corrupt")
	}
}

// scvHome returns an instance directory whose config.toml is cfg.
func scvHome(t *testing.T, cfg string) string {
	t.Helper()
	home := t.TempDir()
	writeFiles(t, home, map[string]string{"config.toml": cfg})
	return home
}

const providerConfig = `[provider]
active = "relay"
[providers.relay]
base_url = "http://127.0.0.1:9/v1"
wire_api = "responses"
model = "gpt-relay"
api_key_env = "RELAY_KEY"
timeout_seconds = 77
[providers.relay.headers]
X-Team = "t1"
[web]
search = "provider"
`

func TestImportPiFromSCV(t *testing.T) {
	t.Parallel()
	home := scvHome(t, providerConfig)
	env := paths.MapEnv(map[string]string{"RELAY_KEY": secret})
	if _, err := ImportPiFromSCV(home, paths.MapEnv(nil)); err == nil || !strings.Contains(err.Error(), "RELAY_KEY") {
		t.Fatalf("import without the key variable: %v", err)
	}
	sum, err := ImportPiFromSCV(home, env)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sum, secret) || !strings.Contains(sum, `model "gpt-relay"`) {
		t.Fatalf("summary %q", sum)
	}
	authPath, _, _ := PiFiles(home)
	if readJSON(t, authPath)["scv"].(map[string]any)["key"] != secret {
		t.Fatal("key not stored")
	}
	if st := CheckImport(home, "pi", env); !st.UpToDate || st.Summary != "up to date" {
		t.Fatalf("CheckImport = %+v", st)
	}
	// A rotated key changes the source.
	if st := CheckImport(home, "pi", paths.MapEnv(map[string]string{"RELAY_KEY": "rotated"})); st.UpToDate ||
		!strings.Contains(st.Summary, "scv agents import pi --from-scv-provider") || strings.Contains(st.Summary, "rotated") {
		t.Fatalf("CheckImport after a change = %+v", st)
	}
	if st := CheckImport(home, "grok", env); st.Imported {
		t.Fatalf("grok import = %+v", st)
	}
	if _, err := ImportPiFromSCV(scvHome(t, ""), env); err == nil || !strings.Contains(err.Error(), "demo") {
		t.Fatalf("import of the demo provider: %v", err)
	}
}

func TestImportSCV(t *testing.T) {
	t.Parallel()
	home := scvHome(t, providerConfig)
	env := paths.MapEnv(map[string]string{"RELAY_KEY": secret})
	writeFiles(t, home, map[string]string{"agents/scv/config.toml": "[tools]\noutput_limit_bytes = 1234\n[providers.old]\nbase_url = \"http://old/v1\"\n"})
	sum, err := ImportSCV(home, env)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sum, secret) {
		t.Fatalf("summary %q has the key", sum)
	}
	p := SCVConfigPath(home)
	if m := mode(t, p); m != 0o600 {
		t.Fatalf("mode %v", m)
	}
	cfg, _, err := config.Load(config.LoadOptions{Home: filepath.Dir(p), Env: paths.MapEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	name, prov, _ := cfg.ActiveProvider()
	if name != "scv" || prov.Model != "gpt-relay" || prov.WireAPI != "responses" || prov.TimeoutSeconds != 77 ||
		prov.APIKey != secret || prov.Headers["X-Team"] != "t1" || cfg.Web.Search != "provider" || cfg.Tools.OutputLimitBytes != 1234 {
		t.Fatalf("nested config: %s %+v web=%q tools=%+v", name, prov, cfg.Web.Search, cfg.Tools)
	}
	if _, ok := cfg.Providers["old"]; !ok {
		t.Fatal("other providers were dropped")
	}
	if st := Check(home, "scv", nil); !st.SignedIn || strings.Contains(st.Summary, secret) {
		t.Fatalf("Check = %+v", st)
	}
	if st := CheckImport(home, "scv", env); !st.UpToDate {
		t.Fatalf("CheckImport = %+v", st)
	}

	// An unreadable file is left untouched.
	bad := "[tools\nbroken = " + secret
	writeFiles(t, home, map[string]string{"agents/scv/config.toml": bad})
	if _, err := ImportSCV(home, env); err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("ImportSCV over a broken file = %v", err)
	}
	if data, _ := os.ReadFile(p); string(data) != bad {
		t.Fatal("the broken file was changed")
	}
	if ok, err := LogoutSCV(home); !ok || err != nil {
		t.Fatalf("LogoutSCV = %v %v", ok, err)
	}
}

func TestImportGrok(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	from := t.TempDir()
	writeFiles(t, from, map[string]string{
		"config.toml": "[models]\ndefault = \"relay\"\n[model.relay]\nmodel = \"grok-9\"\napi_key = \"" + secret + "\"\n[model.env]\nmodel = \"m2\"\nenv_key = \"XAI_API_KEY\"\n",
		"auth.json":   `{"xai::session":{"access":"` + secret + `"}}`,
	})
	writeFiles(t, home, map[string]string{"agents/grok/.grok/config.toml": "[marketplace]\nstate = \"kept\"\n[models]\ndefault = \"old\"\n"})
	res, err := ImportGrok(home, from)
	if err != nil {
		t.Fatal(err)
	}
	if res.Default != "relay" || len(res.Profiles) != 2 || len(res.Kept) != 1 || res.Kept[0] != "marketplace" {
		t.Fatalf("ImportGrok = %+v", res)
	}
	for _, p := range res.Profiles {
		if p.Key == "env" && !p.EnvKeyScrubbed {
			t.Errorf("XAI_API_KEY not flagged: %+v", p)
		}
		if p.Key == "relay" && !p.HasAPIKey {
			t.Errorf("relay key not seen: %+v", p)
		}
	}
	dest := filepath.Join(home, "agents/grok/.grok")
	var doc map[string]any
	data, _ := os.ReadFile(filepath.Join(dest, "config.toml"))
	if err := toml.Unmarshal(data, &doc); err != nil || doc["marketplace"] == nil || doc["models"].(map[string]any)["default"] != "relay" {
		t.Fatalf("merged config %v, %v", doc, err)
	}
	if _, err := os.Stat(filepath.Join(dest, "auth.json")); !os.IsNotExist(err) {
		t.Fatal("auth.json was copied")
	}
	if st := Check(home, "grok", nil); !st.SignedIn || st.Summary != `signed in (API key in config, model "grok-9")` {
		t.Fatalf("Check = %+v", st)
	}
	if st := CheckImport(home, "grok", nil); !st.UpToDate {
		t.Fatalf("CheckImport = %+v", st)
	}
	writeFiles(t, from, map[string]string{"config.toml": "[models]\ndefault = \"x\"\n"})
	if st := CheckImport(home, "grok", nil); st.UpToDate || !strings.Contains(st.Summary, "scv agents import grok") {
		t.Fatalf("CheckImport after a change = %+v", st)
	}
	writeFiles(t, from, map[string]string{"config.toml": "[models\n" + secret})
	if _, err := ImportGrok(home, from); err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("ImportGrok of bad TOML = %v", err)
	}
}

func TestImportCodex(t *testing.T) {
	t.Parallel()
	cfg := "model = \"gpt-5.5\"\nmodel_provider = \"relay\"\napproval_policy = \"never\"\nsandbox_mode = \"workspace-write\"\n[model_providers.relay]\nbase_url = \"https://relay/v1\"\nenv_key = \"RELAY_API_KEY\"\n[model_providers.other]\nbase_url = \"https://other/v1\"\nenv_key = \"MY_TOKEN\"\n"
	for _, tc := range []struct {
		name   string
		auth   string
		copied bool
		skip   string
	}{
		{"api key", `{"OPENAI_API_KEY":"` + secret + `","tokens":null}`, true, ""},
		{"chatgpt tokens", `{"OPENAI_API_KEY":null,"tokens":{"refresh_token":"` + secret + `"}}`, false, "ChatGPT sign-in"},
		{"chatgpt mode", `{"auth_mode":"chatgpt","OPENAI_API_KEY":"` + secret + `"}`, false, "ChatGPT sign-in"},
		{"no auth", "", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, from := t.TempDir(), t.TempDir()
			files := map[string]string{"config.toml": cfg}
			if tc.auth != "" {
				files["auth.json"] = tc.auth
			}
			writeFiles(t, from, files)
			res, err := ImportCodex(home, from)
			if err != nil {
				t.Fatal(err)
			}
			if res.AuthCopied != tc.copied || !strings.Contains(res.AuthSkipped, tc.skip) || res.Model != "gpt-5.5" ||
				res.Provider != "relay" || len(res.EnvKeys) != 2 || res.EnvKeys[0] != "other: MY_TOKEN" || res.EnvKeys[1] != "relay: RELAY_API_KEY" {
				t.Fatalf("ImportCodex = %+v", res)
			}
			codex := filepath.Join(home, "agents/codex")
			if data, _ := os.ReadFile(filepath.Join(codex, "config.toml")); string(data) != cfg {
				t.Fatal("config.toml not copied whole")
			}
			_, err = os.Stat(filepath.Join(codex, "auth.json"))
			if tc.copied != (err == nil) {
				t.Fatalf("auth.json copied=%v, want %v", err == nil, tc.copied)
			}
			if tc.copied && mode(t, filepath.Join(codex, "auth.json")) != 0o600 {
				t.Fatal("auth.json mode")
			}
			if st := CheckImport(home, "codex", nil); !st.UpToDate {
				t.Fatalf("CheckImport = %+v", st)
			}
			data, _ := os.ReadFile(ImportRecordPath(home, "codex"))
			var r ImportRecord
			if json.Unmarshal(data, &r) != nil || strings.Contains(string(data), secret) || !strings.HasPrefix(r.Digest, "sha256:") {
				t.Fatalf("import record %s", data)
			}
		})
	}
	home, from := t.TempDir(), t.TempDir()
	writeFiles(t, from, map[string]string{"config.toml": cfg, "auth.json": "{" + secret})
	if _, err := ImportCodex(home, from); err == nil || strings.Contains(err.Error(), secret) {
		t.Fatalf("ImportCodex with bad auth.json = %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, "agents/codex/config.toml")); !os.IsNotExist(err) {
		t.Fatal("config.toml written although auth.json is invalid")
	}
}

func TestDefaultSourceDir(t *testing.T) {
	t.Parallel()
	if d, _ := DefaultSourceDir("grok", paths.MapEnv(map[string]string{"HOME": "/h"})); d != "/h/.grok" {
		t.Fatal(d)
	}
	if d, _ := DefaultSourceDir("codex", paths.MapEnv(map[string]string{"HOME": "/h", "CODEX_HOME": "/c"})); d != "/c" {
		t.Fatal(d)
	}
	if _, err := DefaultSourceDir("codex", paths.MapEnv(nil)); err == nil {
		t.Fatal("no HOME accepted")
	}
	if _, err := DefaultSourceDir("pi", nil); err == nil {
		t.Fatal("pi has a source dir")
	}
}
