//go:build linux

package bash

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/tools"
)

// The two benchmarks below measure what the bash tool adds to a command:
// BenchmarkBashTrue runs `true` through the tool executor's path
// (Validate, Prepare, Run: new session and group, output drain, marker
// sweep of /proc, zombie collection, result), BenchmarkExecBashTrue spawns
// `/bin/bash -lc true` with os/exec. The difference is the tool's cost
// (target: under 5 ms).
//
// Both run with HOME set to an empty directory, so that a login shell's
// profile of the developer's own account (pyenv init alone takes 120 ms on
// the project machine) does not swamp the figure; it costs both the same.

func benchHome(b *testing.B) {
	b.Setenv("HOME", b.TempDir())
}

func BenchmarkBashTrue(b *testing.B) {
	benchHome(b)
	benchBashTrue(b, Options{SpillMaxBytes: 64 << 20})
}

// BenchmarkBashTrueProfile is BenchmarkBashTrue with a login profile
// that costs 50 ms (like ../shared/bench's PROFILE=1): with the
// session's login-shell snapshot (snapshot: the profile runs once, at
// the first call, outside the timed loop) and with a login shell per
// call (login-each-call, the tool before issue 23).
func BenchmarkBashTrueProfile(b *testing.B) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{{"snapshot", 0}, {"login-each-call", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			home := b.TempDir()
			if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("sleep 0.05\nexport FROM_PROFILE=1\n"), 0o600); err != nil {
				b.Fatal(err)
			}
			b.Setenv("HOME", home)
			benchBashTrue(b, Options{SpillMaxBytes: 64 << 20, SnapshotTimeout: tc.timeout})
		})
	}
}

func benchBashTrue(b *testing.B, o Options) {
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	tool := New(o)
	reg := tools.NewRegistry()
	if err := reg.Register(tool); err != nil {
		b.Fatal(err)
	}
	env := tools.Env{Workspace: dir, Timeout: time.Minute, MaxTimeout: time.Hour, OutputLimit: 65536, StateDir: b.TempDir()}
	ctx := context.Background()
	call := func() {
		args, err := reg.Validate("bash", `{"command":"true"}`)
		if err != nil {
			b.Fatal(err)
		}
		plan, err := tool.Prepare(env, args)
		if err != nil {
			b.Fatal(err)
		}
		res, err := plan.Run(ctx)
		if err != nil || !res.Success {
			b.Fatalf("%+v %v", res, err)
		}
	}
	call() // the session's first call takes the snapshot
	for b.Loop() {
		call()
	}
}

func BenchmarkExecBashTrue(b *testing.B) {
	benchHome(b)
	dir := b.TempDir()
	for b.Loop() {
		cmd := exec.Command(Shell, "-lc", "true")
		cmd.Dir = dir
		cmd.Env = os.Environ()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
	}
}

// BenchmarkSnapshot is taking a session's login-shell snapshot (a plain
// and a login shell printing their state, the difference written to the
// snapshot file) with an empty HOME: what a session's first bash call
// adds to the command.
func BenchmarkSnapshot(b *testing.B) {
	benchHome(b)
	dir, state := b.TempDir(), b.TempDir()
	env := os.Environ()
	for b.Loop() {
		s := &snapshot{timeout: time.Minute}
		if err := s.take(context.Background(), env, dir, state, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstCallProfile is a session's first call (a new tool each
// iteration) with a 50 ms login profile, timed from the user's approval:
// cold, the call takes the snapshot itself; warmed, the loop's warm-up
// (tools.Warmer) took it while the approval was asked, untimed here as
// the user's reading time hides it.
func BenchmarkFirstCallProfile(b *testing.B) {
	for _, warmed := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "warmed"}[warmed], func(b *testing.B) {
			home := b.TempDir()
			if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("sleep 0.05\nexport FROM_PROFILE=1\n"), 0o600); err != nil {
				b.Fatal(err)
			}
			b.Setenv("HOME", home)
			dir, err := filepath.EvalSymlinks(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				tool := New(Options{})
				env := tools.Env{Workspace: dir, Timeout: time.Minute, MaxTimeout: time.Hour, OutputLimit: 65536, StateDir: b.TempDir()}
				if warmed {
					tool.Warm(ctx, env)
				}
				plan, err := tool.Prepare(env, []byte(`{"command":"echo $FROM_PROFILE"}`))
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				res, err := plan.Run(ctx)
				if err != nil || res.Output != "exit 0\n1\n" {
					b.Fatalf("%+v %v", res, err)
				}
			}
		})
	}
}
