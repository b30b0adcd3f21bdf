package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/paths"
)

// TestUntrustedConfigFiles: a FIFO in place of the user file or of a
// project file is refused at once, never read (it would hang start-up or
// the session); the user file may be a symbolic link anywhere (dotfiles
// managers make it one), a project file only to a file inside its
// workspace.
func TestUntrustedConfigFiles(t *testing.T) {
	t.Parallel()
	quick := func(f fixture) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { _, _, err := f.load(nil); done <- err }()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("Load blocked")
			return nil
		}
	}
	for _, which := range []string{"user", "project"} {
		f := newFixture(t, "", "")
		path := f.userFile
		if which == "project" {
			path = f.projectFile
		}
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := quick(f); err == nil || !strings.Contains(err.Error(), path+": is a named pipe (FIFO), not a regular file; remove it") {
			t.Errorf("FIFO as the %s file: %v", which, err)
		}
	}

	// The user file linked from a dotfiles repository.
	f := newFixture(t, "", "")
	dotfiles := filepath.Join(t.TempDir(), "scv.toml")
	if err := os.WriteFile(dotfiles, []byte("[agent]\nmax_steps = 7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dotfiles, f.userFile); err != nil {
		t.Fatal(err)
	}
	if c, _, err := f.load(nil); err != nil || c.Agent.MaxSteps != 7 {
		t.Fatalf("a linked user file: %v", err)
	}

	// A project file linked inside its workspace is read; one linked
	// outside it is refused.
	f = newFixture(t, "", "")
	shared := filepath.Join(f.workspace, "tools.toml")
	if err := os.WriteFile(shared, []byte("[tools]\noutput_limit_bytes = 4096\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../tools.toml", f.projectFile); err != nil {
		t.Fatal(err)
	}
	if c, _, err := f.load(nil); err != nil || c.Tools.OutputLimitBytes != 4096 {
		t.Fatalf("a project file linked inside the workspace: %v", err)
	}
	if err := os.Remove(f.projectFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dotfiles, f.projectFile); err != nil {
		t.Fatal(err)
	}
	if err := quick(f); err == nil || !strings.Contains(err.Error(), f.projectFile+": leads outside "+f.workspace) {
		t.Fatalf("a project file linked outside the workspace: %v", err)
	}
}

// TestEditorsRefuseAFIFO: the commands that edit the user file (scv mcp
// add|remove, scv channels add|remove) read it as Load does: a FIFO in its
// place is refused at once instead of hanging the command, and left as it
// is (issue 14, item 20).
func TestEditorsRefuseAFIFO(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "", "")
	if err := syscall.Mkfifo(f.userFile, 0o600); err != nil {
		t.Fatal(err)
	}
	env := paths.MapEnv(nil)
	s := DefaultMCPServer()
	s.Command = "k"
	for name, edit := range map[string]func() error{
		"AddMCPServer":        func() error { return AddMCPServer(f.home, "files", s, env) },
		"RemoveMCPServer":     func() error { return RemoveMCPServer(f.home, "files", env) },
		"RemoveFeishuAccount": func() error { return RemoveFeishuAccount(f.home, "work", env) },
	} {
		done := make(chan error, 1)
		go func() { done <- edit() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), f.userFile+": is a named pipe (FIFO), not a regular file; remove it") {
				t.Errorf("%s: %v", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s blocked on the FIFO", name)
		}
	}
	if fi, err := os.Lstat(f.userFile); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO was replaced: %v %v", fi, err)
	}
}
