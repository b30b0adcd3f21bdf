package appserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/scv-cli/scv/shared/atomicfile"
)

// The JSON Schema and TypeScript bundles, generated from the Go types.

// Names of the generated files.
const (
	SchemaDir       = "json"
	BundleFile      = "scv_app_server.schemas.json"
	ClientRequestTS = "scv_app_server.ts"
)

// methodTypes are a request's params and result types.
type methodTypes struct{ params, result any }

// clientRequests, serverNotifications and serverRequests are the protocol's
// methods and their types; a test checks that they match the dispatch.
var (
	clientRequests = map[string]methodTypes{
		"initialize":         {InitializeParams{}, InitializeResult{}},
		"thread/start":       {ThreadStartParams{}, Thread{}},
		"thread/resume":      {ResumeParams{}, ThreadReadResult{}},
		"thread/read":        {ResumeParams{}, ThreadReadResult{}},
		"thread/list":        {ThreadListParams{}, ThreadListResult{}},
		"thread/unsubscribe": {ThreadParams{}, ThreadUnsubscribeResult{}},
		"turn/start":         {TurnStartParams{}, TurnStartResult{}},
		"turn/steer":         {TurnSteerParams{}, TurnQueuedResult{}},
		"turn/followUp":      {TurnSteerParams{}, TurnQueuedResult{}},
		"turn/interrupt":     {TurnInterruptParams{}, TurnInterruptResult{}},
		"approval/resolve":   {ApprovalResolveParams{}, ApprovalResolveResult{}},
		"model/list":         {EmptyParams{}, ModelListResult{}},
		"schema/export":      {EmptyParams{}, SchemaExportResult{}},
	}
	serverNotifications = map[string]any{
		"thread/started":          Thread{},
		"thread/closed":           ThreadClosedParams{},
		"thread/status/changed":   ThreadStatusChangedParams{},
		"turn/started":            TurnStartedParams{},
		"turn/completed":          TurnCompletedParams{},
		"item/started":            Item{},
		"item/completed":          Item{},
		"item/agentMessage/delta": ItemDeltaParams{},
		"item/toolCall/delta":     ItemDeltaParams{},
		"approval/requested":      ApprovalRequestParams{},
		"approval/resolved":       ApprovalResolvedParams{},
	}
	serverRequests = map[string]methodTypes{
		"approval/request": {ApprovalRequestParams{}, ApprovalDecision{}},
	}
	// payloadTypes are the item payloads, in the bundle for clients that
	// decode them by item type.
	payloadTypes = []any{UserMessagePayload{}, AgentMessagePayload{}, ReasoningPayload{}, ToolCallPayload{}, ContextCompactionPayload{}, RPCError{}}
)

var rawMessageType = reflect.TypeFor[json.RawMessage]()

func reflector() *jsonschema.Reflector {
	return &jsonschema.Reflector{
		AllowAdditionalProperties: true,
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if t == rawMessageType {
				return &jsonschema.Schema{}
			}
			return nil
		},
	}
}

// protocolTypes are every type of the protocol, by name.
func protocolTypes() map[string]any {
	vals := map[string]any{}
	add := func(vs ...any) {
		for _, v := range vs {
			vals[typeName(v)] = v
		}
	}
	for _, m := range clientRequests {
		add(m.params, m.result)
	}
	for _, v := range serverNotifications {
		add(v)
	}
	for _, m := range serverRequests {
		add(m.params, m.result)
	}
	add(payloadTypes...)
	return vals
}

// allDefs reflects every protocol type into one $defs map.
func allDefs() (map[string]*jsonschema.Schema, error) {
	defs := map[string]*jsonschema.Schema{}
	for name, v := range protocolTypes() {
		s := reflector().Reflect(v)
		if len(s.Definitions) == 0 {
			return nil, fmt.Errorf("schema: %s reflected no definitions", name)
		}
		for n, d := range s.Definitions {
			defs[n] = d
		}
	}
	return defs, nil
}

func typeName(v any) string { return reflect.TypeOf(v).Name() }

func ref(v any) map[string]any { return map[string]any{"$ref": "#/$defs/" + typeName(v)} }

// envelopes is the oneOf of a message family: one branch per method.
func envelopes(methods []string, params func(string) any, withID bool) []any {
	var out []any
	for _, m := range methods {
		props := map[string]any{
			"jsonrpc": map[string]any{"const": "2.0"},
			"method":  map[string]any{"const": m},
			"params":  ref(params(m)),
		}
		required := []string{"method"}
		if withID {
			props["id"] = map[string]any{"type": []string{"string", "integer"}}
			required = append(required, "id")
		}
		out = append(out, map[string]any{"type": "object", "properties": props, "required": required})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// GenerateJSON returns the JSON Schema files by name (relative to the
// json/ directory): one per type, ClientRequest.json (request params by
// method), ServerNotification.json, ServerRequest.json and the bundle.
func GenerateJSON() (map[string][]byte, error) {
	defs, err := allDefs()
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	put := func(name string, v any) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("schema %s: %w", name, err)
		}
		files[name] = append(b, '\n')
		return nil
	}
	// One file a type, with the definitions it refers to.
	for name, v := range protocolTypes() {
		s := reflector().Reflect(v)
		s.Title = name
		if err := put(name+".json", s); err != nil {
			return nil, err
		}
	}
	families := map[string]any{
		"ClientRequest":      envelopes(sortedKeys(clientRequests), func(m string) any { return clientRequests[m].params }, true),
		"ServerNotification": envelopes(sortedKeys(serverNotifications), func(m string) any { return serverNotifications[m] }, false),
		"ServerRequest":      envelopes(sortedKeys(serverRequests), func(m string) any { return serverRequests[m].params }, true),
	}
	for name, oneOf := range families {
		if err := put(name+".json", map[string]any{"$schema": jsonschema.Version, "title": name, "oneOf": oneOf, "$defs": defs}); err != nil {
			return nil, err
		}
	}
	results := map[string]any{}
	for m, t := range clientRequests {
		results[m] = map[string]any{"params": ref(t.params), "result": ref(t.result)}
	}
	notes := map[string]any{}
	for m, t := range serverNotifications {
		notes[m] = ref(t)
	}
	reqs := map[string]any{}
	for m, t := range serverRequests {
		reqs[m] = map[string]any{"params": ref(t.params), "result": ref(t.result)}
	}
	bundle := map[string]any{
		"$schema": jsonschema.Version, "title": "SCV App Server protocol " + ProtocolVersion,
		"clientRequests": results, "serverNotifications": notes, "serverRequests": reqs, "$defs": defs,
	}
	if err := put(BundleFile, bundle); err != nil {
		return nil, err
	}
	return files, nil
}

// GenerateTS returns the TypeScript definitions of the protocol.
func GenerateTS() ([]byte, error) {
	defs, err := allDefs()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by `scv app-server generate-ts`; DO NOT EDIT.\n")
	b.WriteString("// SCV App Server protocol " + ProtocolVersion + ": JSON-RPC 2.0 over JSON lines (docs/app-server.md).\n\n")
	for _, name := range sortedKeys(defs) {
		fmt.Fprintf(&b, "export interface %s %s\n\n", name, tsObject(defs[name]))
	}
	table := func(title string, methods []string, typ func(string) string) {
		fmt.Fprintf(&b, "export interface %s {\n", title)
		for _, m := range methods {
			fmt.Fprintf(&b, "  %q: %s;\n", m, typ(m))
		}
		b.WriteString("}\n\n")
	}
	table("ClientRequests", sortedKeys(clientRequests), func(m string) string {
		return fmt.Sprintf("{ params: %s; result: %s }", typeName(clientRequests[m].params), typeName(clientRequests[m].result))
	})
	table("ServerNotifications", sortedKeys(serverNotifications), func(m string) string { return typeName(serverNotifications[m]) })
	table("ServerRequests", sortedKeys(serverRequests), func(m string) string {
		return fmt.Sprintf("{ params: %s; result: %s }", typeName(serverRequests[m].params), typeName(serverRequests[m].result))
	})
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// tsObject renders an object schema as a TypeScript object type.
func tsObject(s *jsonschema.Schema) string {
	if s.Properties == nil || s.Properties.Len() == 0 {
		return "{}"
	}
	var b strings.Builder
	b.WriteString("{\n")
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		opt := "?"
		if slices.Contains(s.Required, p.Key) {
			opt = ""
		}
		if p.Value.Description != "" {
			fmt.Fprintf(&b, "  /** %s */\n", p.Value.Description)
		}
		fmt.Fprintf(&b, "  %s%s: %s;\n", p.Key, opt, tsType(p.Value))
	}
	b.WriteString("}")
	return b.String()
}

// tsType renders a property schema as a TypeScript type.
func tsType(s *jsonschema.Schema) string {
	switch {
	case s.Ref != "":
		return strings.TrimPrefix(s.Ref, "#/$defs/")
	case len(s.OneOf) > 0:
		var parts []string
		for _, o := range s.OneOf {
			parts = append(parts, tsType(o))
		}
		return strings.Join(parts, " | ")
	case len(s.Enum) > 0:
		var parts []string
		for _, e := range s.Enum {
			b, _ := json.Marshal(e)
			parts = append(parts, string(b))
		}
		return strings.Join(parts, " | ")
	}
	switch s.Type {
	case "string":
		return "string"
	case "integer", "number":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		if s.Items != nil {
			return "Array<" + tsType(s.Items) + ">"
		}
		return "unknown[]"
	case "object":
		if s.Properties != nil && s.Properties.Len() > 0 {
			return tsObject(s)
		}
		return "Record<string, unknown>"
	}
	return "unknown"
}

// Bundle is schema/export's result.
func Bundle() (SchemaExportResult, error) {
	files, err := GenerateJSON()
	if err != nil {
		return SchemaExportResult{}, err
	}
	ts, err := GenerateTS()
	if err != nil {
		return SchemaExportResult{}, err
	}
	out := SchemaExportResult{JSONSchema: map[string]json.RawMessage{}, TypeScript: string(ts) + "\n"}
	for name, b := range files {
		if name == BundleFile || strings.HasSuffix(name, "Request.json") || name == "ServerNotification.json" {
			out.JSONSchema[name] = json.RawMessage(bytes.TrimSpace(b))
		}
	}
	return out, nil
}

// WriteSchema writes DIR/json/*.json (`scv app-server schema --out DIR`).
func WriteSchema(dir string) error {
	files, err := GenerateJSON()
	if err != nil {
		return err
	}
	return writeAll(filepath.Join(dir, SchemaDir), files)
}

// WriteTS writes DIR/scv_app_server.ts (`scv app-server generate-ts`).
func WriteTS(dir string) error {
	ts, err := GenerateTS()
	if err != nil {
		return err
	}
	return writeAll(dir, map[string][]byte{ClientRequestTS: append(ts, '\n')})
}

func writeAll(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	for _, name := range sortedKeys(files) {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), files[name], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
