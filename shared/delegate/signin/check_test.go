package signin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/paths"
)

// secret is the key every fixture stores; no summary may contain it.
const secret = "sk-test-SECRET-0123456789"

func writeFiles(t *testing.T, home string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		agent    string
		files    map[string]string
		env      map[string]string
		checked  bool
		signedIn bool
		summary  string // substring
	}{
		{"claude unchecked", "claude", nil, nil, false, false, "its own CLI"},
		{"codex unchecked", "codex", nil, nil, false, false, "its own CLI"},
		{"unknown", "zcode", nil, nil, false, false, "unknown agent"},

		{"grok nothing", "grok", nil, nil, true, false, "scv agents login grok"},
		{"grok login", "grok", map[string]string{"agents/grok/.grok/auth.json": `{"xai::session":{"access_token":"` + secret + `"}}`}, nil, true, true, "signed in (grok login)"},
		{"grok auth api key", "grok", map[string]string{"agents/grok/.grok/auth.json": `{"xai::api_key":{"key":"` + secret + `","auth_mode":"api_key"}}`}, nil, true, true, "signed in (API key, grok login)"},
		{"grok empty auth", "grok", map[string]string{"agents/grok/.grok/auth.json": `{}`}, nil, true, false, "signed out"},
		{"grok config key by catalog key", "grok", map[string]string{"agents/grok/.grok/config.toml": "[models]\ndefault = \"relay\"\n[model.relay]\nmodel = \"grok-code-9\"\napi_key = \"" + secret + "\"\n"}, nil, true, true, `signed in (API key in config, model "grok-code-9")`},
		{"grok config key by model id", "grok", map[string]string{"agents/grok/.grok/config.toml": "[models]\ndefault = \"grok-code-9\"\n[model.relay]\nmodel = \"grok-code-9\"\napi_key = \"" + secret + "\"\n"}, nil, true, true, `model "grok-code-9"`},
		{"grok env_key set", "grok", map[string]string{"agents/grok/.grok/config.toml": "[models]\ndefault = \"orq\"\n[model.orq]\nmodel = \"m1\"\nenv_key = \"ORQ_TOKEN\"\n"}, map[string]string{"ORQ_TOKEN": secret}, true, true, `model "m1"`},
		{"grok env_key unset", "grok", map[string]string{"agents/grok/.grok/config.toml": "[models]\ndefault = \"orq\"\n[model.orq]\nmodel = \"m1\"\nenv_key = \"ORQ_TOKEN\"\n"}, nil, true, false, "not set"},
		{"grok env_key scrubbed", "grok", map[string]string{"agents/grok/.grok/config.toml": "[models]\ndefault = \"orq\"\n[model.orq]\nmodel = \"m1\"\nenv_key = \"ORQ_API_KEY\"\n"}, map[string]string{"ORQ_API_KEY": secret}, true, false, "removes from delegated agents"},
		{"grok default names nothing", "grok", map[string]string{"agents/grok/.grok/config.toml": "[models]\ndefault = \"x\"\n"}, nil, true, false, `names no [model.<key>]`},
		{"grok profile without key", "grok", map[string]string{"agents/grok/.grok/config.toml": "[models]\ndefault = \"x\"\n[model.x]\n"}, nil, true, false, "no api_key"},
		{"grok bad toml", "grok", map[string]string{"agents/grok/.grok/config.toml": "api_key = \"" + secret}, nil, true, false, "not valid TOML"},

		{"dsh nothing", "dsh", nil, nil, true, false, "scv agents login dsh"},
		{"dsh key", "dsh", map[string]string{"agents/dsh/.dsh/.credentials.yaml": "refs:\n  DEEPSEEK_API_KEY: " + secret + "\n"}, nil, true, true, "signed in (API key)"},
		{"dsh no ref", "dsh", map[string]string{"agents/dsh/.dsh/.credentials.yaml": "refs:\n  OTHER: x\n"}, nil, true, false, "no DEEPSEEK_API_KEY"},
		{"dsh bad yaml", "dsh", map[string]string{"agents/dsh/.dsh/.credentials.yaml": "refs: [" + secret}, nil, true, false, "not valid YAML"},

		{"pi nothing", "pi", nil, nil, true, false, "scv agents login pi"},
		{"pi oauth", "pi", map[string]string{"agents/pi/.pi/agent/auth.json": `{"anthropic":{"type":"oauth","access":"` + secret + `","refresh":"r"}}`}, nil, true, true, "sign-ins: anthropic"},
		{"pi scv provider", "pi", map[string]string{
			"agents/pi/.pi/agent/auth.json":     `{"scv":{"type":"api_key","key":"` + secret + `"}}`,
			"agents/pi/.pi/agent/models.json":   `{"providers":{"scv":{"baseUrl":"https://user:pw@relay.example:8443/v1?k=` + secret + `","api":"openai-responses","models":[{"id":"gpt-x"}]}}}`,
			"agents/pi/.pi/agent/settings.json": `{"defaultProvider":"scv","defaultModel":"gpt-x"}`,
		}, nil, true, true, `default provider scv, openai-responses API at relay.example:8443, model "gpt-x"; sign-ins: scv`},
		{"pi empty auth", "pi", map[string]string{"agents/pi/.pi/agent/auth.json": `{}`}, nil, true, false, "no provider sign-in"},
		{"pi bad auth", "pi", map[string]string{"agents/pi/.pi/agent/auth.json": `{"scv":"` + secret}, nil, true, false, "not valid JSON"},

		{"scv nothing", "scv", nil, nil, true, false, "scv agents import scv"},
		{"scv provider", "scv", map[string]string{"agents/scv/config.toml": "[provider]\nactive = \"scv\"\n[providers.scv]\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \"" + secret + "\"\n"}, nil, true, true, `signed in (provider scv, model "m" at 127.0.0.1:9)`},
		{"scv no provider", "scv", map[string]string{"agents/scv/config.toml": "[provider]\nactive = \"scv\"\n"}, nil, true, false, "selects no configured provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			writeFiles(t, home, tc.files)
			st := Check(home, tc.agent, paths.MapEnv(tc.env))
			if st.Checked != tc.checked || st.SignedIn != tc.signedIn || !strings.Contains(st.Summary, tc.summary) {
				t.Fatalf("Check = %+v, want checked=%v signedIn=%v summary containing %q", st, tc.checked, tc.signedIn, tc.summary)
			}
			if strings.Contains(st.Summary, secret) || strings.Contains(st.Summary, "SECRET") {
				t.Fatalf("summary %q contains the secret", st.Summary)
			}
		})
	}
}

func TestCheckNeverFollowsSymlinks(t *testing.T) {
	home := t.TempDir()
	outside := filepath.Join(t.TempDir(), "creds.yaml")
	writeFiles(t, filepath.Dir(outside), map[string]string{"creds.yaml": "refs:\n  DEEPSEEK_API_KEY: " + secret + "\n"})
	if err := os.MkdirAll(filepath.Join(home, "agents/dsh/.dsh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(home, "agents/dsh/.dsh/.credentials.yaml")); err != nil {
		t.Fatal(err)
	}
	if st := Check(home, "dsh", nil); st.SignedIn {
		t.Fatalf("Check followed a symlink: %+v", st)
	}
}

func FuzzParseGrokConfig(f *testing.F) {
	f.Add([]byte("[models]\ndefault = \"a\"\n[model.a]\nmodel = \"b\"\napi_key = \"k\"\n"))
	f.Add([]byte("models = 3\nmodel = [1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		gc, err := parseGrokConfig(data)
		if err != nil {
			return
		}
		if p, ok := gc.defaultProfile(); ok && p.Key != gc.Default && p.ID != gc.Default {
			t.Fatalf("defaultProfile %+v does not match default %q", p, gc.Default)
		}
	})
}

func FuzzPiStoredSignIns(f *testing.F) {
	f.Add([]byte(`{"a":{"type":"api_key","key":"k"},"b":"s","c":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = piStoredSignIns(data)
	})
}
