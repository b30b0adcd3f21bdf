package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallScript runs scripts/install.sh as a user would, with HOME a
// fresh directory: every binary lands in ~/.local/bin, executable, the
// installed scv runs, and the script says the directory is not on PATH.
// A second run replaces the binaries in place.
func TestInstallScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary")
	}
	t.Parallel()
	script, err := filepath.Abs(filepath.Join("..", "scripts", "install.sh"))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(script, args...)
		cmd.Env = append(os.Environ(), "HOME="+home, "SCV_INSTALL_DIR=", "PATH=/usr/bin:/bin:"+filepath.Dir(goBin(t)))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("install.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run()
	dest := filepath.Join(home, ".local", "bin")
	for _, b := range []string{"scv", "scv-server", "scv-tui", "scv-agents", "scv-bridge"} {
		fi, err := os.Stat(filepath.Join(dest, b))
		if err != nil || fi.Mode().Perm()&0o111 == 0 {
			t.Fatalf("%s not installed as an executable: %v %v", b, fi, err)
		}
	}
	if !strings.Contains(out, "Installed scv") || !strings.Contains(out, "is not on your PATH") {
		t.Errorf("install.sh said:\n%s", out)
	}
	v, err := exec.Command(filepath.Join(dest, "scv"), "--version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(v), "scv ") {
		t.Fatalf("the installed scv --version: %v %q", err, v)
	}
	other := t.TempDir()
	run("--dir", other)
	if _, err := os.Stat(filepath.Join(other, "scv-server")); err != nil {
		t.Fatalf("--dir: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(dest, ".*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

func goBin(t *testing.T) string {
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	return p
}
