// Package bins builds the SCV programs that end-to-end tests run, once
// per test run rather than once per test binary.
//
// scripts/test.sh exports SCV_TEST_BIN_DIR, a fresh directory for the
// run: the first test that needs a program builds it there under a file
// lock, and every later test binary of every module finds it built. Run
// alone (go test in one package), a test binary builds into a directory
// of its own that Cleanup removes. The programs of one directory sit side
// by side, as an installation does, so scv finds scv-server and scv-tui
// next to itself.
//
// A directory in SCV_TEST_BIN_DIR is trusted as it is: a program already
// there is not rebuilt. Point it at a fresh directory for every run (as
// scripts/test.sh does), or copy prebuilt programs into it to test them.
package bins

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// EnvDir names the environment variable of the run's shared directory.
const EnvDir = "SCV_TEST_BIN_DIR"

// Programs are the names Build takes: the workspace's program modules.
var Programs = []string{"scv", "scv-server", "scv-tui", "scv-agents", "scv-bridge"}

var (
	mu      sync.Mutex
	dir     string // where this process's programs are; "" until the first Build
	private bool   // dir is this process's own, removed by Cleanup
	built   = map[string]bool{}
)

// Build makes sure each named program is built, and returns the directory
// that holds them all.
func Build(names ...string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if dir == "" {
		d, own, err := chooseDir()
		if err != nil {
			return "", err
		}
		dir, private = d, own
	}
	var todo []string
	for _, n := range names {
		if !slices.Contains(Programs, n) {
			return "", fmt.Errorf("bins: %q is not a program of the workspace; use one of %v", n, Programs)
		}
		if !built[n] {
			todo = append(todo, n)
		}
	}
	if len(todo) == 0 {
		return dir, nil
	}
	if err := buildLocked(dir, todo); err != nil {
		return "", err
	}
	for _, n := range todo {
		built[n] = true
	}
	return dir, nil
}

// Path builds the named program if needed and returns its path.
func Path(name string) (string, error) {
	d, err := Build(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, name), nil
}

// Need is Path for a test: it fails the test when the program cannot be
// built.
func Need(t testing.TB, name string) string {
	t.Helper()
	p, err := Path(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Cleanup removes the directory of this process's programs when it is the
// process's own (not SCV_TEST_BIN_DIR). Call it from TestMain after m.Run.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if private && dir != "" {
		_ = os.RemoveAll(dir)
	}
	dir, private = "", false
	clear(built)
}

func chooseDir() (string, bool, error) {
	if d := os.Getenv(EnvDir); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", false, fmt.Errorf("bins: %s=%s cannot be used: %w", EnvDir, d, err)
		}
		abs, err := filepath.Abs(d)
		return abs, false, err
	}
	d, err := os.MkdirTemp("", "scv-test-bin-")
	if err != nil {
		return "", false, fmt.Errorf("bins: making a directory for the test programs: %w", err)
	}
	return d, true, nil
}

// buildLocked builds the programs missing from d while holding d's file
// lock, so test binaries of several packages and modules running at once
// build each program once.
func buildLocked(d string, names []string) error {
	lock, err := os.OpenFile(filepath.Join(d, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("bins: opening the build lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("bins: taking the build lock: %w", err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	root, err := workspaceRoot()
	if err != nil {
		return err
	}
	for _, n := range names {
		out := filepath.Join(d, n)
		if fi, err := os.Stat(out); err == nil && fi.Mode().IsRegular() {
			continue // built by another test binary of this run
		}
		// Build beside the target and rename: a program is in place whole
		// or not at all, whoever looks.
		tmp := filepath.Join(d, "."+n+".tmp"+strconv.Itoa(os.Getpid()))
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", tmp, ".")
		cmd.Dir = filepath.Join(root, n)
		// Static programs, as released; it also lets the tests run them
		// where the C library differs.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("bins: building %s: %w\n%s", n, err, msg)
		}
		if err := os.Rename(tmp, out); err != nil {
			_ = os.Remove(tmp)
			return fmt.Errorf("bins: placing %s: %w", n, err)
		}
	}
	return nil
}

// workspaceRoot is the directory of go.work, found from the working
// directory up (go test runs a test binary in its package's directory).
func workspaceRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("bins: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("bins: looking for go.work: %w", err)
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("bins: no go.work above %s: the programs are built from the workspace's modules, so run the tests inside the checkout", wd)
		}
	}
}
