package tools

import (
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type fakeSource struct {
	tools atomic.Pointer[[]SourceTool]
	gen   atomic.Uint64
}

func (s *fakeSource) Tools() []SourceTool { return *s.tools.Load() }
func (s *fakeSource) Generation() uint64  { return s.gen.Load() }
func (s *fakeSource) set(t *testing.T, names ...string) {
	var list []SourceTool
	for _, n := range names {
		raw := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`)
		var sc jsonschema.Schema
		if err := json.Unmarshal(raw, &sc); err != nil {
			t.Fatal(err)
		}
		res, err := sc.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		ft := &fakeTool{name: n}
		list = append(list, SourceTool{Tool: ft, Spec: Spec{Name: n, Schema: raw}, Schema: res})
	}
	s.tools.Store(&list)
	s.gen.Add(1)
}

// TestSource: a source's tools follow the registered ones, are looked up
// and validated with their own schemas, and change with the generation.
func TestSource(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	if err := r.Register(&fakeTool{name: "builtin", schema: objSchema}); err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set(t)
	r.AddSource(src)
	g0 := r.Generation()
	src.set(t, "mcp__s__a")
	if r.Generation() == g0 {
		t.Error("generation did not change")
	}
	var names []string
	for _, s := range r.Specs() {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"builtin", "mcp__s__a"}) || !slices.Equal(r.Names(), []string{"builtin", "mcp__s__a"}) {
		t.Fatalf("specs %q names %q", names, r.Names())
	}
	if _, ok := r.Lookup("mcp__s__a"); !ok {
		t.Fatal("lookup failed")
	}
	if _, err := r.Validate("mcp__s__a", `{"n":"x"}`); err == nil || !strings.Contains(err.Error(), "argument n") {
		t.Errorf("validate: %v", err)
	}
	src.set(t)
	if _, ok := r.Lookup("mcp__s__a"); ok {
		t.Error("a removed tool is still found")
	}
}
