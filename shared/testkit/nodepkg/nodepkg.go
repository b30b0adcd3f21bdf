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

// install is one package set's installation, once per test process.
type install struct {
	once sync.Once
	dir  string
	err  error
}

// The package sets: scripts/node (what every test run needs) and
// scripts/node-optin (the real ACP adapters, for opt-in tests only).
var (
	defaultSet = &install{}
	optInSet   = &install{}
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
	return modules(t, defaultSet, "node", nil)
}

// OptInModules is Modules for scripts/node-optin, the large packages only
// opt-in tests use (the real ACP adapters).
func OptInModules(t testing.TB) string {
	t.Helper()
	return modules(t, optInSet, "node-optin", []string{"optin"})
}

func modules(t testing.TB, in *install, set string, args []string) string {
	t.Helper()
	Node(t)
	if _, err := exec.LookPath("npm"); err != nil {
		missing(t, "npm is not installed; scripts/deps.sh installs it with Node.js")
	}
	in.once.Do(func() {
		root, err := RepoRoot()
		if err != nil {
			in.err = err
			return
		}
		cmd := exec.Command(filepath.Join(root, "scripts", "node-deps.sh"), args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			in.err = fmt.Errorf("scripts/node-deps.sh %v failed: %w\n%s", args, err, out)
			return
		}
		in.dir = filepath.Join(root, ".cache", set, "node_modules")
	})
	if in.err != nil {
		t.Fatal(in.err)
	}
	return in.dir
}

// OptInBin is Bin for an executable of scripts/node-optin.
func OptInBin(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(OptInModules(t), ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not among the opt-in npm packages' executables (%v); add its package to scripts/node-optin/package.json", name, err)
	}
	return p
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
