package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestDocumentedCodes keeps docs/cli.md's table of exit codes equal to the
// constants: every code has a row with its name, and no row names a code
// that does not exist.
func TestDocumentedCodes(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Code{"OK": OK, "Failure": Failure, "Usage": Usage, "VersionMismatch": VersionMismatch, "Daemon": Daemon, "Config": Config, "Interrupted": Interrupted}
	rows := regexp.MustCompile("(?m)^\\| (\\d+) \\| `(\\w+)` \\|").FindAllSubmatch(b, -1)
	got := map[string]Code{}
	for _, r := range rows {
		n, _ := strconv.Atoi(string(r[1]))
		got[string(r[2])] = Code(n)
	}
	for name, code := range want {
		if g, ok := got[name]; !ok || g != code {
			t.Errorf("docs/cli.md: no row \"| %d | `%s` |\"", code, name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("docs/cli.md documents %s, which is no exit code of package cli", name)
		}
	}
}
