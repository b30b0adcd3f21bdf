package markdown

import (
	"strconv"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
)

func TestRender(t *testing.T) {
	t.Parallel()
	doc := "# Title\n\nSome **bold** text, `code` and a [link](https://example.com).\n\n" +
		"```go\nfunc main() {\n\tfmt.Println(\"a line long enough to pass the narrow width of forty columns\")\n}\n```\n\n" +
		"- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
	r := New("dark")
	for _, w := range []int{80, 40, 12} {
		t.Run("w"+strconv.Itoa(w), func(t *testing.T) {
			out := strings.Join(r.Render(doc, w), "\n")
			golden.RequireWidth(t, out, w)
			golden.RequireStyled(t, out)
		})
	}
	// Code is highlighted: the Go keyword gets its own colour.
	if out := strings.Join(r.Render("```go\nfunc f() {}\n```", 40), "\n"); !strings.Contains(out, "\x1b[") || ansi.Strip(out) == out {
		t.Error("code block is not styled")
	}
	if len(r.byW) > maxRenderers {
		t.Errorf("%d renderers cached, over %d", len(r.byW), maxRenderers)
	}
}

func TestTrimStyledRight(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"plain   ", "plain"},
		{"\x1b[1mtext\x1b[m\x1b[38;5;252m \x1b[m\x1b[38;5;252m \x1b[m", "\x1b[1mtext\x1b[m"},
		{"\x1b[1mtext  \x1b[m", "\x1b[1mtext\x1b[m"},
		{"\x1b[38;5;252m   \x1b[0m", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := TrimStyledRight(tt.in); got != tt.want {
			t.Errorf("TrimStyledRight(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzRender(f *testing.F) {
	f.Add("# t\n\n```\ncode\n```", 20)
	f.Add("| a |\n|---|\n| 1 |", 5)
	r := New("dark")
	f.Fuzz(func(t *testing.T, s string, w int) {
		w = w%100 + 1
		if w < 1 {
			w = 1 - w%100
		}
		for _, l := range r.Render(s, w) {
			if ansi.StringWidth(l) > w {
				t.Fatalf("line %q wider than %d", ansi.Strip(l), w)
			}
		}
	})
}
