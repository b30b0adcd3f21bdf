// Package schema generates the JSON Schema (draft 2020-12) of the client
// protocol from the Go types of package protocol: one schema per client
// message under client/, one per server event under server/, and an index,
// protocol.json, that refers to all of them.
//
// The generated files are committed under docs/schema; the package's drift
// test fails when they differ from what Generate returns.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/scv-cli/scv/shared/protocol"
)

// Directories of the generated files, and the name of the index.
const (
	ClientDir = "client"
	ServerDir = "server"
	IndexFile = "protocol.json"
)

// Generate returns the schema files, keyed by slash-separated path relative
// to the schema directory ("client/turn.start.json",
// "server/assistant.delta.json", "protocol.json"), each pretty-printed with
// a two-space indent and a trailing newline. The output is deterministic.
func Generate() (map[string][]byte, error) {
	files := map[string][]byte{}
	var errs []error
	gen := func(dir string, types []string, newValue func(string) any, client bool) []string {
		slices.Sort(types)
		var names []string
		for _, typ := range types {
			s, err := messageSchema(typ, reflect.TypeOf(newValue(typ)), client)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			b, err := marshal(s)
			if err != nil {
				errs = append(errs, fmt.Errorf("schema of %s: %w", typ, err))
				continue
			}
			name := path.Join(dir, typ+".json")
			files[name] = b
			names = append(names, name)
		}
		return names
	}
	clientFiles := gen(ClientDir, protocol.ClientMessageTypes(), func(t string) any { return protocol.NewClientMessage(t) }, true)
	serverFiles := gen(ServerDir, protocol.EventTypes(), func(t string) any { return protocol.NewEvent(t) }, false)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	idx, err := marshal(indexSchema(clientFiles, serverFiles))
	if err != nil {
		return nil, fmt.Errorf("schema index: %w", err)
	}
	files[IndexFile] = idx
	return files, nil
}

// Write writes the files of Generate into dir, creating dir and its
// subdirectories, replacing each file atomically (a temporary file renamed
// over it) and removing .json files in the subdirectories that Generate no
// longer produces. Files whose content is unchanged are left alone.
func Write(dir string) error {
	files, err := Generate()
	if err != nil {
		return err
	}
	for _, sub := range []string{ClientDir, ServerDir} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(name)), files[name]); err != nil {
			return err
		}
	}
	for _, sub := range []string{ClientDir, ServerDir} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			if _, ok := files[path.Join(sub, e.Name())]; ok {
				continue
			}
			if err := os.Remove(filepath.Join(dir, sub, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeFile(name string, data []byte) error {
	if old, err := os.ReadFile(name); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// marshal encodes v as indented JSON with a trailing newline, the keywords
// of each schema in a reading order (see keywordRank).
func marshal(v any) ([]byte, error) {
	compact, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	ordered, err := orderSchema(compact)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, ordered, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// keywordRank orders the keywords of a schema object: identity, then the
// prose, then the type and its constraints, then the members. Keywords not
// listed keep their relative order after these.
var keywordRank = map[string]int{
	"$schema": 1, "$id": 2, "$ref": 3, "title": 4, "description": 5,
	"type": 6, "const": 7, "enum": 8, "minimum": 9, "maximum": 10,
	"items": 11, "properties": 12, "required": 13, "additionalProperties": 14,
}

// nameMaps are the keywords whose value maps names to schemas: the names
// keep their order and each value is a schema.
var nameMaps = map[string]bool{"properties": true, "$defs": true, "patternProperties": true, "dependentSchemas": true}

// literals are the keywords whose value is data, not schemas.
var literals = map[string]bool{"const": true, "enum": true, "required": true, "default": true, "examples": true}

type member struct {
	key string
	val json.RawMessage
}

// orderSchema rewrites the compact JSON of a schema with its keywords, and
// those of every subschema, in keywordRank order.
func orderSchema(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) > 0 && raw[0] == '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return nil, err
		}
		for i, e := range elems {
			o, err := orderSchema(e)
			if err != nil {
				return nil, err
			}
			elems[i] = o
		}
		return joinArray(elems), nil
	case len(raw) == 0 || raw[0] != '{':
		return raw, nil
	}
	members, err := objectMembers(raw)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(members, func(a, b member) int {
		return rank(a.key) - rank(b.key)
	})
	for i, m := range members {
		switch {
		case literals[m.key]:
		case nameMaps[m.key]:
			inner, err := objectMembers(m.val)
			if err != nil {
				return nil, err
			}
			for j, n := range inner {
				if inner[j].val, err = orderSchema(n.val); err != nil {
					return nil, err
				}
			}
			members[i].val = joinObject(inner)
		default:
			if members[i].val, err = orderSchema(m.val); err != nil {
				return nil, err
			}
		}
	}
	return joinObject(members), nil
}

func rank(key string) int {
	if r, ok := keywordRank[key]; ok {
		return r
	}
	return len(keywordRank) + 1
}

// objectMembers returns the members of a JSON object in their order.
func objectMembers(raw json.RawMessage) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("schema: not a JSON object: %.40s", raw)
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var m member
		m.key = tok.(string)
		if err := dec.Decode(&m.val); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func joinObject(members []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(m.key)
		b.Write(key)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func joinArray(elems []json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e)
	}
	b.WriteByte(']')
	return b.Bytes()
}

var (
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	errorCodeType  = reflect.TypeFor[protocol.ErrorCode]()
	failureType    = reflect.TypeFor[protocol.FailureCode]()
	riskType       = reflect.TypeFor[protocol.Risk]()
)

// mapType gives the schema of the types whose Go type says too little: the
// closed string sets, unsigned integers and raw JSON.
func mapType(t reflect.Type) *jsonschema.Schema {
	switch t {
	case errorCodeType:
		return enumSchema(protocol.ErrorCodes)
	case failureType:
		return enumSchema(protocol.FailureCodes)
	case riskType:
		return enumSchema(protocol.Risks)
	case rawMessageType:
		return &jsonschema.Schema{} // any JSON value
	}
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &jsonschema.Schema{Type: "integer", Minimum: "0"}
	}
	return nil
}

func enumSchema[T ~string](values []T) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range values {
		s.Enum = append(s.Enum, string(v))
	}
	return s
}

// messageSchema reflects the schema of one message type and completes it:
// the "type" constant first, descriptions, and the additionalProperties
// policy.
func messageSchema(typ string, t reflect.Type, client bool) (*jsonschema.Schema, error) {
	desc, ok := messageDescriptions[typ]
	if !ok {
		return nil, fmt.Errorf("schema: message type %q has no description; add one to messageDescriptions", typ)
	}
	r := &jsonschema.Reflector{
		Anonymous:                 true,
		DoNotReference:            true,
		ExpandedStruct:            true,
		AllowAdditionalProperties: client,
		Mapper:                    mapType,
	}
	s := r.ReflectFromType(t)
	if s.Type != "object" || s.Properties == nil {
		return nil, fmt.Errorf("schema: %s does not reflect to an object", typ)
	}
	if _, clash := s.Properties.Get("type"); clash {
		return nil, fmt.Errorf("schema: %s has a field named \"type\"", typ)
	}
	s.Title = typ
	s.Description = desc

	side := "server"
	if client {
		side = "client"
	}
	describe(s, typ, side, "")

	s.Properties.Set("type", &jsonschema.Schema{
		Type:        "string",
		Const:       typ,
		Description: "The message type.",
	})
	if err := s.Properties.MoveToFront("type"); err != nil {
		return nil, err
	}
	s.Required = append([]string{"type"}, s.Required...)
	return s, nil
}

// describe fills in the description of every property below s from
// fieldDescriptions and states the additionalProperties policy on every
// object: true for client messages, whose unknown members the server
// ignores, false for server events, which carry exactly these members.
func describe(s *jsonschema.Schema, typ, side, prefix string) {
	if s == nil {
		return
	}
	if s.Type == "object" {
		if side == "client" {
			s.AdditionalProperties = jsonschema.TrueSchema
		} else {
			s.AdditionalProperties = jsonschema.FalseSchema
		}
	}
	if s.Items != nil {
		describe(s.Items, typ, side, prefix)
	}
	if s.Properties == nil {
		return
	}
	for name, p := range s.Properties.FromOldest() {
		full := name
		if prefix != "" {
			full = prefix + "." + name
		}
		if p.Description == "" {
			p.Description = fieldDescription(typ, side, full)
		}
		describe(p, typ, side, full)
	}
}

// fieldDescription looks a member up by message type, then by side, then
// by path, then by its last name.
func fieldDescription(typ, side, full string) string {
	last := full[strings.LastIndexByte(full, '.')+1:]
	for _, key := range []string{typ + "/" + full, side + "/" + full, full, last} {
		if d, ok := fieldDescriptions[key]; ok {
			return d
		}
	}
	return ""
}

type schemaRef struct {
	Ref string `json:"$ref"`
}

type indexGroup struct {
	Description string      `json:"description"`
	OneOf       []schemaRef `json:"oneOf"`
}

type index struct {
	Schema      string      `json:"$schema"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	Versions    versions    `json:"x-protocol-versions"`
	OneOf       []schemaRef `json:"oneOf"`
	Defs        struct {
		Client indexGroup `json:"clientMessage"`
		Server indexGroup `json:"serverEvent"`
	} `json:"$defs"`
}

type versions struct {
	Oldest int `json:"oldest"`
	Latest int `json:"latest"`
}

func indexSchema(clientFiles, serverFiles []string) *index {
	refs := func(files []string) []schemaRef {
		out := make([]schemaRef, len(files))
		for i, f := range files {
			out[i] = schemaRef{Ref: f}
		}
		return out
	}
	idx := &index{
		Schema: jsonschema.Version,
		Title:  "SCV client protocol",
		Description: "One frame of the SCV client protocol: a JSON object on one line of NDJSON over stdio, " +
			"either a message a client sends or an event the server sends. Each alternative is a file of this " +
			"directory, chosen by the frame's \"type\". Client frames are at most 1 MiB and server frames at " +
			"most 8 MiB, counted without the newline.",
		Versions: versions{Oldest: protocol.Oldest, Latest: protocol.Latest},
		OneOf:    []schemaRef{{Ref: "#/$defs/clientMessage"}, {Ref: "#/$defs/serverEvent"}},
	}
	idx.Defs.Client = indexGroup{
		Description: "A message a client sends. The server ignores members it does not know.",
		OneOf:       refs(clientFiles),
	}
	idx.Defs.Server = indexGroup{
		Description: "An event the server sends. These schemas list exactly the members this server writes; " +
			"a client should still ignore members it does not know, as later versions may add some.",
		OneOf: refs(serverFiles),
	}
	return idx
}
