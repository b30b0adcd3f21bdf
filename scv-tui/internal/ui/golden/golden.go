// Package golden compares rendered TUI text with files under testdata/
// through the shared test kit (shared/testkit/golden, whose -update
// rewrites them).
//
// RequireStyled keeps the ANSI styling: the golden file holds the escapes
// as rendered for the fixed colour profile Profile, so a changed colour,
// attribute or border colour fails the test (the kit's diff quotes every
// line, so the escapes are readable in the failure). Every component's
// rendering has at least one styled golden. RequirePlain strips the
// styling and trailing spaces, for goldens that are about text and layout
// only (whole app screens, whose parts have styled goldens of their own).
package golden

import (
	"strings"
	"testing"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	kit "github.com/scv-cli/scv/shared/testkit/golden"
)

// Profile is the colour profile styled goldens are rendered for. It is
// fixed, never detected from the terminal or environment running the
// test, so goldens are the same everywhere. TrueColor keeps every colour
// exactly as the styles define it: two nearby colours that a smaller
// profile would map to one palette entry still differ in the golden.
const Profile = colorprofile.TrueColor

// Styled returns s as a terminal of the fixed Profile receives it (the
// colours converted to that profile, the way the program's output
// writer converts them).
func Styled(s string) string {
	var b strings.Builder
	w := &colorprofile.Writer{Forward: &b, Profile: Profile}
	if _, err := w.WriteString(s); err != nil {
		// A strings.Builder does not fail; keep the input rather than lose it.
		return s
	}
	return b.String()
}

// Plain strips ANSI sequences and trailing spaces from every line of s.
func Plain(s string) string {
	lines := strings.Split(ansi.Strip(s), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// RequireStyled compares got, styling included (see Styled), with
// testdata/<test name>.golden, or writes that file under -update.
func RequireStyled(t testing.TB, got string) {
	t.Helper()
	kit.Equal(t, kit.Path(t), Styled(got))
}

// RequirePlain compares the plain form of got (see Plain) with
// testdata/<test name>.golden, or writes that file under -update. Use it
// only for goldens about text and layout; a component's rendering needs
// a RequireStyled golden.
func RequirePlain(t testing.TB, got string) {
	t.Helper()
	kit.Equal(t, kit.Path(t), Plain(got))
}

// RequireWidth fails when a line of s is wider than width cells. Width is
// measured on the text without its escapes.
func RequireWidth(t testing.TB, s string, width int) {
	t.Helper()
	for i, l := range strings.Split(s, "\n") {
		if w := ansi.StringWidth(l); w > width {
			t.Errorf("line %d is %d cells, over the width %d: %q", i, w, width, ansi.Strip(l))
		}
	}
}
