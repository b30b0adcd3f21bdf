package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/scv-cli/scv/shared/cli"
)

// The shared placeholder has the full table; this checks what scv-bridge says.
func TestSaysWhatIsNotBuilt(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	if code := Command.Run(nil, &out, &errOut); code != cli.Failure {
		t.Fatalf("exit code %d, want %d", code, cli.Failure)
	}
	if want := "scv-bridge: " + "the chat bridge is not built yet; it lands in a later issue" + "\n"; errOut.String() != want {
		t.Fatalf("stderr %q, want %q", errOut.String(), want)
	}
	out.Reset()
	if code := Command.Run([]string{"--version"}, &out, &errOut); code != cli.OK || !strings.HasPrefix(out.String(), "scv-bridge ") {
		t.Fatalf("--version: code %d, stdout %q", code, out.String())
	}
}
