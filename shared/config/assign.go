package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2"
)

// Decoding a layer into its Go type is done here, not by go-toml's typed
// decoder, which stops at the first value of the wrong type: a file's
// problems are reported in one pass. go-toml parses the document into
// plain values (tables, arrays, strings, numbers, booleans, dates); the
// walk below puts each value into its field when its type fits and reports
// every one that does not, naming its key and line. A value of the wrong
// type is left out (the key keeps the value of the layers before), and
// recorded as rejected so that no later check blames the default it left.

// maxTypeErrors bounds the values of the wrong type reported for one file.
const maxTypeErrors = maxReported

// assigner decodes one layer's document.
type assigner struct {
	ly      *layer
	errs    []error
	dropped int
}

// assign puts v, a value go-toml parsed, into dst, whose schema is s, at
// the key path.
func (a *assigner) assign(s *schema, dst reflect.Value, v any, path []string) {
	switch {
	case s.elem != nil: // a table of tables: providers.<name>
		tbl, ok := v.(map[string]any)
		if !ok {
			a.wrongType(path, dst.Type(), v)
			return
		}
		if dst.IsNil() {
			dst.Set(reflect.MakeMap(dst.Type()))
		}
		for _, k := range sortedKeys(tbl) {
			elem := reflect.New(dst.Type().Elem()).Elem()
			if cur := dst.MapIndex(reflect.ValueOf(k)); cur.IsValid() {
				elem.Set(cur)
			}
			a.assign(s.elem, elem, tbl[k], append(slices.Clip(path), k))
			dst.SetMapIndex(reflect.ValueOf(k), elem)
		}
	case !s.isLeaf(): // a table
		tbl, ok := v.(map[string]any)
		if !ok {
			a.wrongType(path, dst.Type(), v)
			return
		}
		for _, k := range sortedKeys(tbl) {
			f, ok := s.field(k)
			if !ok {
				continue // an unknown key: reported on its own
			}
			a.assign(f.s, dst.Field(f.index), tbl[k], append(slices.Clip(path), k))
		}
	case dst.Kind() == reflect.Map && isTable(v): // a table of values: headers
		tbl := v.(map[string]any)
		out := reflect.MakeMapWithSize(dst.Type(), len(tbl))
		for _, k := range sortedKeys(tbl) {
			elem := reflect.New(dst.Type().Elem()).Elem()
			if !a.leaf(elem, tbl[k]) {
				a.wrongType(append(slices.Clip(path), k), elem.Type(), tbl[k])
				continue
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), elem)
		}
		dst.Set(out)
	default:
		if !a.leaf(dst, v) {
			a.wrongType(path, dst.Type(), v)
		}
	}
}

func isTable(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// leaf puts v into the leaf dst and reports whether its type fits.
func (a *assigner) leaf(dst reflect.Value, v any) bool {
	switch dst.Kind() {
	case reflect.Interface:
		if v != nil {
			dst.Set(reflect.ValueOf(v))
		}
		return true
	case reflect.String:
		s, ok := v.(string)
		if ok {
			dst.SetString(s)
		}
		return ok
	case reflect.Bool:
		b, ok := v.(bool)
		if ok {
			dst.SetBool(b)
		}
		return ok
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(int64)
		if !ok || dst.OverflowInt(n) {
			return false
		}
		dst.SetInt(n)
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(int64)
		if !ok || n < 0 || dst.OverflowUint(uint64(n)) {
			return false
		}
		dst.SetUint(uint64(n))
		return true
	case reflect.Float32, reflect.Float64:
		switch n := v.(type) {
		case float64:
			dst.SetFloat(n)
		case int64:
			dst.SetFloat(float64(n))
		default:
			return false
		}
		return true
	case reflect.Slice:
		items, ok := v.([]any)
		if !ok {
			return false
		}
		out := reflect.MakeSlice(dst.Type(), len(items), len(items))
		for i, item := range items {
			if !a.leaf(out.Index(i), item) {
				return false
			}
		}
		dst.Set(out)
		return true
	case reflect.Map:
		tbl, ok := v.(map[string]any)
		if !ok || dst.Type().Key().Kind() != reflect.String {
			return false
		}
		out := reflect.MakeMapWithSize(dst.Type(), len(tbl))
		for k, item := range tbl {
			elem := reflect.New(dst.Type().Elem()).Elem()
			if !a.leaf(elem, item) {
				return false
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), elem)
		}
		dst.Set(out)
		return true
	}
	return false
}

// wrongType reports the value v at path, of a type that does not fit t,
// and rejects the key.
func (a *assigner) wrongType(path []string, t reflect.Type, v any) {
	key := joinKey(path)
	a.ly.rejected[key] = true
	if len(a.errs) == maxTypeErrors {
		a.dropped++
		return
	}
	e, _ := a.ly.ix.first(path...)
	err := &Error{File: a.ly.file, Line: e.line, Key: key}
	got := tomlTypeName(v)
	switch {
	case t.Kind() == reflect.Struct && isArrayOfTables(v):
		err.Message = fmt.Sprintf("key %s must be a table ([%s]), not an array of tables ([[%s]])", quoteKey(key), key, key)
	case t.Kind() == reflect.Slice && got == "array":
		items := v.([]any)
		i := slices.IndexFunc(items, func(item any) bool { return !a.leaf(reflect.New(t.Elem()).Elem(), item) })
		err.Message = fmt.Sprintf("key %s must be an array of %ss; item %d is %s %s", quoteKey(key),
			strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an "), i+1, article(tomlTypeName(items[i])), tomlTypeName(items[i]))
	default:
		err.Message = fmt.Sprintf("key %s must be %s, not %s %s", quoteKey(key), describeType(t), article(got), got)
	}
	a.errs = append(a.errs, err)
}

// result returns the errors, with a line for those not reported.
func (a *assigner) result() []error {
	if a.dropped > 0 {
		return append(a.errs, &Error{File: a.ly.file, Message: fmt.Sprintf("and %d more keys of the wrong type; see %s for the keys", a.dropped, DocsRef)})
	}
	return a.errs
}

// tomlTypeName names the TOML type of a value go-toml parsed.
func tomlTypeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	case time.Time, toml.LocalDateTime:
		return "date-time"
	case toml.LocalDate:
		return "date"
	case toml.LocalTime:
		return "time"
	}
	return fmt.Sprintf("%T", v)
}

func isArrayOfTables(v any) bool {
	items, ok := v.([]any)
	if !ok || len(items) == 0 {
		return false
	}
	for _, item := range items {
		if _, ok := item.(map[string]any); !ok {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
