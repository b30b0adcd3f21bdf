package daemonfile

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/paths"
)

func TestWriteReadRemove(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if _, err := Read(home); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Read of a missing file: %v, want ErrNotRunning", err)
	}
	if err := paths.EnsureDir(paths.RunDir(home)); err != nil {
		t.Fatal(err)
	}
	want := Info{Pid: 42, Version: "1.2.3", StartedAt: time.Unix(1700000000, 0).UTC(), Socket: paths.SocketFile(home), Instance: "abc", ProtocolVersions: [2]int{1, 4}}
	if err := Write(home, want); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(paths.DaemonInfoFile(home))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("daemon.json mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := Read(home)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("Read = %+v, want %+v", got, want)
	}
	if err := Remove(home); err != nil {
		t.Fatal(err)
	}
	if err := Remove(home); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	if _, err := Read(home); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Read after Remove: %v", err)
	}
}

func TestReadGarbage(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := paths.EnsureDir(paths.RunDir(home)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.DaemonInfoFile(home), []byte("{nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(home); err == nil || errors.Is(err, ErrNotRunning) {
		t.Fatalf("Read of garbage: %v, want a parse error", err)
	}
}

func TestRunningAndAlive(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := paths.EnsureDir(paths.RunDir(home)); err != nil {
		t.Fatal(err)
	}
	if !Alive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	if Alive(0) || Alive(-1) {
		t.Fatal("pid 0 or -1 alive")
	}
	if err := Write(home, Info{Pid: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	if _, err := Running(home); err != nil {
		t.Fatalf("Running with a live pid: %v", err)
	}
	// A pid that has exited (and been reaped) is stale.
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := Write(home, Info{Pid: p.Pid}); err != nil {
		t.Fatal(err)
	}
	if _, err := Running(home); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("Running with a dead pid: %v", err)
	}
}
