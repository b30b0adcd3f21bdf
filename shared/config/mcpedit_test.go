package config

import (
	"os"
	"path/filepath"
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

// TestMCPEditKeepsASymlinkedConfig: a config.toml that is a symbolic link
// (into a dotfiles checkout) is edited where it points and stays a link; a
// dangling link is refused with what to do.
func TestMCPEditKeepsASymlinkedConfig(t *testing.T) {
	t.Parallel()
	home, dots := t.TempDir(), t.TempDir()
	real := filepath.Join(dots, "scv.toml")
	if err := os.WriteFile(real, []byte("# in my dotfiles\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, "config.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	env := paths.MapEnv(nil)
	s := DefaultMCPServer()
	s.Command = "k"
	if err := AddMCPServer(home, "files", s, env); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("config.toml is no longer a link: %v %v", fi, err)
	}
	if data, _ := os.ReadFile(real); !strings.HasPrefix(string(data), "# in my dotfiles\n") || !strings.Contains(string(data), "[mcp_servers.files]") {
		t.Fatalf("the linked file holds:\n%s", data)
	}
	if err := RemoveMCPServer(home, "files", env); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(real); string(data) != "# in my dotfiles\n" {
		t.Fatalf("after the removal the linked file holds:\n%s", data)
	}

	gone := t.TempDir()
	if err := os.Symlink(filepath.Join(gone, "missing.toml"), filepath.Join(gone, "config.toml")); err != nil {
		t.Fatal(err)
	}
	err := AddMCPServer(gone, "files", s, env)
	if err == nil {
		t.Fatal("a dangling link was written through")
	}
	if !strings.Contains(err.Error(), "symbolic link that cannot be followed") {
		t.Errorf("dangling link: %v; want it named", err)
	}
	if _, serr := os.Stat(filepath.Join(gone, "missing.toml")); serr == nil {
		t.Errorf("the dangling link's target was created (error %v)", err)
	}
}
