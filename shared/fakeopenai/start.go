package fakeopenai

import (
	"fmt"
	"testing"
)

// Start starts a fake for the test t, scripted with replies (Enqueue adds
// more), and closes it when the test ends. It is the one way tests start
// the fake model.
func Start(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := NewServer()
	t.Cleanup(s.Close)
	s.Enqueue(replies...)
	return s
}

// Config is the package's Config for this fake's URL.
func (s *Server) Config(extra string) string { return Config(s.URL(), extra) }

// Config returns a config.toml whose active provider, "fake", is the
// OpenAI-compatible server at baseURL: model "fake-model", API key
// "sk-test-secret", no retries (a test's scripted failure is seen at
// once). extra is appended to the [providers.fake] table, one key per
// line (for example `wire_api = "responses"`).
func Config(baseURL, extra string) string {
	return fmt.Sprintf(`[provider]
active = "fake"

[providers.fake]
kind = "openai"
base_url = %q
api_key = "sk-test-secret"
model = "fake-model"
max_retries = 0
%s`, baseURL, extra)
}
