package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Registry holds the tools of a session, each with its resolved schema:
// the tools registered when the session starts, then the tools of its
// sources, whose lists change while the session runs (MCP servers).
type Registry struct {
	tools   map[string]*entry
	order   []string
	sources []Source
}

// Source offers tools whose list changes while a session runs. Tools
// returns the current list; its names must not collide with registered
// tools (a source prefixes them), and each schema is already resolved.
// Generation changes whenever the list does, so a turn rebuilds what it
// sends the model only then. Both are called from the session's turns and
// must be safe for concurrent use.
type Source interface {
	Tools() []SourceTool
	Generation() uint64
}

// SourceTool is one tool of a Source with its resolved schema.
type SourceTool struct {
	Tool   Tool
	Spec   Spec
	Schema *jsonschema.Resolved
}

// Settle waits, bounded by ctx, for sources whose tools are on their way
// (MCP servers still starting): those that implement
// interface{ Settle(context.Context) }. A turn calls it before its first
// model request.
func (r *Registry) Settle(ctx context.Context) {
	for _, s := range r.sources {
		if st, ok := s.(interface{ Settle(context.Context) }); ok {
			st.Settle(ctx)
		}
	}
}

// AddSource adds a source of tools, after the registered ones.
func (r *Registry) AddSource(s Source) { r.sources = append(r.sources, s) }

// Generation changes whenever the tools of a source change.
func (r *Registry) Generation() uint64 {
	var g uint64
	for _, s := range r.sources {
		g += s.Generation()
	}
	return g
}

// lookup finds name among the registered tools, then the sources' tools.
func (r *Registry) lookup(name string) (*entry, bool) {
	if e, ok := r.tools[name]; ok {
		return e, true
	}
	for _, s := range r.sources {
		for _, t := range s.Tools() {
			if t.Spec.Name == name {
				return &entry{tool: t.Tool, spec: t.Spec, schema: t.Schema}, true
			}
		}
	}
	return nil, false
}

type entry struct {
	tool   Tool
	spec   Spec
	schema *jsonschema.Resolved
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*entry{}} }

// Register adds t. It fails for a duplicate or empty name and for a schema
// that does not resolve.
func (r *Registry) Register(t Tool) error {
	spec := t.Spec()
	if spec.Name == "" {
		return fmt.Errorf("registering tool: empty name")
	}
	if _, dup := r.tools[spec.Name]; dup {
		return fmt.Errorf("registering tool %q: a tool with that name is already registered", spec.Name)
	}
	// A tool may validate against a looser schema than the one the model
	// sees, to give its own, clearer refusals (the agent tool's enum).
	raw := spec.Schema
	if v, ok := t.(interface{ ValidationSchema() json.RawMessage }); ok {
		raw = v.ValidationSchema()
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return fmt.Errorf("registering tool %q: schema is not a JSON Schema object: %w", spec.Name, err)
	}
	res, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("registering tool %q: resolving schema: %w", spec.Name, err)
	}
	r.tools[spec.Name] = &entry{tool: t, spec: spec, schema: res}
	r.order = append(r.order, spec.Name)
	return nil
}

// Specs returns the specs of every tool in registration order.
func (r *Registry) Specs() []Spec {
	out := make([]Spec, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.tools[n].spec)
	}
	for _, s := range r.sources {
		for _, t := range s.Tools() {
			out = append(out, t.Spec)
		}
	}
	return out
}

// Len returns the number of tools registered, and whether sources may
// offer more: a session with a source counts as one with tools even while
// its sources offer none yet.
func (r *Registry) Len() int { return len(r.order) + len(r.sources) }

// Lookup returns the tool named name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	e, ok := r.lookup(name)
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// Names returns the tool names, sorted.
func (r *Registry) Names() []string {
	out := append([]string(nil), r.order...)
	for _, s := range r.sources {
		for _, t := range s.Tools() {
			out = append(out, t.Spec.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Validate checks raw arguments of a call to the tool name against its
// schema. The returned error is written for the model: it says what is
// wrong and how to fix it.
func (r *Registry) Validate(name string, raw string) (json.RawMessage, error) {
	e, ok := r.lookup(name)
	if !ok {
		return nil, fmt.Errorf("there is no tool named %q; available tools: %s", name, strings.Join(r.Names(), ", "))
	}
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, fmt.Errorf("the arguments of %s are not valid JSON (%v); send one JSON object matching the tool's schema", name, err)
	}
	if err := e.schema.Validate(v); err != nil {
		return nil, fmt.Errorf("the arguments of %s do not match its schema: %s", name, schemaMessage(err))
	}
	// Re-encode what was validated, so tools decode a canonical form: JSON
	// Schema calls 2.0 an integer, and Go decodes only 2 into an int.
	canon, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("re-encoding the arguments of %s: %w", name, err)
	}
	return canon, nil
}

var (
	schemaPath = regexp.MustCompile(`validating (/properties/[^:]*): `)
	ratio      = regexp.MustCompile(`\b(-?\d+)/1\b`)
	floatZeros = regexp.MustCompile(`\b(-?\d+)\.0+\b`)
)

// schemaMessage rewrites the validator's message for the model: argument
// paths instead of schema paths, plain numbers.
func schemaMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "validating root: ")
	msg = schemaPath.ReplaceAllStringFunc(msg, func(m string) string {
		p := schemaPath.FindStringSubmatch(m)[1]
		p = strings.ReplaceAll(strings.TrimPrefix(p, "/properties/"), "/properties/", ".")
		return "argument " + p + ": "
	})
	msg = strings.ReplaceAll(msg, "<invalid reflect.Value>", "null")
	msg = ratio.ReplaceAllString(msg, "$1")
	return floatZeros.ReplaceAllString(msg, "$1")
}
