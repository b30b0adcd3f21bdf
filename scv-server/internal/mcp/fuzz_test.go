package mcp

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// FuzzRepairSchema: whatever a server sends as an input schema, repairing
// it never panics, and what it offers is an object schema without $schema
// that the validator resolves again from its bytes (what the model and the
// registry see).
func FuzzRepairSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"type":"string"}}}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
		`{}`, `{"type":"string"}`, `[]`, `null`, `{"properties":3}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var in any
		if json.Unmarshal(data, &in) != nil {
			return
		}
		out, res, err := repairSchema(in)
		if err != nil {
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(out, &obj); err != nil || obj["type"] != "object" || res == nil {
			t.Fatalf("repaired %s into %s", data, out)
		}
		if _, ok := obj["$schema"]; ok {
			t.Fatalf("$schema kept: %s", out)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(out, &s); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Resolve(nil); err != nil {
			t.Fatalf("the repaired schema does not resolve again: %v", err)
		}
	})
}
