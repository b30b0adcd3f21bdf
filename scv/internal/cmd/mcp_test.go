package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/paths"
)

func TestMCPCommands(t *testing.T) {
	home := t.TempDir()
	env := paths.MapEnv(map[string]string{"SCV_HOME": home})
	var argv []string
	out := &bytes.Buffer{}
	f := &cmdutil.Factory{
		IO:         &cmdutil.IOStreams{In: &bytes.Buffer{}, Out: out, ErrOut: &bytes.Buffer{}},
		FindBinary: func(name string) (string, error) { return "/opt/" + name, nil },
		Exec:       func(_ string, a []string) error { argv = a; return nil },
	}
	run := func(args ...string) error {
		c := newCmdMCP(f, env)
		c.SetArgs(args)
		c.SetOut(out)
		c.SetErr(out)
		return c.Execute()
	}
	if err := run("list", "--json"); err != nil || !slices.Equal(argv, []string{"scv-server", "mcp", "list", "--json"}) {
		t.Fatalf("list: %v %q", err, argv)
	}
	if err := run("add", "files", "--env", "TOKEN=$TOK", "--", "npx", "-y", "server-filesystem", "/tmp"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(home, "config.toml"))
	want := "[mcp_servers.files]\ncommand = \"npx\"\nargs = [\"-y\", \"server-filesystem\", \"/tmp\"]\nenv = { TOKEN = \"$TOK\" }\n"
	if string(data) != want {
		t.Fatalf("config.toml:\n%s\nwant:\n%s", data, want)
	}
	if err := run("add", "web", "--url", "https://mcp.example.com/mcp", "--header", "Authorization=$T"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]string{{"add", "x"}, {"add", "x", "npx"}, {"add", "x", "--env", "NOEQUALS", "--", "a"}} {
		if err := run(bad...); err == nil || !cli.IsUsage(err) {
			t.Errorf("%q: %v, want a usage error", bad, err)
		}
	}
	if err := run("remove", "files"); err != nil {
		t.Fatal(err)
	}
	if err := run("remove", "web"); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(home, "config.toml")); strings.TrimSpace(string(data)) != "" {
		t.Errorf("after removing both: %q", data)
	}
	if err := run("remove", "web"); err == nil || !strings.Contains(err.Error(), "no MCP server named") {
		t.Errorf("second remove: %v", err)
	}
}
