package wechat

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestPlainText(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"# Title":                            "Title",
		"**bold** and __strong__":            "bold and strong",
		"an *emphasis* here":                 "an emphasis here",
		"snake_case_name stays":              "snake_case_name stays",
		"2 * 3 * 4":                          "2 * 3 * 4",
		"see [docs](https://x.io/a)":         "see docs (https://x.io/a)",
		"<https://x.io>":                     "<https://x.io>",
		"[https://x.io](https://x.io)":       "https://x.io",
		"![chart](c.png)":                    "chart (c.png)",
		"- one\n  * two":                     "• one\n  • two",
		"> quoted":                           "│ quoted",
		"run `go **test**`":                  "run go **test**",
		"~~old~~ new":                        "old new",
		"---":                                "──────────",
		"```go\nx := *p\n# not a title\n```": "x := *p\n# not a title",
	} {
		if got := PlainText(in); got != want {
			t.Errorf("PlainText(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplitText(t *testing.T) {
	t.Parallel()
	if SplitText("") != nil || SplitText("\n\n") != nil {
		t.Error("empty text gives no piece")
	}
	s := strings.Repeat("é", 5000)
	p := SplitText(s)
	if len(p) != 2 || utf8.RuneCountInString(p[0]) != ChunkRunes || p[0]+p[1] != s {
		t.Errorf("a word longer than a piece: %d pieces", len(p))
	}
	for _, x := range p {
		if !utf8.ValidString(x) {
			t.Error("cut inside a character")
		}
	}
}

func BenchmarkSplitText(b *testing.B) {
	s := PlainText(strings.Repeat("## Step\n\nSome **text** with `code` and [a link](https://example.com).\n\n", 400))
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		_ = SplitText(s)
	}
}

func BenchmarkPlainText(b *testing.B) {
	s := strings.Repeat("## Step\n\nSome **text** with `code` and [a link](https://example.com).\n- item\n", 400)
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		_ = PlainText(s)
	}
}
