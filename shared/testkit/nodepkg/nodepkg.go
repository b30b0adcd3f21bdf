// Package nodepkg gives tests the pinned third-party Node.js packages the
// project drives SCV with (scripts/node/package.json: pi, the ACP TypeScript
// SDK, vscode-jsonrpc, the MCP reference servers). scripts/node-deps.sh
// installs them into the repository's .cache/node; this package runs it once
// per test process when needed and returns paths inside it.
//
// Without Node.js a test is skipped with a reason, unless SCV_REQUIRE_NODE=1
// (scripts/test.sh sets it, so CI fails instead of skipping).
package nodepkg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	installOnce sync.Once
	installDir  string
	installErr  error
)

// RepoRoot returns the repository's root: the nearest directory above the
// working directory that holds go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory: run the tests inside the SCV repository")
		}
		dir = parent
	}
}

// Node returns the node executable, or skips (fails under SCV_REQUIRE_NODE=1)
// when there is none.
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "Node.js is not installed (no node on PATH); scripts/deps.sh installs it, or install Node.js 20 or later")
	}
	return node
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("SCV_REQUIRE_NODE") == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}

// Modules returns the node_modules directory of the pinned packages,
// installing them first if needed.
func Modules(t testing.TB) string {
	t.Helper()
	Node(t)
	if _, err := exec.LookPath("npm"); err != nil {
		missing(t, "npm is not installed; scripts/deps.sh installs it with Node.js")
	}
	installOnce.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			installErr = err
			return
		}
		cmd := exec.Command(filepath.Join(root, "scripts", "node-deps.sh"))
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			installErr = fmt.Errorf("scripts/node-deps.sh failed: %w\n%s", err, out)
			return
		}
		installDir = filepath.Join(root, ".cache", "node", "node_modules")
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
	return installDir
}

// Bin returns the path of an executable the pinned packages install
// (node_modules/.bin/name).
func Bin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Modules(t), ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not among the pinned npm packages' executables (%v); add its package to scripts/node/package.json", name, err)
	}
	return p
}

// Package returns the directory of an installed package, for a script that
// requires it by path or reads its files (for example a JSON schema it
// ships).
func Package(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(Modules(t), filepath.FromSlash(name))
	if _, err := os.Stat(filepath.Join(p, "package.json")); err != nil {
		t.Fatalf("package %s is not installed in %s (%v); add it to scripts/node/package.json", name, Modules(t), err)
	}
	return p
}
