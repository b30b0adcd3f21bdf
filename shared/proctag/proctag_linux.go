package proctag

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of a scan and a kill.
const (
	// killRounds bounds the find-and-kill rounds: a process may fork
	// between a scan and its kill, so a kill repeats until a scan finds
	// nothing.
	killRounds = 8
	// exitWait bounds, per round, the wait for killed processes to die.
	exitWait = time.Second
	// maxEnviron bounds how much of one /proc/<pid>/environ is read.
	maxEnviron = 16 << 20
	// midExecWait bounds the re-reads of processes caught in execve, in
	// midExecTries steps.
	midExecWait  = 50 * time.Millisecond
	midExecTries = 50
)

// Find returns the live processes, other than this one, whose environment
// carries tag in Var. Zombies are not listed (their environment is gone),
// nor are processes whose environment cannot be read (another user's).
//
// A process in the middle of execve shows an empty environment (and an
// empty command line) for a moment; such processes are read again, up to
// midExecWait, so an escapee caught mid-exec is not missed.
func Find(tag string) []int {
	if tag == "" {
		return nil
	}
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

// Signal sends sig to every live process carrying tag, without waiting.
func Signal(tag string, sig syscall.Signal) {
	for _, pid := range Find(tag) {
		_ = unix.Kill(pid, sig)
	}
}

// Kill KILLs every process carrying tag and waits (bounded) for each to
// die, repeating until a scan finds none or the rounds are used up. It
// returns how many distinct processes it killed and how many tagged ones
// were still alive at the end.
func Kill(tag string) (killed, survivors int) {
	return killInto(tag, map[int]struct{}{})
}

func killInto(tag string, seen map[int]struct{}) (killed, survivors int) {
	if tag == "" {
		return 0, 0
	}
	for range killRounds {
		pids := Find(tag)
		if len(pids) == 0 {
			return len(seen), 0
		}
		fds := signalPinned(pids, tag, unix.SIGKILL, seen)
		waitPidfds(fds, exitWait)
		closeAll(fds)
	}
	return len(seen), len(Find(tag))
}

// Stop asks every process carrying tag to exit with SIGTERM, waits up to
// grace for them (through pidfds, so no polling), then KILLs whatever
// still carries the tag, including processes forked meanwhile. It returns
// how many distinct processes it signalled and how many tagged ones were
// still alive at the end.
func Stop(tag string, grace time.Duration) (killed, survivors int) {
	if tag == "" {
		return 0, 0
	}
	seen := map[int]struct{}{}
	if pids := Find(tag); len(pids) > 0 {
		fds := signalPinned(pids, tag, unix.SIGTERM, seen)
		waitPidfds(fds, grace)
		closeAll(fds)
	}
	return killInto(tag, seen)
}

// signalPinned sends sig to each of pids that still carries tag, pinning
// each with a pidfd first so that a pid reused since the scan is never
// signalled unless the new process carries the tag too. It returns the
// pidfds of the processes signalled; the caller closes them.
func signalPinned(pids []int, tag string, sig unix.Signal, seen map[int]struct{}) []int {
	var fds []int
	var buf []byte
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			if !errors.Is(err, unix.ESRCH) {
				// No pidfd support: a plain kill, and no wait.
				if unix.Kill(pid, sig) == nil {
					seen[pid] = struct{}{}
				}
			}
			continue
		}
		var r readResult
		if buf, r = pidHasTag(pid, tag, buf); r != tagged {
			_ = unix.Close(fd)
			continue
		}
		if unix.PidfdSendSignal(fd, sig, nil, 0) == nil {
			seen[pid] = struct{}{}
		}
		fds = append(fds, fd)
	}
	return fds
}

func closeAll(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
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

// midExec reports whether pid looks like a process in the middle of
// execve: no command line either, not a zombie, not a kernel thread.
func midExec(pid int) bool {
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(cmdline) > 0 {
		return false
	}
	st, ok := ReadStat(pid)
	return ok && st.State != 'Z' && st.State != 'X' && st.Flags&pfKthread == 0
}

// pfKthread is PF_KTHREAD in /proc/<pid>/stat's flags.
const pfKthread = 0x00200000

// AllPids lists the numeric entries of /proc: every process of the
// system (nil when /proc cannot be read).
func AllPids() []int { return allPids() }

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
	case EnvironHasTag(buf, tag):
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

// ReadStatInto is ReadStat reading into buf (grown as needed and returned
// for reuse) with plain system calls, so a scan of every process
// allocates nothing per process.
func ReadStatInto(pid int, buf []byte) (Stat, []byte, bool) {
	if pid <= 0 {
		return Stat{}, buf, false
	}
	fd, err := openRead("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, buf, false
	}
	defer unix.Close(fd)
	if cap(buf) < 1024 {
		buf = make([]byte, 1024)
	}
	buf = buf[:cap(buf)]
	n := 0
	for n < len(buf) {
		k, err := unix.Read(fd, buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return Stat{}, buf, false
		}
		if k == 0 {
			break
		}
		n += k
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
			buf = buf[:cap(buf)]
		}
	}
	st, err := ParseStat(buf[:n])
	return st, buf, err == nil
}
