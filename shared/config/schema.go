package config

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// schema describes the shape of the configuration, derived from the struct
// tags of Config: tables (structs), named tables (maps of structs, such as
// providers.<name>) and leaves (every other value, including maps of
// strings such as headers).
type schema struct {
	typ    reflect.Type
	fields []schemaField // for a struct
	elem   *schema       // for a map of structs
}

type schemaField struct {
	name  string
	index int
	s     *schema
}

func (s *schema) isLeaf() bool { return s.typ.Kind() != reflect.Struct && s.elem == nil }

func (s *schema) field(name string) (schemaField, bool) {
	for _, f := range s.fields {
		if f.name == name {
			return f, true
		}
	}
	return schemaField{}, false
}

// child returns the schema of the key part name under s, or nil.
func (s *schema) child(name string) *schema {
	if s.elem != nil {
		return s.elem
	}
	if f, ok := s.field(name); ok {
		return f.s
	}
	return nil
}

var (
	configSchemaOnce sync.Once
	configSchemaVal  *schema
)

func configSchema() *schema {
	configSchemaOnce.Do(func() { configSchemaVal = schemaOf(reflect.TypeFor[Config]()) })
	return configSchemaVal
}

func schemaOf(t reflect.Type) *schema {
	s := &schema{typ: t}
	switch {
	case t.Kind() == reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			s.fields = append(s.fields, schemaField{name: name, index: i, s: schemaOf(f.Type)})
		}
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.Struct:
		s.elem = schemaOf(t.Elem())
	}
	return s
}

// resolve walks path down the schema. It returns the number of parts that
// name known keys and the schema reached. When a leaf is reached before the
// end of path, the rest of path is inside that leaf (a header name, say) and
// counts as known.
func (s *schema) resolve(path []string) (known int, at *schema) {
	at = s
	for i, part := range path {
		if at.isLeaf() {
			return len(path), at
		}
		next := at.child(part)
		if next == nil {
			return i, at
		}
		at = next
	}
	return len(path), at
}

// leafPrefix returns the part of path that names a leaf of the schema (the
// whole path, or its beginning when the path goes inside a leaf), or nil
// when path names a table or an unknown key.
func (s *schema) leafPrefix(path []string) []string {
	at := s
	for i, part := range path {
		if at.isLeaf() {
			return path[:i]
		}
		if at = at.child(part); at == nil {
			return nil
		}
	}
	if at.isLeaf() {
		return path
	}
	return nil
}

// suggest returns a known key close to the unknown key path, or nil.
func (s *schema) suggest(path []string) []string {
	known, at := s.resolve(path)
	if known >= len(path) || at.elem != nil {
		return nil
	}
	bad := path[known]
	best, bestDist := "", 3
	for _, f := range at.fields {
		if d := editDistance(bad, f.name); d < bestDist && d < len(f.name) {
			best, bestDist = f.name, d
		}
	}
	if best == "" {
		return nil
	}
	out := slices.Clone(path)
	out[known] = best
	return out
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// describeType says what TOML value a Go type takes, for error messages.
func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map:
		if t.Elem().Kind() == reflect.Struct {
			return "a table of tables"
		}
		return "a table of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + "s, like { \"Name\" = \"value\" }"
	case reflect.Struct:
		return "a table"
	default:
		return "a " + t.String()
	}
}

// expectedType says what TOML value the key path takes, or "".
func expectedType(path []string) string {
	s := configSchema()
	at := s
	for i, part := range path {
		if at.isLeaf() {
			// Inside a leaf: only maps have parts below them.
			if at.typ.Kind() == reflect.Map && i == len(path)-1 {
				return describeType(at.typ.Elem())
			}
			return ""
		}
		if at = at.child(part); at == nil {
			return ""
		}
	}
	return describeType(at.typ)
}

// joinKey writes a key path the way TOML spells it: bare parts as they are,
// other parts quoted.
func joinKey(path []string) string {
	var b strings.Builder
	for i, p := range path {
		if i > 0 {
			b.WriteByte('.')
		}
		if isBareKey(p) {
			b.WriteString(p)
		} else {
			b.WriteString(strconv.Quote(p))
		}
	}
	return b.String()
}

func isBareKey(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// leafKeys lists the dotted keys of every leaf value of v (a *Config or a
// struct), map entries sorted by name.
func leafKeys(v any) []string {
	var out []string
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		rv = rv.Elem()
	}
	walkLeaves(schemaOf(rv.Type()), rv, nil, func(path []string, _ reflect.Value) {
		out = append(out, joinKey(path))
	})
	return out
}

// walkLeaves calls fn for every leaf of v, whose schema is s.
func walkLeaves(s *schema, v reflect.Value, prefix []string, fn func(path []string, v reflect.Value)) {
	switch {
	case s.isLeaf():
		fn(prefix, v)
	case s.elem != nil:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(a.String(), b.String()) })
		for _, k := range keys {
			walkLeaves(s.elem, v.MapIndex(k), append(slices.Clip(prefix), k.String()), fn)
		}
	default:
		for _, f := range s.fields {
			walkLeaves(f.s, v.Field(f.index), append(slices.Clip(prefix), f.name), fn)
		}
	}
}
