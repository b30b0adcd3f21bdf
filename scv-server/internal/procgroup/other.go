//go:build !linux

package procgroup

import (
	"context"
	"os/exec"

	"github.com/scv-cli/scv/shared/proctag"
)

// EnableSubreaper returns ErrUnsupported off Linux.
func EnableSubreaper() error { return ErrUnsupported }

// Run returns ErrUnsupported off Linux.
func Run(ctx context.Context, c Command) (Status, error) { return Status{}, ErrUnsupported }

// FindTagged finds nothing off Linux.
func FindTagged(tag string) []int { return proctag.Find(tag) }

// WithTag returns env with TagVar set to tag.
func WithTag(env []string, tag string) []string {
	return append(append([]string(nil), env...), TagVar+"="+tag)
}

// StartService starts cmd with tag in its environment; off Linux there is
// no collector to register with.
func StartService(cmd *exec.Cmd, tag string) error {
	cmd.Env = WithTag(cmd.Env, tag)
	return cmd.Start()
}

// Release does nothing off Linux.
func Release(pid int) {}
