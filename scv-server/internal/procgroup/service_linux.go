package procgroup

import (
	"os/exec"
	"syscall"
)

// StartService starts cmd, a long-lived child the caller talks to over
// pipes (an MCP server over stdio), in a new session with the marker tag
// added to its environment, and registers it as a leader: the zombie
// collector and the runs' ancestry tracking then leave it (and its exit
// status) to os/exec instead of taking it for an adopted orphan. The caller
// waits for it with cmd.Wait and then calls Release with its pid; it kills
// the tree with proctag.Kill(tag) (every process keeps the marker).
func StartService(cmd *exec.Cmd, tag string) error {
	cmd.Env = WithTag(cmd.Env, tag)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Its own session: no controlling terminal, and a group of its own
	// to signal. setsid makes the group, and setpgid after it would fail.
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setpgid = false
	spawnMu.Lock()
	defer spawnMu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	leaders[cmd.Process.Pid] = struct{}{}
	return nil
}

// Release forgets a leader StartService registered, once cmd.Wait has
// returned.
func Release(pid int) { unregister(pid) }
