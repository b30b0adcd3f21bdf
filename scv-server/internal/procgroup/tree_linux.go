package procgroup

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/shared/proctag"
	"golang.org/x/sys/unix"
)

// treeScan is how often a run's processes are counted and followed by
// ancestry while it runs.
const treeScan = 50 * time.Millisecond

// killTreeRounds bounds the rounds of killTree; each is a scan, STOP and
// KILL to every member, and a short wait.
const killTreeRounds = 50

// ProcessLimit bounds the processes alive at once of all the runs that
// share it (a session's tool calls): when a scan finds more, the run
// whose scan saw it is killed whole and its Status says ProcessLimited.
// It is counted from the runs' trees (below), so it holds for processes
// that left the group or dropped the marker, and does not depend on
// RLIMIT_NPROC, which is per user (and ignored for root).
type ProcessLimit struct {
	max    int
	mu     sync.Mutex
	counts map[*tree]int // guarded by mu
}

// NewProcessLimit returns a limit of n processes (at least 1).
func NewProcessLimit(n int) *ProcessLimit {
	return &ProcessLimit{max: max(n, 1), counts: map[*tree]int{}}
}

// Max returns the limit.
func (l *ProcessLimit) Max() int { return l.max }

// set records n processes for t and reports whether all runs together
// are over the limit.
func (l *ProcessLimit) set(t *tree, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[t] = n
	total := 0
	for _, c := range l.counts {
		total += c
	}
	return total > l.max
}

func (l *ProcessLimit) forget(t *tree) {
	l.mu.Lock()
	delete(l.counts, t)
	l.mu.Unlock()
}

// A tree is the processes of one run, followed by ancestry rather than by
// the environment marker, which `env -i` drops: the leader, every
// process whose parent is a member, and the orphans the server adopted
// as a subreaper that started after the leader and that no other run
// claims. Members are kept by pid and start time, so a reused pid never
// counts.
type tree struct {
	self    int
	leader  int
	since   uint64         // the leader's start time, in clock ticks
	members map[int]uint64 // pid → start time; guarded by treesMu
	// before are the server's children from before the run started:
	// start times are in clock ticks (10 ms), too coarse to tell them from
	// an orphan adopted later, so they are excluded by name.
	before map[int]struct{}
}

var (
	treesMu sync.Mutex
	// trees are the runs in progress, so that an adopted orphan is
	// claimed by one run only.
	trees = map[*tree]struct{}{}
)

// serverChildren lists the server's children now, for newTree's before:
// taken before the leader starts, since by the time newTree runs (a
// loaded machine may deschedule the caller for milliseconds) the leader
// may have double-forked, and its orphan, already adopted, would be
// taken for a child the server had before the run.
func serverChildren() map[int]struct{} {
	out := map[int]struct{}{}
	for _, c := range children() {
		out[c] = struct{}{}
	}
	return out
}

// newTree starts following the tree of the leader pid; before are the
// server's children before the leader started (serverChildren).
func newTree(pid int, before map[int]struct{}) *tree {
	delete(before, pid)
	t := &tree{self: os.Getpid(), leader: pid, members: map[int]uint64{}, before: before}
	if st, ok := proctag.ReadStat(pid); ok {
		t.since = st.StartTime
		t.members[pid] = st.StartTime
	}
	treesMu.Lock()
	trees[t] = struct{}{}
	treesMu.Unlock()
	return t
}

// close stops following the tree.
func (t *tree) close() {
	treesMu.Lock()
	delete(trees, t)
	treesMu.Unlock()
}

// scanner reads every process's stat into a map and a buffer it reuses,
// so a scan allocates little more than the list of /proc.
type scanner struct {
	buf  []byte
	snap map[int]proctag.Stat
}

// snapshot returns every process's stat; the map is reused by the next
// call.
func (s *scanner) snapshot() map[int]proctag.Stat {
	if s.snap == nil {
		s.snap = map[int]proctag.Stat{}
	}
	clear(s.snap)
	for _, pid := range proctag.AllPids() {
		var st proctag.Stat
		var ok bool
		if st, s.buf, ok = proctag.ReadStatInto(pid, s.buf); ok {
			s.snap[pid] = st
		}
	}
	return s.snap
}

// partial returns the stats the tree t needs between two scans, reading
// far fewer files than a snapshot: its members, their children
// (/proc/<pid>/task/<tid>/children), and so on down, and the server's own
// children (orphans it adopted, with their children found at the next
// scan once they are members). Without the children files
// (CONFIG_PROC_CHILDREN) it is a full snapshot.
func (s *scanner) partial(t *tree) map[int]proctag.Stat {
	if !hasChildrenFiles() {
		return s.snapshot()
	}
	if s.snap == nil {
		s.snap = map[int]proctag.Stat{}
	}
	clear(s.snap)
	treesMu.Lock()
	walk := make([]int, 0, len(t.members))
	for pid := range t.members {
		walk = append(walk, pid)
	}
	treesMu.Unlock()
	read := func(pid int) bool {
		if _, done := s.snap[pid]; done {
			return false
		}
		var st proctag.Stat
		var ok bool
		if st, s.buf, ok = proctag.ReadStatInto(pid, s.buf); ok {
			s.snap[pid] = st
		}
		return ok
	}
	for _, pid := range children() {
		read(pid)
	}
	for len(walk) > 0 {
		pid := walk[len(walk)-1]
		walk = walk[:len(walk)-1]
		if _, done := s.snap[pid]; !done && !read(pid) {
			continue
		}
		walk = s.childrenOf(pid, walk)
	}
	return s.snap
}

// childrenOf appends the children of every thread of pid to out, skipping
// those already read.
func (s *scanner) childrenOf(pid int, out []int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, task := range tasks {
		data, err := os.ReadFile(dir + "/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(data)) {
			if c, err := strconv.Atoi(f); err == nil {
				if _, done := s.snap[c]; !done {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// hasChildrenFiles reports whether the kernel lists a task's children in
// /proc (CONFIG_PROC_CHILDREN).
var hasChildrenFiles = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/children")
	return err == nil
})

// snapshot is a one-off scan.
func snapshot() map[int]proctag.Stat { return new(scanner).snapshot() }

// update brings the members up to date with snap and returns the live
// ones (zombies are not counted: they are dead, waiting to be reaped).
func (t *tree) update(snap map[int]proctag.Stat) []int {
	spawnMu.Lock()
	isLeader := func(pid int) bool { _, ok := leaders[pid]; return ok }
	treesMu.Lock()
	defer treesMu.Unlock()
	defer spawnMu.Unlock()
	for pid, start := range t.members {
		if st, ok := snap[pid]; !ok || st.StartTime != start {
			delete(t.members, pid)
		}
	}
	claimed := func(pid int, start uint64) bool {
		for o := range trees {
			if o != t {
				if s, ok := o.members[pid]; ok && s == start {
					return true
				}
			}
		}
		return false
	}
	// Children of members join, to a fixed point (a child may be listed
	// before its parent joined).
	for grown := true; grown; {
		grown = false
		for pid, st := range snap {
			if _, in := t.members[pid]; in {
				continue
			}
			_, parentIn := t.members[st.PPID]
			_, old := t.before[pid]
			adopted := st.PPID == t.self && pid != t.leader && !isLeader(pid) && !old &&
				t.since != 0 && st.StartTime >= t.since && !claimed(pid, st.StartTime)
			if parentIn || adopted {
				t.members[pid] = st.StartTime
				grown = true
			}
		}
	}
	live := make([]int, 0, len(t.members))
	for pid := range t.members {
		if st := snap[pid]; st.State != 'Z' && st.State != 'X' {
			live = append(live, pid)
		}
	}
	return live
}

// monitor follows the tree every treeScan until stop is closed, with
// limit (which may be nil) counting its processes; it closes over when
// the limit is passed and returns.
func (t *tree) monitor(limit *ProcessLimit, stop <-chan struct{}, over chan<- struct{}) {
	tick := time.NewTicker(treeScan)
	defer tick.Stop()
	var sc scanner
	for {
		n := len(t.update(sc.partial(t)))
		if limit != nil && limit.set(t, n) {
			close(over)
			return
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// killTree KILLs every live member of the tree, stopping each first so a
// fork loop cannot outrun the kill, and repeats until a scan finds none
// alive or the rounds are used up. It returns how many distinct processes
// it killed and how many members were alive after the last round.
func (t *tree) killTree() (killed, survivors int) {
	seen := map[int]struct{}{}
	for range killTreeRounds {
		live := t.update(snapshot())
		// The leader is a zombie or reaped by now; never signal it by pid
		// (the caller owns it).
		live = without(live, t.leader)
		if len(live) == 0 {
			return len(seen), 0
		}
		fds := t.pin(live)
		for _, fd := range fds {
			_ = unix.PidfdSendSignal(fd, unix.SIGSTOP, nil, 0)
		}
		for i, fd := range fds {
			if unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
				seen[live[i]] = struct{}{}
			}
			_ = unix.Close(fd)
		}
		// Adopted orphans die as zombies of the server: reap them so the
		// next scan does not count them.
		time.Sleep(5 * time.Millisecond)
		collectZombies()
	}
	return len(seen), len(without(t.update(snapshot()), t.leader))
}

// pin opens a pidfd on each of pids that is still the member the tree
// knows (same start time), so a pid reused since the scan is never
// signalled; pids is compacted to the pinned ones, in the order of the
// returned descriptors, which the caller closes.
func (t *tree) pin(pids []int) []int {
	treesMu.Lock()
	want := make(map[int]uint64, len(pids))
	for _, pid := range pids {
		want[pid] = t.members[pid]
	}
	treesMu.Unlock()
	fds := make([]int, 0, len(pids))
	n := 0
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		if st, ok := proctag.ReadStat(pid); !ok || st.StartTime != want[pid] {
			_ = unix.Close(fd)
			continue
		}
		fds = append(fds, fd)
		pids[n] = pid
		n++
	}
	clear(pids[n:])
	return fds
}

func without(pids []int, pid int) []int {
	out := pids[:0]
	for _, p := range pids {
		if p != pid {
			out = append(out, p)
		}
	}
	return out
}
