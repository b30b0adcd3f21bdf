package mcp

import (
	"context"
	"fmt"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/config"
)

// BenchmarkCall is one MCP call against a local stdio server (the SDK's Go
// server in the test binary) the way a turn makes it: validation against
// the server's schema, prepare, the call with its progress token and
// timeout, and the result fitted to the output limit.
func BenchmarkCall(b *testing.B) {
	m := start(b, Options{Servers: map[string]config.MCPServer{"go": goStdio(b)}})
	reg := tools.NewRegistry()
	reg.AddSource(m)
	env := tools.Env{OutputLimit: 64 << 10}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		args, err := reg.Validate("mcp__go__echo", `{"message":"hi"}`)
		if err != nil {
			b.Fatal(err)
		}
		tl, _ := reg.Lookup("mcp__go__echo")
		plan, err := tl.Prepare(env, args)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := plan.Run(ctx); err != nil || res.Output != "echo: hi" {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkCallSDK is the same call made with the SDK alone, the baseline
// BenchmarkCall's overhead is measured against.
func BenchmarkCallSDK(b *testing.B) {
	m := start(b, Options{Servers: map[string]config.MCPServer{"go": goStdio(b)}})
	sess := m.servers[0].session()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReconcileUnchanged is what every App Server turn/start pays
// when the configuration's MCP servers did not change: a comparison, no
// process touched.
func BenchmarkReconcileUnchanged(b *testing.B) {
	servers := map[string]config.MCPServer{}
	for i := range 8 {
		s := stdioServer("/nonexistent/mcp-server", "--flag", "value")
		s.Env = map[string]string{"TOKEN": "$TOKEN"}
		s.Enabled = false
		servers[fmt.Sprintf("server%d", i)] = s
	}
	m := start(b, Options{Servers: servers})
	gen := m.Generation()
	b.ReportAllocs()
	for b.Loop() {
		m.Reconcile(servers)
	}
	if m.Generation() != gen {
		b.Fatal("an unchanged configuration moved the generation")
	}
}
