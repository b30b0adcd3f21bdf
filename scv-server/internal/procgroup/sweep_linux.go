package procgroup

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/scv-cli/scv/shared/proctag"
	"golang.org/x/sys/unix"
)

var (
	// spawnMu orders starting a leader and registering it against the
	// zombie collector, so a leader that exits at once is never taken for
	// an adopted orphan.
	spawnMu sync.Mutex
	// leaders are the pids Run started and os/exec has not yet reaped.
	leaders = map[int]struct{}{} // guarded by spawnMu
)

func unregister(pid int) {
	spawnMu.Lock()
	delete(leaders, pid)
	spawnMu.Unlock()
}

// FindTagged returns the live processes whose environment carries tag in
// TagVar (see proctag.Find). TagVar is proctag.Var: the server's runs and
// the delegation cleanup (shared/delegate/records, `scv agents kill`) find
// processes the same way.
func FindTagged(tag string) []int { return proctag.Find(tag) }

// environHasTag reports whether a NUL-separated environment block holds
// TagVar with tag in its comma-separated list.
func environHasTag(env []byte, tag string) bool { return proctag.EnvironHasTag(env, tag) }

// signalTagged sends sig to every live process carrying tag, without
// waiting.
func signalTagged(tag string, sig unix.Signal) { proctag.Signal(tag, sig) }

// sweep KILLs every process carrying tag and waits (bounded) for each to
// die, repeating until a scan finds none (see proctag.Kill). It returns
// how many distinct processes it killed and how many tagged ones were
// still alive at the end.
func sweep(tag string) (killed, survivors int) { return proctag.Kill(tag) }

// collectZombies reaps, by pid, every zombie child of this process that
// Run did not start: orphans adopted as a subreaper. Registered leaders
// are left to os/exec.
func collectZombies() {
	spawnMu.Lock()
	defer spawnMu.Unlock()
	for _, pid := range children() {
		if _, ok := leaders[pid]; ok {
			continue
		}
		if procState(pid) != 'Z' {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
}

// children lists this process's children from every thread's
// /proc/self/task/<tid>/children; without CONFIG_PROC_CHILDREN it falls
// back to scanning /proc/*/stat for the parent pid.
func children() []int {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil
	}
	var pids []int
	for _, t := range tasks {
		data, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return childrenByStat()
			}
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func childrenByStat() []int {
	self := os.Getpid()
	var pids []int
	for _, pid := range proctag.AllPids() {
		if st, ok := proctag.ReadStat(pid); ok && st.PPID == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// procState returns the state letter of pid from /proc/<pid>/stat (0 when
// it cannot be read).
func procState(pid int) byte {
	st, _ := proctag.ReadStat(pid)
	return st.State
}
