//go:build linux

package oneshot

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	"github.com/scv-cli/scv/shared/delegate/adapters"
)

// The overhead the runner adds over launching the same program directly:
// /bin/true started by os/exec, by procgroup.Run (process group, tag
// sweep), and as a delegated agent by the runner (lookup, private home,
// scrubbed environment, delegation record written and removed, output
// parser, result).

func BenchmarkLaunchOSExec(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if err := exec.Command("/bin/true", "--profile", "headless", "x").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLaunchProcgroup(b *testing.B) {
	b.ReportAllocs()
	env := os.Environ()
	for b.Loop() {
		st, err := procgroup.Run(context.Background(), procgroup.Command{Path: "/bin/true", Args: []string{"--profile", "headless", "x"}, Env: env})
		if err != nil || !st.Exited || st.Code != 0 {
			b.Fatal(st, err)
		}
	}
}

func BenchmarkLaunchRunner(b *testing.B) {
	b.ReportAllocs()
	a, _ := adapters.Get("dsh")
	a.Path = "/bin/true"
	dir := b.TempDir()
	r := New(Options{Home: b.TempDir(), Adapters: []adapters.Adapter{a}})
	be, _ := r.Backend("dsh")
	i := 0
	for b.Loop() {
		i++
		res := be.Run(context.Background(), delegate.Call{
			Agent: "dsh", Prompt: "x", Dir: dir, Workspace: dir, Timeout: time.Minute,
			Handle: "dsh-" + strconv.Itoa(i), SessionID: "s",
		}, nil)
		if res.Status != delegate.StatusCompleted {
			b.Fatal(res)
		}
	}
}
