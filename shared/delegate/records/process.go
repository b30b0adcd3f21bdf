package records

import (
	"fmt"
	"os"

	"github.com/scv-cli/scv/shared/proctag"
)

// Self returns this process.
func Self() (Process, error) { return ProcessOf(os.Getpid()) }

// ProcessOf returns the identity of the live process pid: its pid and its
// start time from /proc/<pid>/stat.
func ProcessOf(pid int) (Process, error) {
	st, ok := proctag.ReadStat(pid)
	if !ok {
		return Process{}, fmt.Errorf("cannot read the start time of process %d from /proc: it has exited or /proc is not available", pid)
	}
	return Process{PID: pid, StartTime: st.StartTime}, nil
}

// Alive reports whether p still runs: a live process has its pid and the
// same start time, so a pid reused by another process never matches. A
// zombie counts as gone.
func (p Process) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	st, ok := proctag.ReadStat(p.PID)
	return ok && st.StartTime == p.StartTime && st.State != 'Z' && st.State != 'X'
}
