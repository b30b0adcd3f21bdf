package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/mcp"
	"github.com/scv-cli/scv/shared/config"
	"github.com/scv-cli/scv/shared/paths"
)

// MCPServerStatus is one line of `scv mcp list --json`.
type MCPServerStatus struct {
	Name      string   `json:"name"`
	Transport string   `json:"transport"` // "stdio" or "http"
	State     string   `json:"state"`
	Error     string   `json:"error,omitempty"`
	Tools     []string `json:"tools"`
	Skipped   []string `json:"skipped,omitempty"`
}

// ListMCP starts the configured MCP servers the way a session runtime
// does, waits until each is ready or failed (at most its startup
// timeout), writes their status and tools to out (text, or JSON lines
// with asJSON), and stops them.
func ListMCP(ctx context.Context, env paths.Env, out io.Writer, asJSON bool, log *slog.Logger) error {
	if env == nil {
		env = paths.OSEnv()
	}
	home, err := paths.Home(env)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cfg, _, err := config.Load(config.LoadOptions{Home: home, Env: env})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if len(cfg.MCPServers) == 0 && !asJSON {
		_, err := fmt.Fprintf(out, "No MCP servers are configured; add one with `scv mcp add NAME -- COMMAND [ARGS...]` or in %s ([mcp_servers.<name>]).\n", paths.ConfigFile(home))
		return err
	}
	cwd, _ := os.Getwd()
	m := mcp.New(mcp.Options{Servers: cfg.MCPServers, Env: env, Dir: cwd, MaxRestarts: 1, Logger: log})
	m.Start(ctx)
	sctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	m.Settle(sctx)
	cancel()
	statuses := m.Statuses()
	m.Close()
	for _, st := range statuses {
		transport := "http"
		if cfg.MCPServers[st.Name].Stdio() {
			transport = "stdio"
		}
		if st.State == mcp.StateRestarting {
			st.State = mcp.StateFailed
		}
		if asJSON {
			b, err := json.Marshal(MCPServerStatus{Name: st.Name, Transport: transport, State: st.State, Error: st.Error, Tools: append([]string{}, st.Tools...), Skipped: st.Skipped})
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(out, "%s\n", b); err != nil {
				return err
			}
			continue
		}
		line := fmt.Sprintf("%s (%s): %s", st.Name, transport, st.State)
		if st.Error != "" {
			line += ": " + st.Error
		}
		if len(st.Tools) > 0 {
			line += fmt.Sprintf("\n  tools (%d): %s", len(st.Tools), strings.Join(st.Tools, ", "))
		}
		for _, s := range st.Skipped {
			line += "\n  not offered: " + s
		}
		if _, err := fmt.Fprintln(out, line); err != nil {
			return err
		}
	}
	return nil
}
