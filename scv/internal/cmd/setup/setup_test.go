package setup

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
)

// provider is a loopback endpoint that lists two models for key "sk-good"
// and answers 401 with an OpenAI error otherwise.
func provider(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer sk-good" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[{"id":"m1"},{"id":"m2"}]}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func run(t *testing.T, home string, env map[string]string, input string) (string, error) {
	t.Helper()
	env["SCV_HOME"] = home
	var out bytes.Buffer
	err := Run(context.Background(), &Options{IO: &cmdutil.IOStreams{In: strings.NewReader(input), Out: &out, ErrOut: &out}, Env: paths.MapEnv(env)})
	return out.String(), err
}

// TestSetupEnvVariable: a custom endpoint with the key named by a variable;
// the test lists the models, the file is 0600 and loads as the active
// provider with api_key_env, never the key.
func TestSetupEnvVariable(t *testing.T) {
	t.Parallel()
	srv := provider(t)
	home := t.TempDir()
	out, err := run(t, home, map[string]string{"MY_KEY": "sk-good"}, "4\n"+srv.URL+"/v1\nMY_KEY\nm2\n")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "Connection OK: the provider lists 2 models.") || strings.Contains(out, "is not among them") {
		t.Errorf("output:\n%s", out)
	}
	path := filepath.Join(home, "config.toml")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config.toml: %v %v", fi, err)
	}
	cfg, _, err := config.Load(config.LoadOptions{Home: home, Env: paths.MapEnv(map[string]string{"MY_KEY": "sk-good"})})
	if err != nil {
		t.Fatal(err)
	}
	name, p, demo := cfg.ActiveProvider()
	if demo || name != "custom" || p.BaseURL != srv.URL+"/v1" || p.APIKeyEnv != "MY_KEY" || p.Model != "m2" {
		t.Fatalf("active provider %s %+v", name, p)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "sk-good") {
		t.Error("the key's value was written although a variable names it")
	}
	if _, err := run(t, home, map[string]string{}, "1\n\n\n"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second setup: %v", err)
	}
}

// TestSetupPastedKeyAndFailures: a pasted key that the provider refuses is
// reported with the provider's message, and nothing is written unless the
// user says so; d keeps the demo and writes nothing.
func TestSetupPastedKeyAndFailures(t *testing.T) {
	t.Parallel()
	srv := provider(t)
	home := t.TempDir()
	out, err := run(t, home, map[string]string{}, "4\n"+srv.URL+"/v1\nsk-bad-123\n\nn\n")
	if err == nil || !strings.Contains(out, "HTTP 401: Incorrect API key provided") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home, "config.toml")); err == nil {
		t.Fatal("a refused key was saved")
	}
	if _, err := run(t, home, map[string]string{}, "d\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "config.toml")); err == nil {
		t.Fatal("d wrote a configuration")
	}
	out, err = run(t, home, map[string]string{}, "4\n"+srv.URL+"/v1\nsk-good\n\n")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cfg, _, err := config.Load(config.LoadOptions{Home: home, Env: paths.MapEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, p, _ := cfg.ActiveProvider(); p.APIKey != "sk-good" || p.Model != "gpt-4.1-mini" {
		t.Fatalf("provider %+v", p)
	}
	if _, err := run(t, t.TempDir(), map[string]string{}, "1\n"); err == nil || !strings.Contains(err.Error(), "input ended") {
		t.Errorf("input that ends early: %v", err)
	}
}

// TestOffer: the first run without configuration asks once; Enter runs the
// dialogue (here answered d), d starts the demo, and a second run does not
// ask again; with a configuration file nothing is asked.
func TestOffer(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	offer := func(input string) string {
		var out bytes.Buffer
		err := Offer(context.Background(), &Options{IO: &cmdutil.IOStreams{In: strings.NewReader(input), Out: &out}, Env: paths.MapEnv(map[string]string{"SCV_HOME": home})})
		if err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	if out := offer("\nd\n"); !strings.Contains(out, "No model provider is configured yet") || !strings.Contains(out, "Which model provider") || !strings.Contains(out, "scv runs the demo") {
		t.Fatalf("first run:\n%s", out)
	}
	if out := offer("\n"); out != "" {
		t.Fatalf("the offer was made twice:\n%s", out)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "config.toml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Offer(context.Background(), &Options{IO: &cmdutil.IOStreams{In: strings.NewReader("\n"), Out: &out}, Env: paths.MapEnv(map[string]string{"SCV_HOME": other})}); err != nil || out.Len() != 0 {
		t.Fatalf("with a configuration: %v %q", err, out.String())
	}
	fresh := t.TempDir()
	out.Reset()
	if err := Offer(context.Background(), &Options{IO: &cmdutil.IOStreams{In: strings.NewReader("d\n"), Out: &out}, Env: paths.MapEnv(map[string]string{"SCV_HOME": fresh})}); err != nil || strings.Contains(out.String(), "Which model provider") {
		t.Fatalf("d: %v %q", err, out.String())
	}
}

// TestSetupModelNotListedAndNothingListening: a model the provider does
// not list is named with the ones it does (the file is still written, as
// the user chose); an endpoint where nothing listens says so, with what
// to start for Ollama.
func TestSetupModelNotListedAndNothingListening(t *testing.T) {
	t.Parallel()
	srv := provider(t)
	out, err := run(t, t.TempDir(), map[string]string{}, "4\n"+srv.URL+"/v1\nsk-good\nm3\n")
	if err != nil || !strings.Contains(out, "Note: m3 is not among them (m1, m2); change model in the file written below, or run scv setup again.") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}

	// A port that was open a moment ago and is closed now: refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	out, err = run(t, t.TempDir(), map[string]string{}, "4\nhttp://"+addr+"/v1\nsk-good\nm1\nn\n")
	if err == nil || !strings.Contains(out, "nothing listens at "+addr+" (connection refused); check the address, or start the provider's server") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
}
