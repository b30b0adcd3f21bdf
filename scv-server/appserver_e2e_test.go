package main_test

// End-to-end test of `scv app-server`: the real scv binary (which execs
// the scv-server built by TestMain) against the scripted model, driven
// from Node by vscode-jsonrpc, every line validated against the schema the
// server exports (docs/app-server-schema, kept equal to the Go types by
// the dialect's drift test).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	fo "github.com/scv-cli/scv/shared/fakeopenai"
	"github.com/scv-cli/scv/shared/testkit/nodepkg"
)

func TestAppServerVSCodeJSONRPC(t *testing.T) {
	node := nodepkg.Node(t)
	rpc := nodepkg.Package(t, "vscode-jsonrpc")
	root, err := nodepkg.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	f, home, ws := acpSetup(t)
	f.Enqueue(fo.Script(fo.ToolCall("c1", "bash", `{"command":"touch touched"}`)), fo.Script(fo.Text("touched it")), fo.Script(fo.Hang()))
	transcript := filepath.Join(t.TempDir(), "server.jsonl")
	out, stderr := runNodeDriver(t, node, filepath.Join(root, "scripts", "node", "app-server-e2e.mjs"), home,
		"JSONRPC_DIR="+rpc, "SCV_BIN="+scvBin(t), "APP_CWD="+ws, "APP_TRANSCRIPT="+transcript)
	var sum struct {
		Init struct {
			ProtocolVersion string          `json:"protocolVersion"`
			Capabilities    map[string]bool `json:"capabilities"`
		} `json:"init"`
		ThreadStatus string `json:"threadStatus"`
		TurnStatus   string `json:"turnStatus"`
		Turn1        struct{ Status, FinalOutput string }
		Approvals    []string `json:"approvals"`
		Resolved     []string `json:"resolved"`
		File         bool     `json:"file"`
		ReadItems    []string `json:"readItems"`
		Stale        any      `json:"stale"`
		Interrupted  string   `json:"interrupted"`
		NoTurn       any      `json:"noTurn"`
		Models       []string `json:"models"`
		SchemaFiles  []string `json:"schemaFiles"`
		Unknown      any      `json:"unknownMethod"`
		BadParams    any      `json:"badParams"`
		List         []bool   `json:"list"`
		Exit         struct {
			Code *int `json:"code"`
		} `json:"exit"`
	}
	if err := json.Unmarshal(out, &sum); err != nil {
		t.Fatalf("summary %s: %v", out, err)
	}
	t.Logf("summary: %s", out)
	switch {
	case sum.Init.ProtocolVersion != "v1" || !sum.Init.Capabilities["threadLifecycle"]:
		t.Errorf("initialize %+v", sum.Init)
	case sum.ThreadStatus != "idle" || sum.TurnStatus != "running":
		t.Errorf("thread %s, turn %s", sum.ThreadStatus, sum.TurnStatus)
	case sum.Turn1.Status != "completed" || sum.Turn1.FinalOutput != "touched it" || !sum.File:
		t.Errorf("first turn %+v, file made %v", sum.Turn1, sum.File)
	case !slices.Equal(sum.Approvals, []string{"bash"}) || !slices.Equal(sum.Resolved, []string{"allow"}):
		t.Errorf("approvals %v, resolved %v", sum.Approvals, sum.Resolved)
	case !slices.Equal(sum.ReadItems, []string{"userMessage:completed", "toolCall:completed", "agentMessage:completed"}):
		t.Errorf("thread/read items %v", sum.ReadItems)
	case sum.Stale != -32031.0 || sum.Interrupted != "interrupted" || sum.NoTurn != -32030.0:
		t.Errorf("stale %v, interrupted %q, no turn %v", sum.Stale, sum.Interrupted, sum.NoTurn)
	case len(sum.Models) != 1 || len(sum.SchemaFiles) != 4:
		t.Errorf("models %v, schema files %v", sum.Models, sum.SchemaFiles)
	case sum.Unknown != -32601.0 || sum.BadParams != -32602.0:
		t.Errorf("errors: unknown method %v, bad params %v", sum.Unknown, sum.BadParams)
	case !slices.Equal(sum.List, []bool{true}):
		t.Errorf("thread/list %v", sum.List)
	case sum.Exit.Code == nil || *sum.Exit.Code != 0:
		t.Errorf("scv app-server exit %+v; stderr:\n%s", sum.Exit, stderr)
	}
	validateAppServer(t, filepath.Join(root, "docs", "app-server-schema", "json", "scv_app_server.schemas.json"), transcript)
}

// validateAppServer checks every line of both sides against the exported
// bundle: requests' params, responses' results (by the request's method),
// notifications' and server requests' params.
func validateAppServer(t *testing.T, bundlePath, path string) {
	t.Helper()
	raw, err := os.ReadFile(bundlePath)
	if err != nil {
		t.Fatal(err)
	}
	var bundle struct {
		Defs     map[string]*jsonschema.Schema `json:"$defs"`
		Requests map[string]struct {
			Params, Result struct {
				Ref string `json:"$ref"`
			}
		} `json:"clientRequests"`
		Notes map[string]struct {
			Ref string `json:"$ref"`
		} `json:"serverNotifications"`
		ServerRequests map[string]struct {
			Params, Result struct {
				Ref string `json:"$ref"`
			}
		} `json:"serverRequests"`
	}
	if err := json.Unmarshal(raw, &bundle); err != nil {
		t.Fatalf("the bundle: %v", err)
	}
	resolved := map[string]*jsonschema.Resolved{}
	def := func(ref string) *jsonschema.Resolved {
		if r, ok := resolved[ref]; ok {
			return r
		}
		r, err := (&jsonschema.Schema{Ref: ref, Defs: bundle.Defs}).Resolve(nil)
		if err != nil {
			t.Fatalf("resolving %s: %v", ref, err)
		}
		resolved[ref] = r
		return r
	}
	type msg struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  any             `json:"params"`
		Result  any             `json:"result"`
		Error   any             `json:"error"`
	}
	clientMethods := map[string]string{} // request id → method
	checked := 0
	check := func(side string, i int, l, ref string, v any) {
		if ref == "" {
			t.Errorf("%s line %d: no schema for %s", side, i+1, l)
			return
		}
		if err := def(ref).Validate(v); err != nil {
			t.Errorf("%s line %d does not validate against %s: %v\n%s", side, i+1, ref, err, l)
		}
		checked++
	}
	for i, l := range readLines(t, path+".client") {
		var m msg
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("client line %d: %v\n%s", i+1, err, l)
		}
		switch {
		case m.Method != "" && m.ID != nil:
			clientMethods[string(m.ID)] = m.Method
			if m.Method == "thread/fly" || m.Method == "turn/start" && m.Params.(map[string]any)["input"] == nil {
				continue // the deliberate errors
			}
			check("client", i, l, bundle.Requests[m.Method].Params.Ref, m.Params)
		case m.Method == "" && m.ID != nil: // the answer to approval/request
			check("client", i, l, bundle.ServerRequests["approval/request"].Result.Ref, m.Result)
		}
	}
	lines := readLines(t, path)
	if len(lines) < 20 {
		t.Fatalf("only %d server lines recorded", len(lines))
	}
	for i, l := range lines {
		var m msg
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.JSONRPC != "2.0" {
			t.Fatalf("server line %d without jsonrpc 2.0: %v\n%s", i+1, err, l)
		}
		switch {
		case m.Method != "" && m.ID != nil:
			check("server", i, l, bundle.ServerRequests[m.Method].Params.Ref, m.Params)
		case m.Method != "":
			check("server", i, l, bundle.Notes[m.Method].Ref, m.Params)
		case m.Error != nil:
			check("server", i, l, "#/$defs/RPCError", m.Error)
		default:
			check("server", i, l, bundle.Requests[clientMethods[string(m.ID)]].Result.Ref, m.Result)
		}
	}
	t.Logf("%d server lines validated against %s (%d checks)", len(lines), bundlePath, checked)
}
