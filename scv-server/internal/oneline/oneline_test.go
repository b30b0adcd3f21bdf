package oneline

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 100, "plain"},
		{"  a \n\t b\r\n", 100, "a b"},
		{"a\u2028b\u2029c\x00d", 100, "a b c d"},
		{"bad \xff byte", 100, "bad \uFFFD byte"},
		{"abcdefghij", 8, "abcde…"},
		{"héllo wörld", 9, "héllo…"},
		{"héllo wörld", 8, "héll…"},
		{"a bcdef", 5, "a…"}, // no space before the ellipsis
		{"abc", 3, "abc"},
		{"abcd", 2, ""},
	} {
		if got := Bound(tc.in, tc.max); got != tc.want {
			t.Errorf("Bound(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func FuzzBound(f *testing.F) {
	f.Add("a  b\nc", 5)
	f.Add("\xff\xfe héllo", 7)
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		got := Bound(s, max)
		if len(got) > max {
			t.Fatalf("Bound(%q, %d) = %q, %d bytes", s, max, got, len(got))
		}
		if !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r\t\u2028\u2029") {
			t.Fatalf("Bound(%q, %d) = %q: not one valid line", s, max, got)
		}
	})
}
