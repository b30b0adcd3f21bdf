// Package golden compares test output with files committed under a
// package's testdata, the one golden-file helper of every module. Run a
// package's tests with -update to rewrite its files, then review the
// change with git diff before committing it.
//
// A difference fails the test with a line diff in which every line is
// quoted, so ANSI escapes, tabs, trailing spaces and a missing final
// newline are visible rather than rendered by the terminal.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files (testkit/golden) instead of comparing with them")

// Update reports whether the tests run with -update, for a test whose
// golden output is more than one file (a directory, a corpus) and writes
// it itself.
func Update() bool { return *update }

// Path is testdata/<test name>.golden, the default place of a test's
// golden file; a subtest's name gives a subdirectory.
func Path(t testing.TB) string {
	return filepath.Join("testdata", filepath.FromSlash(t.Name())+".golden")
}

// Equal compares got with the file at path (relative to the package's
// directory) and fails the test with a line diff when they differ. With
// -update it writes got to path instead, creating its directory.
func Equal[T ~string | ~[]byte](t testing.TB, path string, got T) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("creating the directory of the golden file: %v", err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("writing the golden file: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the golden file: %v (run go test -run '%s' -update in this package to create it)", err, runPattern(t))
		return
	}
	if string(want) == string(got) {
		return
	}
	t.Errorf("%s differs from the output (-want +got, one quoted line each; run go test -run '%s' -update to accept the output, then review git diff):\n%s",
		path, runPattern(t), Diff(string(want), string(got)))
}

// Diff is a line diff of want and got (-want +got) with every line
// quoted, or "" when they are equal.
func Diff(want, got string) string {
	return cmp.Diff(lines(want), lines(got))
}

// lines splits s after each newline, so that a missing or extra final
// newline is a visible difference.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitAfter(s, "\n")
}

// runPattern is a -run pattern that selects t's top-level test.
func runPattern(t testing.TB) string {
	top, _, _ := strings.Cut(t.Name(), "/")
	return "^" + top + "$"
}
