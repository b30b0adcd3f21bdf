package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/fakeopenai"
)

// TestCompletions: `scv __complete`, what the shell's completion script
// runs on Tab, offers the configured models for --model, and for --resume
// the stored sessions of -C's workspace, newest first, each described by
// its first prompt (asked of a real scv-server); another workspace's
// sessions are not offered, and -C completes directories.
func TestCompletions(t *testing.T) {
	t.Parallel()
	srv := fakeopenai.Start(t)
	srv.Enqueue(fakeopenai.Script(fakeopenai.Text("One.")), fakeopenai.Script(fakeopenai.Text("Two.")))
	home, ws, other := t.TempDir(), t.TempDir(), t.TempDir()
	cfg := srv.Config("") + "\n[providers.fake.models.\"fake-large\"]\ncontext_max_tokens = 200000\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"first prompt", "second prompt"} {
		if r := runSCV(t, home, "exec", "-C", ws, p); r.code != 0 {
			t.Fatalf("scv exec %q: exit %d, stderr %q", p, r.code, r.stderr)
		}
	}
	lines := func(args ...string) []string {
		t.Helper()
		r := runSCV(t, home, append([]string{"__complete"}, args...)...)
		if r.code != 0 {
			t.Fatalf("scv __complete %q: exit %d, stderr %q", args, r.code, r.stderr)
		}
		return strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	}

	got := lines("--model", "")
	want := []string{"fake-model\tthe configured model of provider fake", "fake-large\tof provider fake", ":4"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("--model completions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := lines("--model", "fake-l"); len(got) != 2 || !strings.HasPrefix(got[0], "fake-large\t") {
		t.Errorf("--model fake-l completions: %q", got)
	}

	got = lines("-C", ws, "--resume", "")
	if len(got) != 3 || got[2] != ":36" || !strings.HasSuffix(got[0], ", 1 turn: second prompt") || !strings.HasSuffix(got[1], ", 1 turn: first prompt") {
		t.Fatalf("--resume completions in the workspace:\n%s", strings.Join(got, "\n"))
	}
	id, _, _ := strings.Cut(got[1], "\t")
	if got := lines("-C", ws, "--resume", id[:8]); len(got) != 2 || !strings.HasPrefix(got[0], id+"\t") {
		t.Errorf("--resume %s completions: %q, want only %s", id[:8], got, id)
	}
	if got := lines("-C", other, "--resume", ""); len(got) != 1 || got[0] != ":36" {
		t.Errorf("--resume completions in another workspace: %q, want none", got)
	}
	if got := lines("-C", ""); got[len(got)-1] != ":16" {
		t.Errorf("-C completions end with %q, want the directory directive :16", got[len(got)-1])
	}
}
