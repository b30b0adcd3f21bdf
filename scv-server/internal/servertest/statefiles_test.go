package servertest_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	st "github.com/scv-cli/scv/scv-server/internal/servertest"
	"github.com/scv-cli/scv/shared/protocol"
)

// TestUntrustedSessionFiles, over the protocol: a session log replaced by
// a symbolic link to a file outside SCV_HOME is refused on resume (not
// followed, not appended to), and a FIFO in place of a session's
// summary.json does not hang session.list; the session is listed from its
// log.
func TestUntrustedSessionFiles(t *testing.T) {
	t.Parallel()
	_, cfg, home, dir, sid := storedSession(t)
	sessionDir := filepath.Join(home, "state", "sessions", sid)
	summary := filepath.Join(sessionDir, "summary.json")
	if err := os.Remove(summary); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(summary, 0o600); err != nil {
		t.Fatal(err)
	}
	b := st.Start(t, st.Options{Config: cfg, Home: home})
	c := b.Client
	c.Init(3)
	c.Send(&protocol.SessionList{RequestID: c.ID(), Cwd: dir})
	if l := st.Expect[*protocol.SessionListed](c); len(l.Sessions) != 1 || l.Sessions[0].Title != "a title" {
		t.Fatalf("session.listed = %+v", l.Sessions)
	}

	log := filepath.Join(sessionDir, "log.jsonl")
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.Rename(log, victim); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, log); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: dir, Resume: sid})
	e := c.ExpectError(protocol.ErrInvalidRequest)
	if !strings.Contains(e.Message, "cannot be resumed") || !strings.Contains(e.Message, "is a symbolic link") {
		t.Fatalf("resume through a link: %+v", e)
	}
	if after, _ := os.ReadFile(victim); string(after) != string(before) {
		t.Fatal("the link's target was written to")
	}
	c.Send(&protocol.SessionList{RequestID: c.ID(), Cwd: dir})
	if l := st.Expect[*protocol.SessionListed](c); len(l.Sessions) != 0 {
		t.Fatalf("a session whose log is a link is listed: %+v", l.Sessions)
	}
}

// TestFIFOProjectConfig: a FIFO in place of a workspace's
// .scv/config.toml refuses the session at once instead of hanging the
// connection; the connection goes on.
func TestFIFOProjectConfig(t *testing.T) {
	t.Parallel()
	s := st.Start(t, st.Options{})
	c := s.Client
	c.Init(3)
	ws := t.TempDir()
	mkdir(t, filepath.Join(ws, ".scv"))
	if err := syscall.Mkfifo(filepath.Join(ws, ".scv", "config.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Send(&protocol.SessionStart{RequestID: c.ID(), Cwd: ws})
	if e := c.ExpectError(protocol.ErrInvalidRequest); !strings.Contains(e.Message, "is a named pipe (FIFO)") {
		t.Fatalf("error = %+v", e)
	}
	c.StartSession(t.TempDir(), 3)
}
