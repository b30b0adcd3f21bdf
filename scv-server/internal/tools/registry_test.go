package tools

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// fakeTool is a tool with a given name and schema.
type fakeTool struct {
	name   string
	schema string
}

func (f *fakeTool) Spec() Spec {
	return Spec{Name: f.name, Description: "the " + f.name + " tool", Schema: json.RawMessage(f.schema)}
}

func (f *fakeTool) Prepare(Env, json.RawMessage) (*Plan, error) {
	return &Plan{Run: func(context.Context) (Result, error) { return Result{Success: true}, nil }}, nil
}

const objSchema = `{"type":"object","properties":{"x":{"type":"string"}},"additionalProperties":false}`

func TestRegisterRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tool    *fakeTool
		wantHas []string
	}{
		{"empty name", &fakeTool{"", objSchema}, []string{"empty name"}},
		{"empty schema", &fakeTool{"t", ""}, []string{`"t"`, "schema"}},
		{"schema not JSON", &fakeTool{"t", "{not json"}, []string{`"t"`, "schema"}},
		{"schema a string", &fakeTool{"t", `"object"`}, []string{`"t"`, "schema"}},
		{"schema an array", &fakeTool{"t", `[{"type":"object"}]`}, []string{`"t"`, "schema"}},
		{"type not a string", &fakeTool{"t", `{"type":5}`}, []string{`"t"`, "type"}},
		{"properties not an object", &fakeTool{"t", `{"type":"object","properties":5}`}, []string{`"t"`, "properties"}},
		{"required not a list", &fakeTool{"t", `{"type":"object","required":"x"}`}, []string{`"t"`, "required"}},
		{"minimum not a number", &fakeTool{"t", `{"type":"integer","minimum":"a"}`}, []string{`"t"`, "minimum"}},
		{"dangling $ref", &fakeTool{"t", `{"$ref":"#/definitions/missing"}`}, []string{`"t"`, "missing"}},
		{"bad pattern", &fakeTool{"t", `{"type":"string","pattern":"("}`}, []string{`"t"`, "pattern"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewRegistry()
			if err := r.Register(&fakeTool{"other", objSchema}); err != nil {
				t.Fatal(err)
			}
			err := r.Register(tc.tool)
			if err == nil {
				t.Fatalf("Register(%+v) succeeded", tc.tool)
			}
			for _, w := range tc.wantHas {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			// A refused tool leaves no trace.
			if r.Len() != 1 {
				t.Fatalf("Len = %d after a refused Register, want 1", r.Len())
			}
			if _, ok := r.Lookup(tc.tool.name); ok {
				t.Fatalf("Lookup(%q) found a refused tool", tc.tool.name)
			}
			if got := r.Names(); !reflect.DeepEqual(got, []string{"other"}) {
				t.Fatalf("Names = %q, want [other]", got)
			}
			// The name is still free for a valid tool.
			if tc.tool.name != "" {
				if err := r.Register(&fakeTool{tc.tool.name, objSchema}); err != nil {
					t.Fatalf("Register after a refusal: %v", err)
				}
			}
		})
	}
}

func TestRegisterDuplicate(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	first := &fakeTool{"read", objSchema}
	if err := r.Register(first); err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{objSchema, `{"type":"object"}`} {
		err := r.Register(&fakeTool{"read", schema})
		if err == nil {
			t.Fatal("duplicate Register succeeded")
		}
		if !strings.Contains(err.Error(), `"read"`) || !strings.Contains(err.Error(), "already registered") {
			t.Fatalf("error %q does not name the duplicate", err)
		}
	}
	if r.Len() != 1 {
		t.Fatalf("Len = %d, want 1", r.Len())
	}
	got, ok := r.Lookup("read")
	if !ok || got != Tool(first) {
		t.Fatal("the first registration was replaced")
	}
	// Names are case-sensitive: "Read" is another tool.
	if err := r.Register(&fakeTool{"Read", objSchema}); err != nil {
		t.Fatalf("Register(Read): %v", err)
	}
}

func TestSpecsOrder(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	if specs := r.Specs(); len(specs) != 0 || specs == nil {
		t.Fatalf("empty registry: Specs = %#v, want an empty non-nil slice", specs)
	}
	names := []string{"write", "read", "bash", "agent", "chat_attach"}
	for _, n := range names {
		if err := r.Register(&fakeTool{n, objSchema}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, s := range r.Specs() {
		got = append(got, s.Name)
		if s.Description != "the "+s.Name+" tool" || string(s.Schema) != objSchema {
			t.Errorf("Spec of %s = %+v, not what the tool gave", s.Name, s)
		}
	}
	if !reflect.DeepEqual(got, names) {
		t.Fatalf("Specs order = %q, want registration order %q", got, names)
	}
	if want := []string{"agent", "bash", "chat_attach", "read", "write"}; !reflect.DeepEqual(r.Names(), want) {
		t.Fatalf("Names = %q, want sorted %q", r.Names(), want)
	}
	if r.Len() != len(names) {
		t.Fatalf("Len = %d, want %d", r.Len(), len(names))
	}
	// Specs is a copy: changing it does not change the registry.
	s := r.Specs()
	s[0].Name = "mutated"
	if r.Specs()[0].Name != "write" {
		t.Fatal("Specs shares its slice with the registry")
	}
	n := r.Names()
	n[0] = "mutated"
	if r.Names()[0] != "agent" {
		t.Fatal("Names shares its slice with the registry")
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	tool := &fakeTool{"read", objSchema}
	if err := r.Register(tool); err != nil {
		t.Fatal(err)
	}
	if got, ok := r.Lookup("read"); !ok || got != Tool(tool) {
		t.Fatalf("Lookup(read) = %v, %v", got, ok)
	}
	for _, n := range []string{"", "READ", "rea", "read "} {
		if got, ok := r.Lookup(n); ok || got != nil {
			t.Fatalf("Lookup(%q) = %v, %v; want nil, false", n, got, ok)
		}
	}
}

func TestValidateUnknownTool(t *testing.T) {
	t.Parallel()
	t.Run("lists the available tools", func(t *testing.T) {
		r := NewRegistry()
		for _, n := range []string{"write", "read", "bash"} {
			if err := r.Register(&fakeTool{n, objSchema}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := r.Validate("grep", `{}`)
		if err == nil {
			t.Fatal("Validate of an unknown tool succeeded")
		}
		want := `there is no tool named "grep"; available tools: bash, read, write`
		if err.Error() != want {
			t.Fatalf("error %q, want %q", err, want)
		}
	})
	t.Run("empty registry", func(t *testing.T) {
		_, err := NewRegistry().Validate("read", `{}`)
		if err == nil || !strings.Contains(err.Error(), `"read"`) {
			t.Fatalf("error %v does not name the tool", err)
		}
	})
}

func TestValidate(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	for _, tool := range []*fakeTool{
		{"free", `{"type":"object"}`},
		{"strict", `{"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"],"additionalProperties":false}`},
		{"opt", objSchema},
	} {
		if err := r.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		tool    string
		raw     string
		want    string   // the returned arguments on success
		wantHas []string // substrings of the error; empty means success
	}{
		{"empty treated as {}", "opt", "", "{}", nil},
		{"blank treated as {}", "opt", " \n\t ", "{}", nil},
		{"empty for a schema without requirements", "free", "", "{}", nil},
		{"empty still checked against required", "strict", "", "", []string{"strict", "n", "missing"}},
		{"valid object returned unchanged", "opt", `{"x":"y"}`, `{"x":"y"}`, nil},
		{"re-encoded canonically", "opt", ` {"x" : "y"} `, `{"x":"y"}`, nil},
		{"whole-number float becomes an integer", "strict", `{"n":3.0}`, `{"n":3}`, nil},
		{"strict valid", "strict", `{"n":3}`, `{"n":3}`, nil},
		{"wrong type", "opt", `{"x":1}`, "", []string{"opt", "x", "string"}},
		{"extra property", "opt", `{"x":"y","z":1}`, "", []string{"opt", "z"}},
		{"below minimum", "strict", `{"n":0}`, "", []string{"strict", "n", "minimum"}},
		{"not an object", "free", `"text"`, "", []string{"free", "object"}},
		{"null", "free", `null`, "", []string{"free", "object"}},
		{"invalid JSON", "free", `{"a":`, "", []string{"free", "not valid JSON", "JSON object"}},
		{"trailing garbage", "free", `{} {}`, "", []string{"free", "not valid JSON"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Validate(tc.tool, tc.raw)
			if len(tc.wantHas) == 0 {
				if err != nil {
					t.Fatalf("Validate(%s, %q): %v", tc.tool, tc.raw, err)
				}
				if string(got) != tc.want {
					t.Fatalf("Validate(%s, %q) = %q, want %q", tc.tool, tc.raw, got, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%s, %q) = %q, want an error", tc.tool, tc.raw, got)
			}
			if got != nil {
				t.Fatalf("Validate returned %q with its error", got)
			}
			for _, w := range tc.wantHas {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "validating root") {
				t.Errorf("error %q keeps the library's framing", err)
			}
		})
	}
}

func TestFailed(t *testing.T) {
	t.Parallel()
	r := Failed("no such file")
	if r.Success || r.Output != "no such file" || r.Truncated || r.Jobs != nil {
		t.Fatalf("Failed = %+v", r)
	}
}
