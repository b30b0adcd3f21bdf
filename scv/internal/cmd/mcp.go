package cmd

import (
	"fmt"
	"strings"

	"github.com/scv-cli/scv/scv/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/spf13/cobra"
)

// newCmdMCP returns `scv mcp`: list runs `scv-server mcp list` (the server
// starts the servers and reports them); add and remove edit the user
// configuration file atomically. env nil means the process environment.
func newCmdMCP(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	if env == nil {
		env = paths.OSEnv()
	}
	root := &cobra.Command{
		Use:   "mcp COMMAND",
		Short: "MCP servers: list, add, remove",
		Long: `The Model Context Protocol servers whose tools sessions offer (docs/mcp.md):
	scv mcp list [--json]                          start each server, show its state and tools
	scv mcp add NAME [flags] -- COMMAND [ARGS...]  a stdio server
	scv mcp add NAME --url URL [--header K=V]      a Streamable HTTP server
	scv mcp remove NAME`,
		Args: cli.NoArgs,
	}
	root.AddCommand(newCmdMCPList(f), newCmdMCPAdd(f, env), newCmdMCPRemove(f, env))
	return root
}

// newCmdMCPList is `scv mcp list`: scv-server starts the servers.
func newCmdMCPList(f *cmdutil.Factory) *cobra.Command {
	var asJSON bool
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "Start the configured MCP servers, show their state and tools, stop them",
		Args:  cli.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			path, err := f.FindBinary(client.Server)
			if err != nil {
				return err
			}
			args := []string{client.Server, "mcp", "list"}
			if asJSON {
				args = append(args, "--json")
			}
			return f.Exec(path, args)
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "one JSON object a line")
	return list
}

// newCmdMCPAdd is `scv mcp add`: a server into the user configuration.
func newCmdMCPAdd(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	var (
		envs, headers []string
		url, cwd      string
		disabled      bool
		toolTimeout   int
	)
	add := &cobra.Command{
		Use:   "add NAME [flags] [-- COMMAND [ARGS...]]",
		Short: "Add [mcp_servers.NAME] to your configuration file",
		Long: `Add a server to the user configuration file ($SCV_HOME/config.toml), written
atomically; the file is left unchanged when the result would not load.
--env and --header values may name a variable ("$TOKEN"), read when the
server starts; they are never printed.`,
		Example: `  scv mcp add files -- npx -y @modelcontextprotocol/server-filesystem ~/notes
  scv mcp add tracker --url https://mcp.example.com/mcp --header 'Authorization=$TRACKER_TOKEN'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			s := config.DefaultMCPServer()
			s.URL, s.Cwd, s.Enabled, s.ToolTimeoutSeconds = url, cwd, !disabled, toolTimeout
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				if dash != 1 {
					return cli.UsageErrorf("give the server's name, then -- and its command: scv mcp add NAME -- COMMAND [ARGS...]")
				}
				if len(args) > 1 {
					s.Command, s.Args = args[1], args[2:]
				}
			} else if len(args) > 1 {
				return cli.UsageErrorf("put -- before the server's command: scv mcp add %s -- %s", name, strings.Join(args[1:], " "))
			}
			if s.Command == "" && s.URL == "" {
				return cli.UsageErrorf("give a command (scv mcp add %s -- COMMAND [ARGS...]) or --url URL", name)
			}
			var err error
			if s.Env, err = pairs("--env", envs); err != nil {
				return err
			}
			if s.Headers, err = pairs("--header", headers); err != nil {
				return err
			}
			home, err := paths.Home(env)
			if err != nil {
				return err
			}
			if err := config.AddMCPServer(home, name, s, env); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "Added MCP server %s to %s; `scv mcp list` starts it and shows its tools, and running sessions (the daemon's, a TUI's) offer them from their next prompt.\n", name, paths.ConfigFile(home))
			return nil
		},
	}
	add.Flags().StringArrayVar(&envs, "env", nil, "KEY=VALUE for a stdio server's environment (repeatable)")
	add.Flags().StringArrayVar(&headers, "header", nil, "NAME=VALUE sent to an HTTP server (repeatable)")
	add.Flags().StringVar(&url, "url", "", "the endpoint of a Streamable HTTP server")
	add.Flags().StringVar(&cwd, "cwd", "", "a stdio server's working directory")
	add.Flags().BoolVar(&disabled, "disabled", false, "configure it with enabled = false")
	add.Flags().IntVar(&toolTimeout, "tool-timeout", 0, "tool_timeout_seconds (default 60)")
	return add
}

// newCmdMCPRemove is `scv mcp remove`.
func newCmdMCPRemove(f *cmdutil.Factory, env paths.Env) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove [mcp_servers.NAME] from your configuration file",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			home, err := paths.Home(env)
			if err != nil {
				return err
			}
			if err := config.RemoveMCPServer(home, args[0], env); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "Removed MCP server %s from %s; running sessions stop offering its tools at their next prompt.\n", args[0], paths.ConfigFile(home))
			return nil
		},
	}
}

// pairs parses KEY=VALUE flag values.
func pairs(flag string, vs []string) (map[string]string, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, v := range vs {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" {
			return nil, cli.UsageErrorf("%s %q: write it as KEY=VALUE", flag, v)
		}
		m[k] = val
	}
	return m, nil
}
