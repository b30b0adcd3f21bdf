// Package golden compares rendered TUI text with files under testdata/.
// Renders are compared without ANSI styling and without trailing spaces,
// so goldens do not depend on the colour profile; run the tests with
// -update to rewrite the files.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

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
	path := filepath.Join("testdata", filepath.FromSlash(t.Name())+".golden")
	plain := Plain(got)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(plain), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if string(want) != plain {
		t.Errorf("render differs from %s (run with -update to accept):\n--- got ---\n%s\n--- want ---\n%s", path, plain, want)
	}
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
