package protocol

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// stdString is encoding/json's encoding of s without HTML escaping, the
// reference appendString follows.
func stdString(t testing.TB, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// trickyStrings are the inputs where a hand-written JSON string encoder
// tends to go wrong.
func trickyStrings() []string {
	var ctl strings.Builder
	for b := range 0x20 {
		ctl.WriteByte(byte(b))
	}
	ctl.WriteByte(0x7f)
	var all strings.Builder
	for b := range 256 {
		all.WriteByte(byte(b))
	}
	return []string{
		"",
		"plain ascii",
		ctl.String(),
		all.String(),
		"\b\f\n\r\t\v\a\x00\x1f",
		`"quoted" and \backslashed\ and \"both\"`,
		`\\\\""""`,
		`</script><!-- & -->`, // not HTML-escaped
		"\u2028 line sep, \u2029 para sep, \u2027 and \u202a near them",
		"emoji 🚀👩‍👩‍👧‍👦 and flags 🇺🇦, BMP ✓ €, CJK 漢字",
		"\U0010FFFF max rune, \uFFFD replacement char, \uFEFF BOM",
		"invalid \xff byte",
		"\xff\xfe\xfd run of invalid bytes",
		"truncated \xe2\x82 euro",
		"truncated at end \xf0\x9f\x9a",
		"surrogate half \xed\xa0\x80 in UTF-8",
		"overlong \xc0\xaf slash",
		"\x80 leading continuation",
		"mixed \x00\"\\\xff\u2028🚀\n",
		strings.Repeat("long ascii text ", 10000),
		strings.Repeat("\"\\\n\x01\u2028é🚀\xff", 5000),
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range trickyStrings() {
		got := appendString(nil, s)
		want := stdString(t, s)
		if !bytes.Equal(got, want) {
			name := s
			if len(name) > 60 {
				name = name[:60] + "..."
			}
			t.Errorf("appendString(%q)\n got %s\nwant %s", name, clip(got), clip(want))
		}
	}
}

func TestAppendStringAppends(t *testing.T) {
	t.Parallel()
	dst := []byte("head:")
	got := appendString(dst, "a\"b")
	if string(got) != `head:"a\"b"` {
		t.Errorf("got %s", got)
	}
}

func clip(b []byte) []byte {
	if len(b) > 200 {
		return append(b[:200:200], "..."...)
	}
	return b
}

// validReplaced is what a JSON decoder returns for s after encoding/json
// encoded it: every byte of invalid UTF-8 replaced by U+FFFD, one for each
// byte (strings.ToValidUTF8 folds a run of them into one, which is not what
// encoding/json writes).
func validReplaced(s string) string { return string([]rune(s)) }

func FuzzAppendString(f *testing.F) {
	for _, s := range trickyStrings() {
		if len(s) < 1024 {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendString(nil, s)
		if want := stdString(t, s); !bytes.Equal(got, want) {
			t.Fatalf("appendString(%q) = %s, encoding/json writes %s", s, got, want)
		}
		if !json.Valid(got) {
			t.Fatalf("appendString(%q) = %s is not valid JSON", s, got)
		}
		if !utf8.Valid(got) {
			t.Fatalf("appendString(%q) = %q is not valid UTF-8", s, got)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("decoding %s: %v", got, err)
		}
		if want := validReplaced(s); back != want {
			t.Fatalf("appendString(%q) decodes to %q, want %q", s, back, want)
		}
		// Where invalid bytes never follow each other, that is also
		// strings.ToValidUTF8.
		if !hasAdjacentInvalid(s) {
			if want := strings.ToValidUTF8(s, "\uFFFD"); back != want {
				t.Fatalf("appendString(%q) decodes to %q, want ToValidUTF8 %q", s, back, want)
			}
		}
	})
}

func hasAdjacentInvalid(s string) bool {
	prevBad := false
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		bad := r == utf8.RuneError && n == 1
		if bad && prevBad {
			return true
		}
		prevBad = bad
		i += n
	}
	return false
}
