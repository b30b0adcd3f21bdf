package toolcard

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scv-cli/scv/scv-tui/internal/ui/golden"
	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
)

func TestRender(t *testing.T) {
	t.Parallel()
	longOut := strings.Repeat("ok  \tpkg/line\n", 9) + "FAIL"
	tests := []struct {
		name  string
		width int
		card  func() *Card
	}{
		{"proposed", 60, func() *Card { return New("c1", "read", json.RawMessage(`{"path":"main.go"}`)) }},
		{"waiting", 60, func() *Card {
			c := New("c1", "bash", json.RawMessage(`{"command":"go test ./..."}`))
			c.State = Waiting
			return c
		}},
		{"running", 60, func() *Card {
			c := New("c1", "bash", json.RawMessage(`{"command":"go test ./..."}`))
			c.Start("")
			c.AddProgress("$ go test ./...")
			c.AddProgress("ok   github.com/x/a 0.1s")
			return c
		}},
		{"running_rule", 60, func() *Card {
			c := New("c1", "bash", json.RawMessage(`{"command":"go test ./x"}`))
			c.Start("bash commands that start with `go test`")
			return c
		}},
		{"succeeded", 60, func() *Card {
			c := New("c1", "read", json.RawMessage(`{"path":".env"}`))
			c.Complete(true, "[.env: 37 bytes; bytes 0-37]\nAPI_BASE_URL=https://api.example.com\n", false)
			return c
		}},
		{"failed", 60, func() *Card {
			c := New("c1", "bash", json.RawMessage(`{"command":"go test ./..."}`))
			c.Complete(false, "exit status 1", false)
			return c
		}},
		{"collapsed", 60, func() *Card {
			c := New("c1", "bash", json.RawMessage(`{"command":"go test ./..."}`))
			c.Complete(true, longOut, false)
			return c
		}},
		{"expanded", 60, func() *Card {
			c := New("c1", "bash", json.RawMessage(`{"command":"go test ./..."}`))
			c.Complete(true, longOut, false)
			c.Expanded = true
			return c
		}},
		{"truncated", 60, func() *Card {
			c := New("c1", "read", json.RawMessage(`{"path":"big.log"}`))
			c.Complete(true, "line 1\nline 2", true)
			return c
		}},
		{"agent", 60, func() *Card {
			c := New("c2", "agent", json.RawMessage(`{"agent":"codex","prompt":"fix the failing test in pkg/a"}`))
			c.Start("")
			c.AddProgress("reading pkg/a/a_test.go")
			return c
		}},
		{"raw_arguments", 60, func() *Card {
			c := New("c3", "read", json.RawMessage(`"{\"path\":"`))
			c.Complete(false, "the arguments of read are not valid JSON (unexpected end); send one JSON object matching the tool's schema", false)
			return c
		}},
		{"narrow", 40, func() *Card {
			c := New("c1", "bash", json.RawMessage(`{"command":"go test -run TestSomethingLong ./internal/..."}`))
			c.Complete(false, "--- FAIL: TestSomethingLong (0.00s)\n    thing_test.go:12: got 1, want 2 and a long explanation follows", false)
			return c
		}},
		{"one_more_line", 60, func() *Card {
			c := New("c1", "bash", json.RawMessage(`{"command":"seq 5"}`))
			c.Complete(true, "1\n2\n3\n4\n5", false)
			return c
		}},
		{"stopped", 60, func() *Card {
			c := New("c1", "bash", json.RawMessage(`{"command":"make test"}`))
			c.Start("")
			c.AddProgress("compiling pkg/a")
			c.AddProgress("running 12 tests")
			c.Stop("stopped: the turn was cancelled")
			return c
		}},
		{"hostile_output", 40, func() *Card {
			c := New("c1", "bash", json.RawMessage(`{"command":"printf"}`))
			c.Complete(true, "\x1b[2J\x1b[31mred\x1b[0m\tcol\r\nnext", false)
			return c
		}},
	}
	st := styles.Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := strings.Join(tt.card().Render(st, tt.width, "⠋"), "\n")
			golden.RequireWidth(t, out, tt.width)
			golden.RequireStyled(t, out)
			if strings.Contains(golden.Plain(out), "\x1b") {
				t.Error("escape sequences from the output reached the render")
			}
		})
	}
}

func TestProgressKeepsLatest(t *testing.T) {
	t.Parallel()
	c := New("c", "bash", json.RawMessage(`{}`))
	c.Start("")
	for _, l := range []string{"1", "2", "3", "4", "5"} {
		c.AddProgress(l)
	}
	if got := strings.Join(c.Progress, ","); got != "3,4,5" {
		t.Errorf("progress = %s, want the latest three", got)
	}
	c.Complete(true, "done", false)
	if c.Progress != nil {
		t.Error("progress kept after completion")
	}
}
