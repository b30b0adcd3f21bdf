package editor

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
)

func key(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "alt+enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt}
	case "shift+enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModShift}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "ctrl+w":
		return tea.KeyPressMsg{Code: 'w', Mod: tea.ModCtrl}
	case "ctrl+u":
		return tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl}
	}
	r := []rune(s)
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

func typeText(e *Editor, s string) {
	for _, r := range s {
		e.HandleKey(key(string(r)))
	}
}

func TestGolden(t *testing.T) {
	t.Parallel()
	st := styles.Default()
	tests := []struct {
		name  string
		width int
		rows  int
		fill  func(*Editor)
	}{
		{"empty", 40, 5, func(*Editor) {}},
		{"typed", 40, 5, func(e *Editor) { typeText(e, "hello world") }},
		{"multiline", 40, 5, func(e *Editor) {
			typeText(e, "first")
			e.HandleKey(key("alt+enter"))
			typeText(e, "second")
			e.HandleKey(key("shift+enter"))
			typeText(e, "third")
		}},
		{"wrapped", 40, 5, func(e *Editor) {
			typeText(e, strings.Repeat("abcdefghij ", 8))
		}},
		{"big_paste", 40, 4, func(e *Editor) {
			var b strings.Builder
			for i := range 5000 {
				b.WriteString("pasted line ")
				b.WriteString(strings.Repeat("x", i%30))
				b.WriteString("\r\n")
			}
			e.Insert(b.String())
			typeText(e, "end")
		}},
		{"cursor_middle", 40, 5, func(e *Editor) {
			typeText(e, "one two")
			for range 4 {
				e.HandleKey(key("left"))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(tt.rows)
			tt.fill(e)
			out := e.View(st, tt.width, "Type a prompt; Enter sends, /help lists commands")
			golden.RequireWidth(t, out, tt.width)
			if h := strings.Count(out, "\n") + 1; h > tt.rows {
				t.Errorf("%d rows, over %d", h, tt.rows)
			}
			golden.RequireStyled(t, out)
		})
	}
}

func TestEditing(t *testing.T) {
	t.Parallel()
	e := New(5)
	typeText(e, "abc")
	e.HandleKey(key("alt+enter"))
	typeText(e, "def")
	if e.Value() != "abc\ndef" {
		t.Fatalf("value %q", e.Value())
	}
	e.HandleKey(key("up"))
	typeText(e, "X")
	if e.Value() != "abcX\ndef" {
		t.Errorf("after up+X: %q", e.Value())
	}
	e.HandleKey(key("down"))
	e.HandleKey(tea.KeyPressMsg{Code: tea.KeyHome})
	e.HandleKey(key("backspace")) // joins with the line above
	if e.Value() != "abcXdef" {
		t.Errorf("after join: %q", e.Value())
	}
	e.HandleKey(key("ctrl+w"))
	if e.Value() != "def" {
		t.Errorf("after ctrl+w: %q", e.Value())
	}
	e.Insert("a\tb\r\nc\x1b[31m")
	if e.Value() != "a    b\ncdef" {
		t.Errorf("after sanitized insert: %q", e.Value())
	}
	if e.HandleKey(key("enter")) != Ignored {
		t.Error("Enter must be left to the caller")
	}
	e.Reset()
	if !e.Empty() {
		t.Error("not empty after Reset")
	}
}

// TestInsertLineEndings keeps the lines of a paste whatever ends them:
// LF, CRLF, or a lone CR as many terminals and old editors send.
func TestInsertLineEndings(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"lf":    "one\ntwo\nthree",
		"crlf":  "one\r\ntwo\r\nthree",
		"cr":    "one\rtwo\rthree",
		"mixed": "one\r\ntwo\rthree",
	} {
		e := New(5)
		e.Insert(in)
		if e.Value() != "one\ntwo\nthree" {
			t.Errorf("%s: %q became %q", name, in, e.Value())
		}
	}
}

func TestHistory(t *testing.T) {
	t.Parallel()
	e := New(5)
	e.SetHistory([]string{"old one", "multi\nline", "newest"})
	typeText(e, "draft")
	e.HandleKey(key("up"))
	if e.Value() != "newest" {
		t.Fatalf("first up: %q", e.Value())
	}
	e.HandleKey(key("up"))
	if e.Value() != "multi\nline" {
		t.Fatalf("second up: %q", e.Value())
	}
	e.HandleKey(key("up")) // the cursor is on the first line: older prompt
	if e.Value() != "old one" {
		t.Fatalf("third up: %q", e.Value())
	}
	e.HandleKey(key("up"))
	if e.Value() != "old one" {
		t.Fatalf("past the oldest: %q", e.Value())
	}
	for range 4 {
		e.HandleKey(key("down"))
	}
	if e.Value() != "draft" {
		t.Errorf("back to the draft: %q", e.Value())
	}
}
