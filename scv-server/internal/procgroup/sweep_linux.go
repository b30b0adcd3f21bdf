package procgroup

import (
	"bytes"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of a sweep.
const (
	// sweepRounds bounds the find-and-kill rounds: a process may fork
	// between a scan and its kill, so a sweep repeats until a scan finds
	// nothing.
	sweepRounds = 8
	// exitWait bounds, per round, the wait for killed processes to die.
	exitWait = time.Second
	// maxEnviron bounds how much of one /proc/<pid>/environ is read.
	maxEnviron = 16 << 20
	// midExecWait bounds the re-reads of processes caught in execve, in
	// midExecTries steps.
	midExecWait  = 50 * time.Millisecond
	midExecTries = 50
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
// TagVar. Zombies are not listed (their environment is gone), nor are
// processes whose environment cannot be read (another user's).
//
// A process in the middle of execve shows an empty environment (and an
// empty command line) for a moment; such processes are read again, up to
// midExecWait, so an escapee caught mid-exec is not missed.
func FindTagged(tag string) []int {
	var pids, unsure []int
	var buf []byte
	self := os.Getpid()
	for _, pid := range allPids() {
		if pid == self {
			continue
		}
		var r readResult
		buf, r = pidHasTag(pid, tag, buf)
		switch r {
		case tagged:
			pids = append(pids, pid)
		case empty:
			if midExec(pid) {
				unsure = append(unsure, pid)
			}
		}
	}
	for i := 0; len(unsure) > 0 && i < midExecTries; i++ {
		time.Sleep(midExecWait / midExecTries)
		left := unsure[:0]
		for _, pid := range unsure {
			var r readResult
			buf, r = pidHasTag(pid, tag, buf)
			switch {
			case r == tagged:
				pids = append(pids, pid)
			case r == empty && midExec(pid):
				left = append(left, pid)
			}
		}
		unsure = left
	}
	return pids
}

// midExec reports whether pid looks like a process in the middle of
// execve: no command line either, not a zombie, not a kernel thread.
func midExec(pid int) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(cmdline) > 0 {
		return false
	}
	state, _, flags := procStat(pid)
	return state != 0 && state != 'Z' && state != 'X' && flags&pfKthread == 0
}

// pfKthread is PF_KTHREAD in /proc/<pid>/stat's flags.
const pfKthread = 0x00200000

func allPids() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		if pid, err := strconv.Atoi(n); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

type readResult int

const (
	unreadable readResult = iota // gone, or not ours to read
	untagged
	tagged
	empty // nothing to read: a zombie, kernel thread, env -i, or mid-exec
)

// pidHasTag reads pid's environment into buf (returned for reuse) and
// says whether it carries tag. It reads with plain system calls: an
// os.File would try to register every /proc file with the poller.
func pidHasTag(pid int, tag string, buf []byte) ([]byte, readResult) {
	fd, err := openRead("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return buf, unreadable
	}
	defer unix.Close(fd)
	buf = buf[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, 16<<10)
	}
	for len(buf) < maxEnviron {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return buf, unreadable
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	switch {
	case len(buf) == 0:
		return buf, empty
	case environHasTag(buf, tag):
		return buf, tagged
	}
	return buf, untagged
}

func openRead(path string) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// environHasTag reports whether a NUL-separated environment block holds
// TagVar with tag in its comma-separated list.
func environHasTag(env []byte, tag string) bool {
	if tag == "" || !bytes.Contains(env, []byte(tag)) {
		return false
	}
	prefix := []byte(TagVar + "=")
	for len(env) > 0 {
		entry := env
		if i := bytes.IndexByte(env, 0); i >= 0 {
			entry, env = env[:i], env[i+1:]
		} else {
			env = nil
		}
		if v, ok := bytes.CutPrefix(entry, prefix); ok {
			for _, t := range strings.Split(string(v), ",") {
				if t == tag {
					return true
				}
			}
		}
	}
	return false
}

// signalTagged sends sig to every live process carrying tag, without
// waiting.
func signalTagged(tag string, sig unix.Signal) {
	for _, pid := range FindTagged(tag) {
		_ = unix.Kill(pid, sig)
	}
}

// sweep KILLs every process carrying tag and waits (bounded) for each to
// die, repeating until a scan finds none or the rounds are used up. It
// returns how many distinct processes it killed and how many tagged ones
// were still alive at the end.
func sweep(tag string) (killed, survivors int) {
	seen := map[int]struct{}{}
	for range sweepRounds {
		pids := FindTagged(tag)
		if len(pids) == 0 {
			return len(seen), 0
		}
		var fds []int
		var buf []byte
		for _, pid := range pids {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				if !errors.Is(err, unix.ESRCH) {
					// No pidfd support: a plain kill, and no wait.
					if unix.Kill(pid, unix.SIGKILL) == nil {
						seen[pid] = struct{}{}
					}
				}
				continue
			}
			// The pidfd pins the process; if the pid was reused since the
			// scan, the new process must carry the tag too.
			var r readResult
			if buf, r = pidHasTag(pid, tag, buf); r != tagged {
				_ = unix.Close(fd)
				continue
			}
			if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				seen[pid] = struct{}{}
			}
			fds = append(fds, fd)
		}
		waitPidfds(fds, exitWait)
		for _, fd := range fds {
			_ = unix.Close(fd)
		}
	}
	return len(seen), len(FindTagged(tag))
}

// waitPidfds waits until every process behind fds has exited (a pidfd
// polls readable then), or d passes.
func waitPidfds(fds []int, d time.Duration) {
	if len(fds) == 0 {
		return
	}
	pfds := make([]unix.PollFd, len(fds))
	for i, fd := range fds {
		pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	left := len(fds)
	end := time.Now().Add(d)
	for left > 0 {
		ms := time.Until(end).Milliseconds()
		if ms <= 0 {
			return
		}
		_, err := unix.Poll(pfds, int(ms))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		for i := range pfds {
			if pfds[i].Fd >= 0 && pfds[i].Revents != 0 {
				pfds[i].Fd = -1 // poll skips negative descriptors
				pfds[i].Revents = 0
				left--
			}
		}
	}
}

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
	for _, pid := range allPids() {
		if _, ppid, _ := procStat(pid); ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

func procState(pid int) byte {
	s, _, _ := procStat(pid)
	return s
}

// procStat returns the state letter, parent pid and flags from
// /proc/<pid>/stat (zeros when it cannot be read).
func procStat(pid int) (state byte, ppid int, flags uint64) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0
	}
	// pid (comm) state ppid pgrp session tty_nr tpgid flags ...; comm may
	// hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 7 || len(f[0]) != 1 {
		return 0, 0, 0
	}
	ppid, _ = strconv.Atoi(f[1])
	flags, _ = strconv.ParseUint(f[6], 10, 64)
	return f[0][0], ppid, flags
}
