package openai

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON scanner of chunkDecoder, the fast path that decodes chat
// chunks (chunk.go) and Responses events (event.go): strict JSON, no
// allocation beyond the strings it returns, and false wherever
// encoding/json must decide.

// once marks bit in seen, and is false if it was already set: a
// duplicate key is left to encoding/json.
func once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

// skipUnknown skips the value of a key that is none of known. encoding/json
// matches keys case-insensitively (with Unicode folding), so a key that
// folds to a known one, or that is not ASCII, is left to it.
func (d *chunkDecoder) skipUnknown(key []byte, known ...string) bool {
	for _, b := range key {
		if b >= utf8.RuneSelf {
			return false
		}
	}
	for _, k := range known {
		if asciiEqualFold(key, k) {
			return false
		}
	}
	return d.skip(0)
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// ws skips JSON whitespace.
func (d *chunkDecoder) ws() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// end reports whether only whitespace is left.
func (d *chunkDecoder) end() bool {
	d.ws()
	return d.i == len(d.data)
}

// literal consumes lit (true, false or null) if it is next.
func (d *chunkDecoder) literal(lit string) bool {
	if len(d.data)-d.i < len(lit) || string(d.data[d.i:d.i+len(lit)]) != lit {
		return false
	}
	d.i += len(lit)
	return true
}

// object parses an object, calling field for each key with the decoder
// positioned at the value (whitespace skipped). The key is valid only
// during the call.
func (d *chunkDecoder) object(field func(key []byte) bool) bool {
	if d.i >= len(d.data) || d.data[d.i] != '{' {
		return false
	}
	d.i++
	d.ws()
	if d.i < len(d.data) && d.data[d.i] == '}' {
		d.i++
		return true
	}
	for {
		key, ok := d.key()
		if !ok {
			return false
		}
		d.ws()
		if d.i >= len(d.data) || d.data[d.i] != ':' {
			return false
		}
		d.i++
		d.ws()
		if !field(key) {
			return false
		}
		d.ws()
		if d.i >= len(d.data) {
			return false
		}
		switch d.data[d.i] {
		case ',':
			d.i++
			d.ws()
		case '}':
			d.i++
			return true
		default:
			return false
		}
	}
}

// array parses an array, calling elem with the decoder positioned at each
// element.
func (d *chunkDecoder) array(elem func() bool) bool {
	if d.i >= len(d.data) || d.data[d.i] != '[' {
		return false
	}
	d.i++
	d.ws()
	if d.i < len(d.data) && d.data[d.i] == ']' {
		d.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		d.ws()
		if d.i >= len(d.data) {
			return false
		}
		switch d.data[d.i] {
		case ',':
			d.i++
			d.ws()
		case ']':
			d.i++
			return true
		default:
			return false
		}
	}
}

// key reads an object key. Keys with escapes are left to encoding/json.
func (d *chunkDecoder) key() ([]byte, bool) {
	raw, esc, ok := d.rawString()
	if !ok || esc {
		return nil, false
	}
	return raw, true
}

// rawString consumes a string and returns its bytes between the quotes,
// and whether they contain escapes. It checks the string is valid JSON.
func (d *chunkDecoder) rawString() (raw []byte, esc, ok bool) {
	if d.i >= len(d.data) || d.data[d.i] != '"' {
		return nil, false, false
	}
	start := d.i + 1
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.i = i + 1
			return d.data[start:i], esc, true
		case c == '\\':
			esc = true
			i++
			if i >= len(d.data) {
				return nil, false, false
			}
			switch d.data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(d.data) || !isHex4(d.data[i+1:i+5]) {
					return nil, false, false
				}
				i += 4
			default:
				return nil, false, false
			}
		case c < ' ':
			return nil, false, false
		}
	}
	return nil, false, false
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// str decodes a string or null (which, as in encoding/json, leaves *dst
// as it is) into *dst.
func (d *chunkDecoder) str(dst *string) bool {
	if d.literal("null") {
		return true
	}
	raw, esc, ok := d.rawString()
	if !ok {
		return false
	}
	if !esc && utf8.Valid(raw) {
		*dst = string(raw)
		return true
	}
	*dst = unquote(raw)
	return true
}

// unquote returns the text of the valid JSON string body raw, as
// encoding/json decodes it: invalid UTF-8 and lone surrogates become
// U+FFFD.
func unquote(raw []byte) string {
	var b strings.Builder
	b.Grow(len(raw))
	plain := 0 // start of the bytes to copy as they are
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(raw[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
			b.Write(raw[plain:i])
			b.WriteRune(unicode.ReplacementChar)
			i++
			plain = i
			continue
		}
		b.Write(raw[plain:i])
		i++
		switch e := raw[i]; e {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := hex4(raw[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				// A pair, or U+FFFD for a lone half.
				dec := unicode.ReplacementChar
				if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
					dec = utf16.DecodeRune(r, hex4(raw[i+3:]))
				}
				if dec != unicode.ReplacementChar {
					i += 6
				}
				r = dec
			}
			b.WriteRune(r)
		default: // '"', '\\', '/'
			b.WriteByte(e)
		}
		i++
		plain = i
	}
	b.Write(raw[plain:])
	return b.String()
}

func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// intValue decodes an integer or null into *dst.
func (d *chunkDecoder) intValue(dst *int) bool {
	var v int64
	if !d.int64Value(&v) {
		return false
	}
	if strconv.IntSize == 32 && int64(int32(v)) != v {
		return false
	}
	*dst = int(v)
	return true
}

// int64Value decodes an integer or null (which leaves *dst as it is) into
// *dst. Fractions, exponents and numbers of more than 18 digits are left
// to encoding/json.
func (d *chunkDecoder) int64Value(dst *int64) bool {
	if d.literal("null") {
		return true
	}
	i := d.i
	neg := i < len(d.data) && d.data[i] == '-'
	if neg {
		i++
	}
	start := i
	var v int64
	for i < len(d.data) && '0' <= d.data[i] && d.data[i] <= '9' {
		v = v*10 + int64(d.data[i]-'0')
		i++
	}
	n := i - start
	if n == 0 || n > 18 || (n > 1 && d.data[start] == '0') {
		return false
	}
	if i < len(d.data) {
		switch d.data[i] {
		case '.', 'e', 'E':
			return false
		}
	}
	if neg {
		v = -v
	}
	d.i = i
	*dst = v
	return true
}

// skip consumes one valid JSON value.
func (d *chunkDecoder) skip(depth int) bool {
	if d.i >= len(d.data) || depth > maxSkipDepth {
		return false
	}
	switch c := d.data[d.i]; {
	case c == '{':
		return d.object(func([]byte) bool { return d.skip(depth + 1) })
	case c == '[':
		return d.array(func() bool { return d.skip(depth + 1) })
	case c == '"':
		_, _, ok := d.rawString()
		return ok
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return d.number()
	}
	return false
}

// number consumes a JSON number.
func (d *chunkDecoder) number() bool {
	b, i := d.data, d.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	d.i = i
	return true
}
