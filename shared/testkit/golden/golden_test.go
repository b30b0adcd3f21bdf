package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	r.msg = fmt.Sprintf(format, args...)
}
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

func TestEqual(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.golden")
	if err := os.WriteFile(path, []byte("one\n\x1b[1mtwo\x1b[0m\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	same := &recorder{TB: t}
	Equal(same, path, "one\n\x1b[1mtwo\x1b[0m\nthree\n")
	if same.failed {
		t.Fatalf("equal output failed: %s", same.msg)
	}

	differ := &recorder{TB: t}
	Equal(differ, path, []byte("one\n\x1b[2mtwo\x1b[0m\nthree"))
	if !differ.failed {
		t.Fatal("different output passed")
	}
	for _, want := range []string{`-`, `"\x1b[1mtwo\x1b[0m\n"`, `+`, `"\x1b[2mtwo\x1b[0m\n"`, `"three"`, "-update", "^TestEqual$"} {
		if !strings.Contains(differ.msg, want) {
			t.Errorf("the failure does not show %s:\n%s", want, differ.msg)
		}
	}

	missing := &recorder{TB: t}
	Equal(missing, filepath.Join(dir, "none.golden"), "x")
	if !missing.failed || !strings.Contains(missing.msg, "-update") {
		t.Errorf("a missing file: failed %v, %q", missing.failed, missing.msg)
	}
}

func TestUpdateWrites(t *testing.T) {
	// Not parallel: it sets the package's -update flag.
	*update = true
	defer func() { *update = false }()
	path := filepath.Join(t.TempDir(), "sub", "dir", "new.golden")
	Equal(t, path, "written\n")
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "written\n" {
		t.Fatalf("-update wrote %q, %v", got, err)
	}
}

func TestPath(t *testing.T) {
	t.Parallel()
	t.Run("sub case", func(t *testing.T) {
		if got, want := Path(t), filepath.Join("testdata", "TestPath", "sub_case.golden"); got != want {
			t.Errorf("Path = %q, want %q", got, want)
		}
	})
}

func TestDiffEqual(t *testing.T) {
	t.Parallel()
	if d := Diff("a\nb\n", "a\nb\n"); d != "" {
		t.Errorf("Diff of equal texts = %q", d)
	}
}
