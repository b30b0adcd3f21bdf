package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// A client frame must say one thing. encoding/json, which decodes the
// messages, lets the last of two members with the same name win and
// matches member names without regard to case ("Prompt" fills prompt), so
// a frame could carry two values of one member and each reader would pick
// its own. DecodeClientMessage therefore first checks the frame's member
// names, strictly:
//
//   - no object of the frame, at any depth, may have two members with the
//     same name (after unescaping: "a" and "\u0061" are the same name);
//   - in the objects the message's type describes (the message itself,
//     initialize's client, session.start's channel), a member whose name
//     matches a documented member only when case is ignored is refused:
//     names are case-sensitive.
//
// Unknown members are still allowed and ignored.

// memberError is a member name the strict check refuses.
type memberError struct {
	// path is the member, dotted from the frame's top level.
	path string
	// want is the documented name a wrongly cased member stands for; ""
	// for a duplicate.
	want string
}

func (e *memberError) message(kind string) string {
	if e.want == "" {
		return fmt.Sprintf("%s: the member %q appears twice; send each member once", kind, e.path)
	}
	return fmt.Sprintf("%s: %q is not a member of %s, whose member names are case-sensitive; send %q", kind, e.path, kind, e.want)
}

// touchesRequestID reports whether the refused member is the request_id
// (so its value cannot be trusted to answer with).
func (e *memberError) touchesRequestID() bool {
	return strings.EqualFold(e.path, "request_id")
}

// structMembers is what the strict check knows of a struct type: its JSON
// member names and their types.
type structMembers struct {
	names  []string
	bnames [][]byte                // names, as bytes
	types  map[string]reflect.Type // name → type (nil for "type")
}

type membersKey struct {
	t   reflect.Type
	top bool
}

var membersCache sync.Map // membersKey → *structMembers

// membersOf returns the JSON members of struct type t (embedded structs
// flattened, as encoding/json does); the top level also has the
// envelope's "type".
func membersOf(t reflect.Type, top bool) *structMembers {
	key := membersKey{t, top}
	if v, ok := membersCache.Load(key); ok {
		return v.(*structMembers)
	}
	m := &structMembers{types: map[string]reflect.Type{}}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type)
				continue
			}
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			m.types[name] = f.Type
		}
	}
	walk(t)
	if top {
		m.types["type"] = nil
	}
	for name := range m.types {
		m.names = append(m.names, name)
		m.bnames = append(m.bnames, []byte(name))
	}
	membersCache.Store(key, m)
	return m
}

// lookup returns the type of member name (nil when it is not documented),
// or, for a name that matches a documented member only when case is
// ignored (with the foldings encoding/json applies), that member's name.
func (m *structMembers) lookup(name []byte) (t reflect.Type, want string) {
	if t, ok := m.types[string(name)]; ok {
		return t, ""
	}
	for i, n := range m.bnames {
		if bytes.EqualFold(n, name) {
			return nil, m.names[i]
		}
	}
	return nil, ""
}

// checkMembers applies the strict member rules to frame, which must be
// valid JSON, whose top-level object describes a value of struct type t
// (nil: no type, only duplicates are checked).
func checkMembers(frame []byte, t reflect.Type) *memberError {
	s := memberScanner{b: frame}
	s.space()
	return s.value(t, true)
}

// memberScanner walks valid JSON. It never validates: the frame was parsed
// before. It allocates only for member names with escapes, objects of
// many members, and the error.
type memberScanner struct {
	b []byte
	i int
	// path is the member being checked: names and array indices from the
	// top level, turned into text only for an error.
	path []pathPart
}

type pathPart struct {
	name  []byte // a member name, or nil for an array element
	index int
}

// member returns the path, dotted, with name appended when it is not nil.
func (s *memberScanner) member(name []byte) string {
	var b strings.Builder
	for _, p := range s.path {
		if p.name == nil {
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(p.name)
	}
	if name != nil {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(name)
	}
	return b.String()
}

func (s *memberScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value checks the value at s.i, described by t (nil: nothing known); top
// marks the frame's own object, which also has "type".
func (s *memberScanner) value(t reflect.Type, top bool) *memberError {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s.i >= len(s.b) {
		return nil
	}
	switch s.b[s.i] {
	case '{':
		var m *structMembers
		if t != nil && t.Kind() == reflect.Struct {
			m = membersOf(t, top)
		}
		return s.object(m, t)
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		return s.array(elem)
	case '"':
		s.skipString()
	default:
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return nil
			}
			s.i++
		}
	}
	return nil
}

// object checks an object whose members m describes (nil: unknown). Its
// names are remembered in a small array, or a map once there are many.
func (s *memberScanner) object(m *structMembers, t reflect.Type) *memberError {
	s.i++ // {
	var small [16][]byte
	seen := small[:0]
	var seenSet map[string]struct{}
	var mapElem reflect.Type
	if t != nil && t.Kind() == reflect.Map {
		mapElem = t.Elem()
	}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] == '}' {
			s.i++
			return nil
		}
		name := s.key()
		dup := false
		if seenSet != nil {
			_, dup = seenSet[string(name)]
			seenSet[string(name)] = struct{}{}
		} else {
			for _, k := range seen {
				if bytes.Equal(k, name) {
					dup = true
					break
				}
			}
			if len(seen) < len(small) {
				seen = append(seen, name)
			} else {
				seenSet = make(map[string]struct{}, 4*len(seen))
				for _, k := range seen {
					seenSet[string(k)] = struct{}{}
				}
				seenSet[string(name)] = struct{}{}
			}
		}
		if dup {
			return &memberError{path: s.member(name)}
		}
		var vt reflect.Type
		switch {
		case m != nil:
			var want string
			if vt, want = m.lookup(name); want != "" {
				return &memberError{path: s.member(name), want: s.member([]byte(want))}
			}
		case mapElem != nil:
			vt = mapElem
		}
		s.space()
		s.i++ // :
		s.space()
		if err := s.nested(pathPart{name: name}, vt); err != nil {
			return err
		}
		s.space()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
		}
	}
}

// nested checks the value at s.i, the member or element p; the path grows
// only for the objects and arrays that can hold members.
func (s *memberScanner) nested(p pathPart, t reflect.Type) *memberError {
	if s.i < len(s.b) && (s.b[s.i] == '{' || s.b[s.i] == '[') {
		s.path = append(s.path, p)
		defer func() { s.path = s.path[:len(s.path)-1] }()
	}
	return s.value(t, false)
}

func (s *memberScanner) array(elem reflect.Type) *memberError {
	s.i++ // [
	for n := 0; ; n++ {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] == ']' {
			s.i++
			return nil
		}
		if err := s.nested(pathPart{index: n}, elem); err != nil {
			return err
		}
		s.space()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
		}
	}
}

// key reads a member name: the frame's own bytes, or, when the name has
// escapes, the name unescaped.
func (s *memberScanner) key() []byte {
	start := s.i
	escaped := s.skipString()
	raw := s.b[start:s.i]
	if !escaped {
		return raw[1 : len(raw)-1]
	}
	var name string
	if json.Unmarshal(raw, &name) != nil {
		return raw // cannot happen for valid JSON
	}
	return []byte(name)
}

// skipString moves past the string at s.i and reports whether it has
// escapes.
func (s *memberScanner) skipString() (escaped bool) {
	s.i++ // "
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case '\\':
			escaped = true
			s.i += 2
			continue
		case '"':
			s.i++
			return escaped
		}
		s.i++
	}
	return escaped
}
