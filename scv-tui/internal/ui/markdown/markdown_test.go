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

// TestLineBreaksAndWrappedCode: single line breaks of the model's text
// stay line breaks, and a code line cut to the width continues at its
// indentation.
func TestLineBreaksAndWrappedCode(t *testing.T) {
	t.Parallel()
	r := New("dark")
	out := r.Render("files:\nalpha.go\nbeta.go", 40)
	plain := make([]string, len(out))
	for i, l := range out {
		plain[i] = strings.TrimSpace(ansi.Strip(l))
	}
	if strings.Join(plain, "|") != "files:|alpha.go|beta.go" {
		t.Errorf("line breaks were merged: %q", plain)
	}
	code := "```\nfunc f() {\n        return aVeryLongIdentifierThatCannotFitOnOneLine + anotherLongOne\n}\n```"
	out = r.Render(code, 40)
	var ret []string
	for i, l := range out {
		p := ansi.Strip(l)
		if strings.Contains(p, "return") {
			ret = out[i:]
			break
		}
	}
	if len(ret) < 2 {
		t.Fatalf("the long code line was not cut:\n%s", strings.Join(out, "\n"))
	}
	first, next := ansi.Strip(ret[0]), ansi.Strip(ret[1])
	indent := len(first) - len(strings.TrimLeft(first, " "))
	if got := len(next) - len(strings.TrimLeft(next, " ")); got != indent {
		t.Errorf("the continuation starts at column %d, want the line's indentation %d:\n%q\n%q", got, indent, first, next)
	}
	golden.RequireWidth(t, strings.Join(out, "\n"), 40)
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
