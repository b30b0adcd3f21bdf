package config

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var bigSize = 64 << 10

// TestLargeFiles loads big (but legal) files: it guards against quadratic
// work on our side (go-toml's duplicate-key tracker is quadratic in the
// number of sibling keys, which MaxFileSize bounds).
func TestLargeFiles(t *testing.T) {
	var user, project strings.Builder
	user.WriteString("[provider]\nactive = \"p0\"\n")
	for i := 0; user.Len() < bigSize; i++ {
		fmt.Fprintf(&user, "[providers.p%d]\nmodel = \"m\"\n", i)
	}
	for i := 0; project.Len() < bigSize; i++ {
		fmt.Fprintf(&project, "agent.k%d = %d\n", i, i)
	}
	f := newFixture(t, user.String(), project.String())
	start := time.Now()
	c, diags := mustLoad(t, f, nil)
	if len(c.Providers) < 1000 || len(diags) < 1000 {
		t.Fatalf("%d providers, %d diagnostics", len(c.Providers), len(diags))
	}
	t.Logf("loaded %d providers, %d diagnostics in %v", len(c.Providers), len(diags), time.Since(start))

	var unknown strings.Builder
	for i := 0; unknown.Len() < bigSize; i++ {
		fmt.Fprintf(&unknown, "tools.k%d = %d\n", i, i)
	}
	f = newFixture(t, unknown.String(), "")
	_, _, err := f.load(nil)
	if err == nil || strings.Count(err.Error(), "\n") != maxReported || !strings.Contains(err.Error(), "more unknown keys") {
		t.Fatalf("err = %.300v", err)
	}
}
