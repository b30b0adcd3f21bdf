package nodepkg

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPinnedPackagesRun checks that the pinned packages are installed and
// that their executables run under the installed node.
func TestPinnedPackagesRun(t *testing.T) {
	t.Parallel()
	node := Node(t)
	for _, pkg := range []string{"@agentclientprotocol/sdk", "vscode-jsonrpc", "@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem", "@mariozechner/pi-coding-agent"} {
		Package(t, pkg)
	}
	cmd := exec.Command(node, "-e", "require('vscode-jsonrpc'); console.log('ok')")
	cmd.Dir = filepath.Dir(Modules(t))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("node could not load vscode-jsonrpc from the pinned packages: %v\n%s", err, out)
	}
	if out, err := exec.Command(Bin(t, "pi"), "--version").CombinedOutput(); err != nil {
		t.Fatalf("pi --version: %v\n%s", err, out)
	}
}
