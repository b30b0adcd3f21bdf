package wrap

import (
	"strings"
	"testing"
)

func TestSanitize(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"a\tb", "a    b"},
		{"line\r\nnext", "line\nnext"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"clear\x1b[2Jscreen", "clearscreen"},
		{"bell\a", "bell"},
		{"bad\xffutf8", "bad\uFFFDutf8"},
		{"c1\u0085x", "c1x"},
		{"héllo wörld", "héllo wörld"},
	}
	for _, tt := range tests {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		width int
		want  []string
	}{
		{"", 10, []string{""}},
		{"short", 10, []string{"short"}},
		{"hello world again", 11, []string{"hello world", "again"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"a\n\nb", 4, []string{"a", "", "b"}},
		{"日本語テキスト", 4, []string{"日本", "語テ", "キス", "ト"}},
		{"x", 0, []string{"x"}},
	}
	for _, tt := range tests {
		got := Lines(tt.in, tt.width)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("Lines(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
		for _, l := range got {
			if w := Width(l); w > max(tt.width, 1) && tt.width > 1 {
				t.Errorf("line %q is %d cells, over %d", l, w, tt.width)
			}
		}
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	if got := OneLine("a\n  b\tc"); got != "a ⏎ b c" {
		t.Errorf("OneLine = %q", got)
	}
}

func FuzzLines(f *testing.F) {
	f.Add("hello world", 5)
	f.Add("日本語\x1b[31m", 1)
	f.Fuzz(func(t *testing.T, s string, width int) {
		width = width%200 + 1
		if width < 1 {
			width = -width + 1
		}
		for _, l := range Lines(Sanitize(s), width) {
			if w := Width(l); w > width {
				t.Fatalf("line %q is %d cells, over %d", l, w, width)
			}
		}
	})
}
