package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// printer renders schema errors; the library needs one.
var printer = message.NewPrinter(language.English)

// Registry holds the tools of a session, each with its compiled schema.
type Registry struct {
	tools map[string]*entry
	order []string
}

type entry struct {
	tool   Tool
	spec   Spec
	schema *jsonschema.Schema
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*entry{}} }

// Register adds t. It fails for a duplicate or empty name and for a schema
// that does not compile.
func (r *Registry) Register(t Tool) error {
	spec := t.Spec()
	if spec.Name == "" {
		return fmt.Errorf("registering tool: empty name")
	}
	if _, dup := r.tools[spec.Name]; dup {
		return fmt.Errorf("registering tool %q: a tool with that name is already registered", spec.Name)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(spec.Schema))
	if err != nil {
		return fmt.Errorf("registering tool %q: schema is not JSON: %w", spec.Name, err)
	}
	c := jsonschema.NewCompiler()
	url := "scv:tool/" + spec.Name
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("registering tool %q: %w", spec.Name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return fmt.Errorf("registering tool %q: compiling schema: %w", spec.Name, err)
	}
	r.tools[spec.Name] = &entry{tool: t, spec: spec, schema: s}
	r.order = append(r.order, spec.Name)
	return nil
}

// Specs returns the specs of every tool in registration order.
func (r *Registry) Specs() []Spec {
	out := make([]Spec, 0, len(r.order))
	for _, n := range r.order {
		out = append(out, r.tools[n].spec)
	}
	return out
}

// Len returns the number of tools.
func (r *Registry) Len() int { return len(r.order) }

// Lookup returns the tool named name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	e, ok := r.tools[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// Names returns the tool names, sorted.
func (r *Registry) Names() []string {
	out := append([]string(nil), r.order...)
	sort.Strings(out)
	return out
}

// Validate checks raw arguments of a call to the tool name against its
// schema. The returned error is written for the model: it says what is
// wrong and how to fix it.
func (r *Registry) Validate(name string, raw string) (json.RawMessage, error) {
	e, ok := r.tools[name]
	if !ok {
		return nil, fmt.Errorf("there is no tool named %q; available tools: %s", name, strings.Join(r.Names(), ", "))
	}
	if strings.TrimSpace(raw) == "" {
		raw = "{}"
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the arguments of %s are not valid JSON (%v); send one JSON object matching the tool's schema", name, err)
	}
	if err := e.schema.Validate(v); err != nil {
		return nil, fmt.Errorf("the arguments of %s do not match its schema: %s", name, schemaMessage(err))
	}
	return json.RawMessage(raw), nil
}

func schemaMessage(err error) string {
	if ve, ok := err.(*jsonschema.ValidationError); ok {
		var parts []string
		collectLeaves(ve, &parts)
		if len(parts) > 0 {
			return strings.Join(parts, "; ")
		}
	}
	return err.Error()
}

func collectLeaves(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) == 0 {
		loc := "/" + strings.Join(ve.InstanceLocation, "/")
		msg := ve.ErrorKind.LocalizedString(printer)
		if loc == "/" {
			*out = append(*out, msg)
		} else {
			*out = append(*out, "at "+loc+": "+msg)
		}
		return
	}
	for _, c := range ve.Causes {
		collectLeaves(c, out)
	}
}
