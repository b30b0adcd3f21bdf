package acp

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFirstLine: a tool call's title is the command's first line, cut at
// a character boundary (never inside one, never dropping more than the
// partial character) with a mark when something was left out.
func TestFirstLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"ls -la", "ls -la"},
		{"  echo a\necho b", "echo a …"},
		{"echo " + strings.Repeat("é", 10), "echo éé …"}, // 10 bytes: "echo " and two é, the third cut
		{"\xffecho ééé", "\xffecho éé …"},                // an invalid byte early does not empty the title
	} {
		got := firstLine(c.in, 10)
		if got != c.want {
			t.Errorf("firstLine(%q, 10) = %q, want %q", c.in, got, c.want)
		}
		if utf8.ValidString(c.in) && !utf8.ValidString(got) {
			t.Errorf("firstLine(%q) = %q is not valid UTF-8", c.in, got)
		}
	}
}
