package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/testkit/nodepkg"
)

// EnvRealAdapters opts in to the tests against the real ACP adapters from
// npm (scripts/node/package.json pins them): they install about 500 MB
// (claude-agent-acp pulls a Claude Code binary, codex-acp a Rust binary),
// so they stay out of the default run.
const EnvRealAdapters = "SCV_TEST_REAL_ACP"

// realAdapter returns a Runner that runs the real adapter name's ACP
// server from the pinned npm packages, signed out in a temporary SCV
// home, or skips the test unless EnvRealAdapters is 1.
func realAdapter(t *testing.T, name, bin string, full bool) (*Runner, string, string) {
	t.Helper()
	if os.Getenv(EnvRealAdapters) != "1" {
		t.Skipf("set %s=1 to run the real ACP adapters from npm (about 550 MB, installed by scripts/node-deps.sh optin into .cache/node-optin)", EnvRealAdapters)
	}
	path := nodepkg.OptInBin(t, bin)
	a, ok := adapters.Get(name)
	if !ok {
		t.Fatalf("no adapter %s", name)
	}
	a.ACP.Path = path
	home, work := t.TempDir(), t.TempDir()
	perms := map[string]string{}
	if full {
		perms[name] = "full"
	}
	// Node finds itself through PATH; IS_SANDBOX lets claude-agent-acp
	// offer bypassPermissions when the tests run as root. The proxy
	// variables point at a closed port, so nothing reaches the network.
	base := []string{"PATH=" + filepath.Dir(nodepkg.Node(t)) + ":/usr/bin:/bin", "IS_SANDBOX=1", "NO_BROWSER=1",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9"}
	r := New(Options{Home: home, BaseEnv: base, Permissions: perms, Adapters: []adapters.Adapter{a}})
	t.Cleanup(r.Close)
	return r, home, work
}

func realCall(name, dir, prompt string) delegate.Call {
	return delegate.Call{Agent: name, Prompt: prompt, Dir: dir, Workspace: dir, Timeout: 2 * time.Minute,
		Handle: name + "-real", SessionID: "s1", Conversation: name + "-1", Turn: 1}
}

// TestRealCodexACPSignedOut: codex-acp answers session/new with -32000
// signed out, which becomes the sign-in hint; with an API key stored in
// its private home SCV authenticates with the env_var method, and the
// session's advertised models are the list a bad model selection names.
func TestRealCodexACPSignedOut(t *testing.T) {
	t.Parallel()
	r, home, work := realAdapter(t, adapters.Codex, "codex-acp", true)
	b, _ := r.Backend(adapters.Codex)
	res := b.Run(context.Background(), realCall(adapters.Codex, work, "Say hello."), nil)
	if res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorSignedOut || !strings.Contains(res.Error, "Authentication required") ||
		!strings.Contains(res.Hint, "scv agents login codex") {
		t.Fatalf("signed out = %+v", res)
	}
	codexHome := filepath.Join(home, "agents", "codex")
	if err := os.WriteFile(filepath.Join(codexHome, "auth.json"), []byte(`{"OPENAI_API_KEY":"sk-test-not-a-real-key"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c := realCall(adapters.Codex, work, "Say hello.")
	c.Model = "no-such-model"
	res = b.Run(context.Background(), c, nil)
	if res.Status != delegate.StatusFailed || !strings.Contains(res.Error, `does not offer model "no-such-model"; it offers `) {
		t.Fatalf("with a stored key and an unoffered model = %+v", res)
	}
	t.Logf("codex-acp: %s", res.Error)
	wantMode(t, r, res.CLISession, "full-access")
	r.Forget(res.CLISession)
}

// wantMode checks the mode the live server key's session runs in.
func wantMode(t *testing.T, r *Runner, key, mode string) {
	t.Helper()
	s := r.lookup(key)
	if s == nil {
		t.Fatalf("no live server %q", key)
	}
	s.mu.Lock()
	opt, ok := findOption(s.options, acpsdk.SessionConfigOptionCategoryMode, "mode")
	s.mu.Unlock()
	if !ok || string(opt.CurrentValue) != mode {
		t.Fatalf("mode option = %+v, want current %q", opt, mode)
	}
}

// TestRealClaudeACPSignedOut: claude-agent-acp opens the session signed
// out and answers the first prompt with -32000, which becomes the hint;
// its advertised models are the list a bad model selection names, and
// its bypassPermissions mode is selected under permissions = "full".
func TestRealClaudeACPSignedOut(t *testing.T) {
	t.Parallel()
	r, _, work := realAdapter(t, adapters.Claude, "claude-agent-acp", true)
	b, _ := r.Backend(adapters.Claude)
	c := realCall(adapters.Claude, work, "Say hello.")
	c.Model = "no-such-model"
	res := b.Run(context.Background(), c, nil)
	if res.Status != delegate.StatusFailed || !strings.Contains(res.Error, `does not offer model "no-such-model"; it offers `) {
		t.Fatalf("unoffered model = %+v", res)
	}
	t.Logf("claude-agent-acp: %s", res.Error)
	wantMode(t, r, res.CLISession, "bypassPermissions")
	res = b.Run(context.Background(), realCall(adapters.Claude, work, "Say hello."), nil)
	if res.Status != delegate.StatusFailed || res.Kind != delegate.ErrorSignedOut || !strings.Contains(res.Hint, "scv agents login claude") {
		t.Fatalf("signed out = %+v", res)
	}
}
