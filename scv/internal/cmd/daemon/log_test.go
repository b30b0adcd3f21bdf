package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/scv-cli/scv/shared/statefile"
)

// TestLogIsAStateFile: the daemon's log is opened like every file under
// SCV_HOME: a symbolic link in its place is refused rather than followed
// (the daemon would append to a file outside SCV_HOME), and the file it
// pointed to is left as it was (issue 14, item 20).
func TestLogIsAStateFile(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	outside := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(outside, []byte("mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(LogFile(home)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, LogFile(home)); err != nil {
		t.Fatal(err)
	}
	f, err := openLog(home)
	var nr *statefile.NotRegularError
	if err == nil {
		_, _ = f.WriteString("daemon output\n")
		f.Close()
	}
	if !errors.As(err, &nr) || !strings.Contains(err.Error(), "daemon's log") {
		t.Errorf("openLog through a link: %v", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != "mine\n" {
		t.Fatalf("the linked file became %q", b)
	}
	if tail := logTail(LogFile(home), 0); tail != "see "+LogFile(home) {
		t.Errorf("logTail through a link = %q", tail)
	}
}

// TestLogTail: a failed start shows what the log gained since offset, at
// most its last logTailBytes, never cutting a character.
func TestLogTail(t *testing.T) {
	t.Parallel()
	file := LogFile(t.TempDir())
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	earlier := "an earlier run\n"
	if err := os.WriteFile(file, []byte(earlier+"  failed: no socket\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := logTail(file, int64(len(earlier))); got != "failed: no socket" {
		t.Errorf("logTail = %q", got)
	}
	long := earlier + strings.Repeat("é", logTailBytes) + "the end\n"
	if err := os.WriteFile(file, []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	got := logTail(file, int64(len(earlier)))
	if !strings.HasPrefix(got, "…é") || !strings.HasSuffix(got, "éthe end") || len(got) > logTailBytes+len("…") || !utf8.ValidString(got) {
		t.Errorf("logTail of a long log = %d bytes %q…", len(got), got[:min(len(got), 20)])
	}
	if got := logTail(file, int64(len(long))+1); got != "see "+file {
		t.Errorf("logTail past the end = %q", got)
	}
}
