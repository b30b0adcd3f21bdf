// Package golden compares rendered TUI text with files under testdata/
// through the shared test kit (shared/testkit/golden, whose -update
// rewrites them). Renders are compared without ANSI styling and without
// trailing spaces, so goldens do not depend on the colour profile.
package golden

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	kit "github.com/scv-cli/scv/shared/testkit/golden"
)

// Plain strips ANSI sequences and trailing spaces from every line of s.
func Plain(s string) string {
	lines := strings.Split(ansi.Strip(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// RequireEqual compares the plain form of got with
// testdata/<test name>.golden, or writes that file under -update.
func RequireEqual(t testing.TB, got string) {
	t.Helper()
	kit.Equal(t, kit.Path(t), Plain(got))
}

// RequireWidth fails when a line of s is wider than width cells.
func RequireWidth(t testing.TB, s string, width int) {
	t.Helper()
	for i, l := range strings.Split(s, "\n") {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("line %d is %d cells, over the width %d: %q", i, w, width, ansi.Strip(l))
		}
	}
}
