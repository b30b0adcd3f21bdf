package childenv

import (
	"slices"
	"testing"
)

// TestFilterKeepsOnlyTheAllowList: secrets SCV has never heard of and
// loader variables are not inherited; what a CLI needs is (issue 14,
// item 1).
func TestFilterKeepsOnlyTheAllowList(t *testing.T) {
	t.Parallel()
	env := []string{
		"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "https_proxy=http://p:3128",
		"TMPDIR=/tmp/x", "SCV_RUN_TAG=t1",
		"GH_TOKEN=ghp_secret", "AWS_SECRET_ACCESS_KEY=aws", "LD_PRELOAD=/evil.so", "BASH_ENV=/evil.sh",
		"MY_PROVIDER_TOKEN=sk-x", "NODE_OPTIONS=--require /evil.js", "SCV_PROVIDER=x", "HOME=/root",
		"FAKE_DIR=/f", "noequals", "=x",
	}
	got := Filter(env)
	want := []string{"PATH=/usr/bin", "LANG=C.UTF-8", "LC_ALL=C", "TERM=xterm", "https_proxy=http://p:3128", "TMPDIR=/tmp/x", "SCV_RUN_TAG=t1"}
	if !slices.Equal(got, want) {
		t.Fatalf("Filter = %q\nwant %q", got, want)
	}
	if got := Filter(env, "FAKE_*"); !slices.Contains(got, "FAKE_DIR=/f") || slices.Contains(got, "GH_TOKEN=ghp_secret") {
		t.Fatalf("Filter with FAKE_* = %q", got)
	}
}

func TestWithout(t *testing.T) {
	t.Parallel()
	got := Without([]string{"A=1", "MY_KEY=s", "B=2", "MY_KEY=again"}, "MY_KEY", "")
	if !slices.Equal(got, []string{"A=1", "B=2"}) {
		t.Fatalf("Without = %q", got)
	}
}
