// Package bridgetest is the bridge's test main for packages that run the
// real scv-server: HOME isolated, scv-server built once, goleak after.
package bridgetest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/scv-cli/scv/shared/testkit"
	"github.com/scv-cli/scv/shared/testkit/bins"
)

// Main runs m with scv-server built and returns the exit code for
// os.Exit: 1 when the build fails or a goroutine leaked.
func Main(m *testing.M) int {
	restore := testkit.IsolateHome()
	defer restore()
	if _, err := bins.Build("scv-server"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	bins.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	return code
}
