package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/scv-cli/scv/shared/testkit"
)

// helperVar makes the test binary an MCP server over stdio (goServer).
const helperVar = "SCV_MCP_TEST_SERVER"

// pidFileVar names a file the helper server appends its pid to as it
// starts, one line per start.
const pidFileVar = "SCV_MCP_PID_FILE"

func appendLine(file, line string) {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	_, _ = fmt.Fprintln(f, line)
}

func TestMain(m *testing.M) {
	if os.Getenv(helperVar) == "1" {
		if f := os.Getenv(pidFileVar); f != "" {
			appendLine(f, strconv.Itoa(os.Getpid()))
		}
		if err := goServer().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	restore := testkit.IsolateHome()
	code := m.Run()
	restore()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// goServer is a server from the SDK with the tools the tests need: echo,
// huge (a result over the output limit), crash (the process exits in the
// middle of the call), hang (never answers), a tool with a schema the
// validator cannot resolve, one with a name providers refuse, and one
// without properties (repaired).
func goServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "scv-test", Version: "1"}, nil)
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	args := func(req *sdk.CallToolRequest) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(req.Params.Arguments, &m)
		return m
	}
	s.AddTool(&sdk.Tool{Name: "echo", InputSchema: obj(`"message":{"type":"string"}`), Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text("echo: " + fmt.Sprint(args(req)["message"])), nil
		})
	s.AddTool(&sdk.Tool{Name: "huge", InputSchema: obj(`"bytes":{"type":"integer"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			n := int(args(req)["bytes"].(float64))
			return text("HEAD" + strings.Repeat("é", n/2) + "TAIL"), nil
		})
	s.AddTool(&sdk.Tool{Name: "crash", InputSchema: obj("")},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(&sdk.Tool{Name: "hang", InputSchema: obj("")},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			<-ctx.Done() // notifications/cancelled ends it
			if f := os.Getenv("SCV_MCP_CANCELLED_FILE"); f != "" {
				_ = os.WriteFile(f, []byte("cancelled"), 0o600)
			}
			return nil, ctx.Err()
		})
	s.AddTool(&sdk.Tool{Name: "badref", InputSchema: obj(`"a":{"$ref":"#/$defs/missing"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("no"), nil })
	s.AddTool(&sdk.Tool{Name: "bad.name", InputSchema: obj("")},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("no"), nil })
	s.AddTool(&sdk.Tool{Name: "noprops", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return text("ok"), nil })
	return s
}

// settle waits for the manager's servers, bounded.
func settle(t testing.TB, m *Manager) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m.Settle(ctx)
	if ctx.Err() != nil {
		t.Fatalf("servers did not settle: %+v", m.Statuses())
	}
}
