package fakeopenai

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func TestStartServesTheScriptAndClosesWithTheTest(t *testing.T) {
	t.Parallel()
	var url string
	t.Run("test", func(t *testing.T) {
		s := Start(t, Script(Text("hello from ", "the script")))
		url = s.URL()
		resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "hello from ") || !strings.Contains(string(body), "the script") {
			t.Fatalf("the reply does not carry the script: %s", body)
		}
		if n := len(s.Requests()); n != 1 {
			t.Fatalf("%d requests recorded, want 1", n)
		}
	})
	if _, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(`{}`)); err == nil {
		t.Fatal("the fake still answers after its test ended")
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	s := Start(t)
	var cfg struct {
		Provider  struct{ Active string }
		Providers map[string]map[string]any
	}
	if err := toml.Unmarshal([]byte(s.Config(`wire_api = "responses"`+"\n")), &cfg); err != nil {
		t.Fatalf("Config is not TOML: %v", err)
	}
	fake := cfg.Providers["fake"]
	if cfg.Provider.Active != "fake" || fake["base_url"] != s.URL() || fake["model"] != "fake-model" || fake["wire_api"] != "responses" {
		t.Fatalf("Config = %+v", cfg)
	}
}
