package config

import (
	"slices"
	"testing"
)

// TestSecretEnvNames: the active provider's key variable first, whatever
// its name, then the other providers' and Brave's, each once.
func TestSecretEnvNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, `[provider]
active = "moon"

[providers.moon]
kind = "openai"
base_url = "https://moon.example/v1"
api_key_env = "MOONSHOT_TOKEN"
model = "m"

[providers.other]
kind = "openai"
base_url = "https://other.example/v1"
api_key_env = "OTHER_SECRET"
model = "m"

[providers.same]
kind = "openai"
base_url = "https://same.example/v1"
api_key_env = "MOONSHOT_TOKEN"
model = "m"
`, "")
	c, _ := mustLoad(t, f, map[string]string{"MOONSHOT_TOKEN": "k", "OTHER_SECRET": "k"})
	got := c.SecretEnvNames()
	if want := []string{"MOONSHOT_TOKEN", "OTHER_SECRET", "BRAVE_API_KEY"}; !slices.Equal(got, want) {
		t.Fatalf("SecretEnvNames = %q, want %q", got, want)
	}
}
