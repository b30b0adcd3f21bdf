package bins

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests change the package's state and the environment: none is
// parallel.

func TestSharedDirBuildsOnce(t *testing.T) {
	shared := t.TempDir()
	t.Setenv(EnvDir, shared)
	Cleanup()
	t.Cleanup(Cleanup)

	p, err := Path("scv-bridge")
	if err != nil {
		t.Fatal(err)
	}
	if p != filepath.Join(shared, "scv-bridge") {
		t.Fatalf("Path = %s, want it in %s", p, shared)
	}
	out, err := exec.Command(p, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "scv-bridge") {
		t.Fatalf("the built program does not run: %v\n%s", err, out)
	}
	before, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}

	// Another test binary of the run (this process, forgetting what it
	// built) finds the program in place and does not build it again.
	Cleanup()
	time.Sleep(10 * time.Millisecond)
	if _, err := Path("scv-bridge"); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) || !os.SameFile(before, after) {
		t.Error("the program was built again in the run's shared directory")
	}
	// Cleanup leaves the run's directory to the run.
	Cleanup()
	if _, err := os.Stat(p); err != nil {
		t.Errorf("Cleanup removed the shared directory's program: %v", err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(shared, ".*.tmp*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

func TestPrivateDirIsRemoved(t *testing.T) {
	t.Setenv(EnvDir, "")
	Cleanup()
	d, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Fatal(err)
	}
	Cleanup()
	if _, err := os.Stat(d); !os.IsNotExist(err) {
		t.Errorf("Cleanup left the process's own directory %s: %v", d, err)
	}
}

func TestUnknownProgram(t *testing.T) {
	t.Setenv(EnvDir, t.TempDir())
	Cleanup()
	t.Cleanup(Cleanup)
	_, err := Build("scv-nothing")
	if err == nil || !strings.Contains(err.Error(), "scv-server") {
		t.Fatalf("Build(scv-nothing) = %v, want an error naming the programs", err)
	}
}
