package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/paths"
)

func TestMCPServers(t *testing.T) {
	t.Parallel()
	user := `[mcp_servers.files]
command = "npx"
args = ["-y", "server-filesystem", "/tmp"]
env = { TOKEN = "$SECRET_TOKEN", PLAIN = "plain-secret-1" }
tool_timeout_seconds = 5
disabled_tools = ["write_file"]

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer header-secret-2" }
enabled = false
`
	f := newFixture(t, user, "")
	c, _ := mustLoad(t, f, nil)
	fs, ok := c.MCPServers["files"]
	if !ok || !fs.Stdio() || !fs.Enabled || fs.StartupTimeoutSeconds != 10 || fs.ToolTimeoutSeconds != 5 {
		t.Fatalf("files = %#v", fs)
	}
	if fs.ToolAllowed("write_file") || !fs.ToolAllowed("read_file") {
		t.Error("disabled_tools not applied")
	}
	r := c.MCPServers["remote"]
	if r.Stdio() || r.Enabled || r.Headers["Authorization"] != "Bearer header-secret-2" {
		t.Fatalf("remote = %#v", r)
	}
	// Never printed: %v, %#v, JSON and the entries `scv config` shows.
	outs := []string{fmt.Sprintf("%v", c), fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", c.MCPServers), fmt.Sprint(fs)}
	j, _ := json.Marshal(c)
	outs = append(outs, string(j))
	for _, e := range c.Entries(paths.MapEnv(nil)) {
		outs = append(outs, fmt.Sprint(e.Value))
	}
	for _, o := range outs {
		for _, secret := range []string{"plain-secret-1", "header-secret-2", "SECRET_TOKEN"} {
			if strings.Contains(o, secret) {
				t.Errorf("%q printed in %s", secret, o)
			}
		}
	}
}

func TestMCPServersErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ user, want string }{
		{"[mcp_servers.x]\nargs = [\"a\"]\n", "has neither command (a stdio server) nor url"},
		{"[mcp_servers.x]\ncommand = \"a\"\nurl = \"http://h/\"\n", "has both command and url"},
		{"[mcp_servers.x]\nurl = \"ftp://h/\"\n", "is \"ftp://h/\", which is not an http(s) URL"},
		{"[mcp_servers.x]\nurl = \"http://h/\"\ncwd = \"/\"\n", "only a stdio server (command) takes"},
		{"[mcp_servers.x]\ncommand = \"a\"\nheaders = { A = \"b\" }\n", "only an HTTP server (url) takes headers"},
		{"[mcp_servers.\"a__b\"]\ncommand = \"a\"\n", "names the server \"a__b\""},
		{"[mcp_servers.x]\ncommand = \"a\"\nenv = { \"1A\" = \"b\" }\n", "not an environment variable name"},
		{"[mcp_servers.x]\ncommand = \"a\"\nstartup_timeout_seconds = 0\n", "startup_timeout_seconds\" is 0, out of range"},
		{"[mcp_servers.x]\ncommand = \"a\"\nenabled_tools = [\"t\"]\ndisabled_tools = [\"t\"]\n", "enabled_tools also names"},
		{"[mcp_servers.x]\ncommand = \"a\"\nbogus = 1\n", "unknown key \"mcp_servers.x.bogus\""},
	}
	for _, tt := range tests {
		f := newFixture(t, tt.user, "")
		_, _, err := f.load(nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.user, err, tt.want)
		}
	}
}

func TestMCPServersRefusedInProject(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "[mcp_servers.evil]\ncommand = \"curl\"\n")
	_, _, err := f.load(nil)
	var ce *Error
	if !errors.As(err, &ce) || ce.File != f.projectFile || ce.Line != 1 || !strings.Contains(ce.Message, "refused in a project config") {
		t.Fatalf("err = %v", err)
	}
}

func TestResolveValue(t *testing.T) {
	t.Parallel()
	env := paths.MapEnv(map[string]string{"TOK": "v1"})
	for in, want := range map[string]string{"$TOK": "v1", "${TOK}": "v1", "plain": "plain", "a$TOK": "a$TOK"} {
		if got, err := ResolveValue(in, env); err != nil || got != want {
			t.Errorf("ResolveValue(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ResolveValue("$NOPE", env); err == nil || !strings.Contains(err.Error(), "NOPE is not set") {
		t.Errorf("unset: %v", err)
	}
}
