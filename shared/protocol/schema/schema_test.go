package schema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/scv-cli/scv/shared/protocol"
	"github.com/scv-cli/scv/shared/testkit/golden"
)

// committedDir is docs/schema at the root of the repository.
var committedDir = filepath.Join("..", "..", "..", "docs", "schema")

const regenerate = "run `go test ./protocol/schema -update` in shared/ (or `scv-server schema --out docs/schema`) and commit the result"

// TestSchemaGolden is the drift test: docs/schema must be what Generate
// returns. With -update it rewrites docs/schema instead.
func TestSchemaGolden(t *testing.T) {
	if golden.Update() {
		if err := Write(committedDir); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(committedDir); err != nil {
		t.Fatalf("docs/schema: %v; %s", err, regenerate)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		got, err := os.ReadFile(filepath.Join(committedDir, filepath.FromSlash(name)))
		if err != nil {
			t.Errorf("docs/schema/%s: %v; %s", name, err, regenerate)
			continue
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("docs/schema/%s differs from the generated schema; %s", name, regenerate)
		}
	}
	for _, sub := range []string{ClientDir, ServerDir} {
		entries, err := os.ReadDir(filepath.Join(committedDir, sub))
		if err != nil {
			t.Errorf("docs/schema/%s: %v; %s", sub, err, regenerate)
			continue
		}
		for _, e := range entries {
			if _, ok := files[path.Join(sub, e.Name())]; !ok && strings.HasSuffix(e.Name(), ".json") {
				t.Errorf("docs/schema/%s/%s is stale: no message has that type; %s", sub, e.Name(), regenerate)
			}
		}
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()
	a, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := Generate()
		if err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(a, b, bytes.Equal) {
			t.Fatal("two calls of Generate differ")
		}
	}
}

func TestGenerateCoversEveryType(t *testing.T) {
	t.Parallel()
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{IndexFile}
	for _, typ := range protocol.ClientMessageTypes() {
		want = append(want, ClientDir+"/"+typ+".json")
	}
	for _, typ := range protocol.EventTypes() {
		want = append(want, ServerDir+"/"+typ+".json")
	}
	slices.Sort(want)
	if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, want) {
		t.Errorf("files\n got %v\nwant %v", got, want)
	}
	for name, b := range files {
		if !bytes.HasSuffix(b, []byte("}\n")) || bytes.HasSuffix(b, []byte("\n\n")) {
			t.Errorf("%s does not end in exactly one newline", name)
		}
		if !bytes.HasPrefix(b, []byte("{\n  \"")) {
			t.Errorf("%s is not indented by two spaces", name)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		var re bytes.Buffer
		json.Indent(&re, compact.Bytes(), "", "  ")
		re.WriteByte('\n')
		if !bytes.Equal(re.Bytes(), b) {
			t.Errorf("%s is not in json.Indent's two-space form", name)
		}
		if bytes.Contains(b, []byte(`\u00`)) {
			t.Errorf("%s has an escaped character; keep descriptions free of <, > and &", name)
		}
	}
}

// schemaDoc is the part of a generated schema the structural tests read.
type schemaDoc struct {
	Schema               string               `json:"$schema"`
	Title                string               `json:"title"`
	Description          string               `json:"description"`
	Type                 string               `json:"type"`
	Const                any                  `json:"const"`
	Enum                 []string             `json:"enum"`
	Properties           map[string]schemaDoc `json:"properties"`
	Items                *schemaDoc           `json:"items"`
	Required             []string             `json:"required"`
	AdditionalProperties *bool                `json:"additionalProperties"`
}

func readDoc(t *testing.T, files map[string][]byte, name string) schemaDoc {
	t.Helper()
	var d schemaDoc
	if err := json.Unmarshal(files[name], &d); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d
}

// requiredFields lists the JSON names of the fields of a struct type that
// are not omitempty, with embedded structs inlined, as encoding/json
// writes them.
func requiredFields(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			out = append(out, requiredFields(f.Type)...)
			continue
		}
		if name == "-" || !f.IsExported() || strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			continue
		}
		out = append(out, name)
	}
	return out
}

func TestMessageSchemas(t *testing.T) {
	t.Parallel()
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	check := func(dir, typ string, goType reflect.Type, client bool) {
		name := dir + "/" + typ + ".json"
		d := readDoc(t, files, name)
		if d.Schema != "https://json-schema.org/draft/2020-12/schema" {
			t.Errorf("%s: $schema %q", name, d.Schema)
		}
		if d.Title != typ || d.Description == "" || d.Type != "object" {
			t.Errorf("%s: title %q, description %q, type %q", name, d.Title, d.Description, d.Type)
		}
		tp, ok := d.Properties["type"]
		if !ok || tp.Const != typ || tp.Type != "string" {
			t.Errorf("%s: the type property is %+v, want a string const %q", name, tp, typ)
		}
		if first := firstPropertyName(t, files[name]); first != "type" {
			t.Errorf("%s: first property %q, want type", name, first)
		}
		want := append([]string{"type"}, requiredFields(goType)...)
		if !slices.Equal(d.Required, want) {
			t.Errorf("%s: required %v, want %v", name, d.Required, want)
		}
		walkObjects(d, name, func(where string, o schemaDoc) {
			if o.AdditionalProperties == nil || *o.AdditionalProperties != client {
				t.Errorf("%s: additionalProperties must be stated %v", where, client)
			}
		})
		walkProperties(d, name, func(where string, p schemaDoc) {
			if p.Description == "" {
				t.Errorf("%s has no description; add one to fieldDescriptions", where)
			}
		})
	}
	for _, typ := range protocol.ClientMessageTypes() {
		check(ClientDir, typ, reflect.TypeOf(protocol.NewClientMessage(typ)), true)
	}
	for _, typ := range protocol.EventTypes() {
		check(ServerDir, typ, reflect.TypeOf(protocol.NewEvent(typ)), false)
	}

	// The closed string sets are enums.
	risk := readDoc(t, files, "server/approval.requested.json").Properties["risk"]
	if !slices.Equal(risk.Enum, toStrings(protocol.Risks)) {
		t.Errorf("risk enum %v", risk.Enum)
	}
	code := readDoc(t, files, "server/error.json").Properties["code"]
	if !slices.Equal(code.Enum, toStrings(protocol.ErrorCodes)) {
		t.Errorf("error code enum %v", code.Enum)
	}
	fail := readDoc(t, files, "server/turn.failed.json").Properties["code"]
	if !slices.Equal(fail.Enum, toStrings(protocol.FailureCodes)) {
		t.Errorf("failure code enum %v", fail.Enum)
	}
}

func toStrings[T ~string](v []T) []string {
	out := make([]string, len(v))
	for i, s := range v {
		out[i] = string(s)
	}
	return out
}

func walkObjects(d schemaDoc, where string, f func(string, schemaDoc)) {
	if d.Type == "object" {
		f(where, d)
	}
	if d.Items != nil {
		walkObjects(*d.Items, where+"[]", f)
	}
	for name, p := range d.Properties {
		walkObjects(p, where+"."+name, f)
	}
}

func walkProperties(d schemaDoc, where string, f func(string, schemaDoc)) {
	if d.Items != nil {
		walkProperties(*d.Items, where+"[]", f)
	}
	for name, p := range d.Properties {
		f(where+"."+name, p)
		walkProperties(p, where+"."+name, f)
	}
}

func firstPropertyName(t *testing.T, b []byte) string {
	t.Helper()
	var top struct {
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(top.Properties))
	if _, err := dec.Token(); err != nil {
		t.Fatal(err)
	}
	tok, err := dec.Token()
	if err != nil {
		t.Fatal(err)
	}
	return tok.(string)
}

func TestDescriptionsTable(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	for _, typ := range append(protocol.ClientMessageTypes(), protocol.EventTypes()...) {
		known[typ] = true
		if d := messageDescriptions[typ]; d == "" || !strings.HasSuffix(d, ".") {
			t.Errorf("%s: description %q must be a sentence", typ, d)
		}
	}
	for typ := range messageDescriptions {
		if !known[typ] {
			t.Errorf("messageDescriptions has %q, which is not a message type", typ)
		}
	}
	for key, d := range fieldDescriptions {
		if scope, _, ok := strings.Cut(key, "/"); ok && !known[scope] && scope != "client" && scope != "server" {
			t.Errorf("fieldDescriptions key %q names no message type", key)
		}
		if !strings.HasSuffix(d, ".") {
			t.Errorf("fieldDescriptions[%q] = %q must be a sentence", key, d)
		}
	}
}

// metaschemaURL is the JSON Schema draft the generated files declare.
const metaschemaURL = "https://json-schema.org/draft/2020-12/schema"

// schemaSet is the generated schemas as if loaded from docs/schema, and
// the draft 2020-12 metaschema (testdata, from json-schema.org), for the
// validator the server uses for tool arguments (google/jsonschema-go).
type schemaSet struct {
	t        *testing.T
	docs     map[string]*jsonschema.Schema // by absolute URL
	resolved map[string]*jsonschema.Resolved
}

// compiler loads the generated schemas as if from docs/schema, checking
// that each is a draft 2020-12 schema (valid against the metaschema).
func compiler(t *testing.T) (*schemaSet, string) {
	t.Helper()
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	const base = "file:///scv/docs/schema/"
	c := &schemaSet{t: t, docs: map[string]*jsonschema.Schema{}, resolved: map[string]*jsonschema.Resolved{}}
	err = filepath.WalkDir(filepath.Join("testdata", "draft2020-12"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join("testdata", "draft2020-12"), p)
		c.add(t, "https://json-schema.org/draft/2020-12/"+strings.TrimSuffix(filepath.ToSlash(rel), ".json"), b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	meta := compile(t, c, metaschemaURL)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		b := files[name]
		c.add(t, base+name, b)
		if err := meta.Validate(instance(t, string(b))); err != nil {
			t.Errorf("%s is not a valid draft 2020-12 schema: %v", name, err)
		}
	}
	return c, base
}

func (c *schemaSet) add(t *testing.T, url string, b []byte) {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	c.docs[url] = &s
}

// load is the resolver's loader: only the set's own documents.
func (c *schemaSet) load(u *url.URL) (*jsonschema.Schema, error) {
	if s := c.docs[u.String()]; s != nil {
		return s, nil
	}
	return nil, fmt.Errorf("no schema %s in docs/schema", u)
}

func compile(t *testing.T, c *schemaSet, url string) *jsonschema.Resolved {
	t.Helper()
	if r := c.resolved[url]; r != nil {
		return r
	}
	s := c.docs[url]
	if s == nil {
		t.Fatalf("compiling %s: no such schema", url)
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{BaseURI: url, Loader: c.load})
	if err != nil {
		t.Fatalf("compiling %s: %v", url, err)
	}
	c.resolved[url] = r
	return r
}

func instance(t *testing.T, line string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	return v
}

// TestGoldenLinesValidate validates every golden wire line of the protocol
// package against the index and against its own type's schema.
func TestGoldenLinesValidate(t *testing.T) {
	t.Parallel()
	c, base := compiler(t)
	index := compile(t, c, base+IndexFile)
	for _, g := range []struct{ file, dir string }{
		{"../testdata/client.jsonl", ClientDir},
		{"../testdata/events.jsonl", ServerDir},
	} {
		f, err := os.Open(g.file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "//") {
				continue
			}
			typ := protocol.PeekType([]byte(line))
			own := compile(t, c, base+g.dir+"/"+typ+".json")
			if err := own.Validate(instance(t, line)); err != nil {
				t.Errorf("%s:%d does not validate against %s/%s.json: %v", g.file, n, g.dir, typ, err)
			}
			if err := index.Validate(instance(t, line)); err != nil {
				t.Errorf("%s:%d does not validate against protocol.json: %v", g.file, n, err)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEncodedEventsValidate validates what the encoder writes for zero
// events, whose members are all empty.
func TestEncodedEventsValidate(t *testing.T) {
	t.Parallel()
	c, base := compiler(t)
	for _, typ := range protocol.EventTypes() {
		e := protocol.NewEvent(typ)
		switch e := e.(type) {
		case *protocol.ToolProposed:
			e.Arguments = json.RawMessage(`{}`)
		case *protocol.ApprovalRequested:
			e.Risk = protocol.RiskReadOnly
		case *protocol.TurnFailed:
			e.Code = protocol.FailInternal
		case *protocol.Error:
			e.Code = protocol.ErrInternal
		}
		b, err := protocol.EncodeEvent(e)
		if err != nil {
			t.Fatal(err)
		}
		s := compile(t, c, base+ServerDir+"/"+typ+".json")
		if err := s.Validate(instance(t, string(b))); err != nil {
			t.Errorf("%s does not validate: %v", b, err)
		}
	}
}

func TestSchemasRejectInvalidFrames(t *testing.T) {
	t.Parallel()
	c, base := compiler(t)
	index := compile(t, c, base+IndexFile)
	cases := []struct {
		name, schema, line string
		valid              bool
	}{
		{"unknown client member is allowed", "client/turn.start.json",
			`{"type":"turn.start","request_id":"3","session_id":"s","prompt":"p","future":1}`, true},
		{"unknown nested client member is allowed", "client/initialize.json",
			`{"type":"initialize","request_id":"1","protocol_version":3,"client":{"name":"x","os":"linux"}}`, true},
		{"wrong member type", "client/turn.start.json",
			`{"type":"turn.start","request_id":"3","session_id":"s","prompt":5}`, false},
		{"missing required member", "client/turn.start.json",
			`{"type":"turn.start","request_id":"3","session_id":"s"}`, false},
		{"missing type", "client/turn.start.json",
			`{"request_id":"3","session_id":"s","prompt":"p"}`, false},
		{"other type", "client/turn.start.json",
			`{"type":"turn.cancel","request_id":"3","session_id":"s","prompt":"p"}`, false},
		{"optional member absent", "client/queue.move.json",
			`{"type":"queue.move","request_id":"5","session_id":"s","queue_id":"q","revision":3}`, true},
		{"unknown event member", "server/turn.cancelled.json",
			`{"type":"turn.cancelled","session_id":"s","turn_id":"t","seq":1,"extra":true}`, false},
		{"unknown risk", "server/approval.requested.json",
			`{"type":"approval.requested","session_id":"s","turn_id":"t","seq":1,"approval_id":"a","call_id":"c","name":"n","risk":"scary","cwd":"/","summary":""}`, false},
		{"negative seq", "server/session.cleared.json",
			`{"type":"session.cleared","session_id":"s","seq":-1}`, false},
		{"fractional revision", "client/queue.remove.json",
			`{"type":"queue.remove","request_id":"6","session_id":"s","queue_id":"q","revision":1.5}`, false},
		{"null entries", "server/queue.snapshot.json",
			`{"type":"queue.snapshot","session_id":"s","seq":0,"entries":null}`, false},
		{"unknown type in the index", IndexFile,
			`{"type":"turn.pause","request_id":"1"}`, false},
		{"array in the index", IndexFile, `[]`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := index
			if tc.schema != IndexFile {
				s = compile(t, c, base+tc.schema)
			}
			err := s.Validate(instance(t, tc.line))
			if tc.valid && err != nil {
				t.Errorf("%s rejects %s: %v", tc.schema, tc.line, err)
			}
			if !tc.valid && err == nil {
				t.Errorf("%s accepts %s", tc.schema, tc.line)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	// Stale schemas go; other files stay.
	for _, name := range []string{"client/old.json", "server/gone.json", "README.md", "client/notes.txt"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	files, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	for _, name := range []string{"client/old.json", "server/gone.json"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name))); !os.IsNotExist(err) {
			t.Errorf("stale %s was not removed: %v", name, err)
		}
	}
	for _, name := range []string{"README.md", "client/notes.txt"} {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
			t.Errorf("%s was removed: %v", name, err)
		}
	}
	// No temporary files are left behind, and a second write is a no-op.
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("temporary file %s left behind", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A file in the way of a directory is an error, not a panic.
	blocked := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocked, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(blocked); err == nil {
		t.Error("Write into a file succeeded")
	}
}
