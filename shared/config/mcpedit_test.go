package config

import (
	"os"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/paths"
)

func TestAddRemoveMCPServer(t *testing.T) {
	t.Parallel()
	const user = "# mine\n[tools]\noutput_limit_bytes = 65536\n\n[mcp_servers.keep]\ncommand = \"k\"\n\n# after\n[skills]\nmax_skills = 10\n"
	f := newFixture(t, user, "")
	env := paths.MapEnv(nil)
	s := DefaultMCPServer()
	s.Command, s.Args, s.Env = "npx", []string{"-y", "a \"quoted\"\targ"}, map[string]string{"TOKEN": "$TOK"}
	s.ToolTimeoutSeconds = 5
	if err := AddMCPServer(f.home, "files", s, env); err != nil {
		t.Fatal(err)
	}
	c, _ := mustLoad(t, f, nil)
	got := c.MCPServers["files"]
	if got.Command != "npx" || len(got.Args) != 2 || got.Args[1] != "a \"quoted\"\targ" || got.Env["TOKEN"] != "$TOK" || got.ToolTimeoutSeconds != 5 || !got.Enabled {
		t.Fatalf("added %#v", got)
	}
	if err := AddMCPServer(f.home, "files", s, env); err == nil || !strings.Contains(err.Error(), "already configured") {
		t.Errorf("second add: %v", err)
	}
	bad := DefaultMCPServer() // neither command nor url
	before, _ := os.ReadFile(f.userFile)
	if err := AddMCPServer(f.home, "bad", bad, env); err == nil || !strings.Contains(err.Error(), "not made") {
		t.Errorf("bad add: %v", err)
	}
	if after, _ := os.ReadFile(f.userFile); string(after) != string(before) {
		t.Error("a refused add changed the file")
	}
	if err := RemoveMCPServer(f.home, "keep", env); err != nil {
		t.Fatal(err)
	}
	if err := RemoveMCPServer(f.home, "files", env); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(f.userFile); string(data) != "# mine\n[tools]\noutput_limit_bytes = 65536\n\n# after\n[skills]\nmax_skills = 10\n" {
		t.Errorf("after removing both:\n%s", data)
	}
	if err := RemoveMCPServer(f.home, "files", env); err == nil || !strings.Contains(err.Error(), "no MCP server named") {
		t.Errorf("second remove: %v", err)
	}
}
