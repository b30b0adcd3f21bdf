package procgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sys/unix"
)

// reapWait bounds the wait for a KILLed leader to die. Only a process in
// uninterruptible sleep outlives it.
const reapWait = 10 * time.Second

var (
	subreaperOnce sync.Once
	subreaperErr  error
)

// EnableSubreaper makes the calling process a child subreaper, once: from
// then on, orphaned descendants reparent to it instead of to init. Run
// calls it; a server may call it at start to report a failure early. The
// flag is per process, survives execve and is not inherited by children.
func EnableSubreaper() error {
	subreaperOnce.Do(func() {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			subreaperErr = fmt.Errorf("procgroup: prctl(PR_SET_CHILD_SUBREAPER): %w", err)
		}
	})
	return subreaperErr
}

// Run starts c and waits until it has ended under the package's rules (see
// the package comment). Cancelling ctx sends TERM to the process group and
// to every process carrying the run's marker, waits until the leader has
// exited and the output pipe is at EOF or TermGrace has passed, then KILLs
// what remains; the returned Status has Cancelled set. Reaching c.Timeout
// KILLs at once (TimedOut). Either way, once the leader has exited every
// process still carrying the marker is KILLed, the group is KILLed, the
// leader is reaped, adopted zombies are reaped, and the output pipe gets
// PipeGrace to reach EOF.
//
// The error is non-nil only when the command could not be started (or the
// leader's status was lost); a command that fails, is killed or times out
// is a Status.
// startWatched spawns the command (with its memory limit set before it
// runs anything of its own) and starts watching it.
func startWatched(c Command, tag string) (*process, error) {
	p, err := spawn(c, tag)
	if err != nil {
		return nil, err
	}
	p.watch(c)
	return p, nil
}

// scan follows tr in the background, closing over when limit is passed;
// endScan stops and joins it (once, whoever calls it first).
func scan(tr *tree, limit *ProcessLimit) (over <-chan struct{}, endScan func()) {
	stop, done, overc := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tr.monitor(limit, stop, overc)
	}()
	return overc, sync.OnceFunc(func() {
		close(stop)
		<-done
		if limit != nil {
			limit.forget(tr)
		}
	})
}

// clean kills what the command left: everything that still carries the
// marker, in the group or not (the sweep repeats until a scan finds none,
// so nothing tagged is left to fork a tagged child afterwards), whatever
// dropped the marker but stayed in the group, and whatever dropped it
// and left the group, found by ancestry.
func clean(tag string, pid int, tr *tree) (swept, survivors int) {
	swept, survivors = sweep(tag)
	signalGroup(pid, unix.SIGKILL)
	k, s := tr.killTree()
	return swept + k, survivors + s
}

// testHookStarted, when set (tests only), runs between starting the
// leader and following its tree: a caller descheduled there.
var testHookStarted func()

func Run(ctx context.Context, c Command) (Status, error) {
	tag := c.Tag
	if tag == "" {
		tag = uuid.NewString()
	}
	if strings.ContainsAny(tag, ",=\x00") {
		return Status{}, fmt.Errorf("procgroup: tag %q contains ',', '=' or NUL", tag)
	}
	st := Status{Tag: tag}
	if err := ctx.Err(); err != nil {
		st.Cancelled = true
		return st, nil
	}
	// A failure leaves orphans to init; the marker sweep still kills them.
	_ = EnableSubreaper()
	termGrace, pipeGrace := c.TermGrace, c.PipeGrace
	if termGrace <= 0 {
		termGrace = DefaultTermGrace
	}
	if pipeGrace <= 0 {
		pipeGrace = DefaultPipeGrace
	}

	before := serverChildren()
	p, err := startWatched(c, tag)
	if err != nil {
		return st, err
	}
	st.Pid = p.pid
	if testHookStarted != nil {
		testHookStarted()
	}
	// The tree is followed by ancestry from the start, so a process that
	// drops the marker and leaves the group (env -i, setsid) is still
	// known, by its parent or as an orphan the server adopts.
	tr := newTree(p.pid, before)
	defer tr.close()
	over, endScan := scan(tr, c.Limit)
	defer endScan()

	var deadline <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		deadline = t.C
	}
	if c.OnStart != nil {
		c.OnStart(p.pid)
	}
	select {
	case <-p.exited:
	case <-deadline:
		st.TimedOut = true
		signalGroup(p.pid, unix.SIGKILL)
	case <-ctx.Done():
		st.Cancelled = true
		p.terminate(tag, termGrace, deadline)
	case <-over:
		// Too many processes: a fork loop is stopped, not asked.
		st.ProcessLimited = true
		signalGroup(p.pid, unix.SIGKILL)
		tr.killTree()
		signalGroup(p.pid, unix.SIGKILL)
	}
	reaped := awaitOrTimeout(p.exited, reapWait)
	st.Elapsed = time.Since(p.started)
	endScan()

	st.Swept, st.Survivors = clean(tag, p.pid, tr)

	waitErr := p.reap(&st, reaped)
	collectZombies()
	st.PipeHeld = !p.closeOutput(pipeGrace)
	st.OutputBytes, st.StderrBytes = p.outBytes, p.errBytes

	if reaped && p.cmd.ProcessState == nil {
		return st, fmt.Errorf("procgroup: waiting for pid %d: %w", p.pid, waitErr)
	}
	return st, nil
}

// process is a started command and what watches it.
type process struct {
	cmd     *exec.Cmd
	pid     int
	started time.Time
	// out and errOut are the read ends of the output pipes; errOut is nil
	// without Command.Stderr.
	out, errOut *os.File

	// readDone is closed once both pipes are drained; the readers own
	// out's and errOut's reads, Command.Output and Command.Stderr, and
	// outBytes and errBytes until then.
	readDone           chan struct{}
	outBytes, errBytes int64
	// exited is closed when the leader has exited, which leaves it
	// unreaped.
	exited chan struct{}
}

// spawn starts c in a new session (a new process group with no
// controlling terminal), with its output on pipes and tagged tag.
func spawn(c Command, tag string) (*process, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("procgroup: output pipe: %w", err)
	}
	// With Stderr set, stderr gets a pipe of its own (re, we).
	var re, we *os.File
	if c.Stderr != nil {
		if re, we, err = os.Pipe(); err != nil {
			_ = r.Close()
			_ = w.Close()
			return nil, fmt.Errorf("procgroup: stderr pipe: %w", err)
		}
	}
	cmd := exec.Command(c.Path, c.Args...)
	// With a memory limit the command starts behind a gate: a shell that
	// waits on a pipe, keeps its pid through exec and runs the command
	// only once the limit is set on it, so no child it forks in its first
	// instants escapes the limit (setrlimit cannot be asked of a child
	// between fork and exec from Go).
	var gateR, gateW *os.File
	if c.MemoryLimit > 0 && cmd.Err == nil { // a command not found fails in Start as without a limit
		if gateR, gateW, err = os.Pipe(); err != nil {
			closeAll(r, w, re, we)
			return nil, fmt.Errorf("procgroup: gate pipe: %w", err)
		}
		cmd = exec.Command(gateShell, append([]string{"-c", gateScript, cmd.Path}, c.Args...)...)
		cmd.ExtraFiles = []*os.File{gateR}
	}
	cmd.Dir = c.Dir
	cmd.Env = WithTag(c.Env, tag)
	cmd.Stdout, cmd.Stderr = w, w // one descriptor: output keeps its order
	if we != nil {
		cmd.Stderr = we
	}
	// A new session is a new process group with no controlling terminal:
	// a command that opens /dev/tty fails at once instead of being
	// stopped by SIGTTIN until its deadline.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}

	started := time.Now()
	spawnMu.Lock()
	err = cmd.Start()
	if err == nil {
		leaders[cmd.Process.Pid] = struct{}{}
	}
	spawnMu.Unlock()
	closeAll(w, we, gateR)
	if err != nil {
		closeAll(r, re, gateW)
		return nil, err
	}
	p := &process{cmd: cmd, pid: cmd.Process.Pid, started: started, out: r, errOut: re}
	if gateW != nil {
		lim := unix.Rlimit{Cur: uint64(c.MemoryLimit), Max: uint64(c.MemoryLimit)}
		if err := unix.Prlimit(p.pid, unix.RLIMIT_AS, &lim, nil); err != nil {
			_ = gateW.Close()
			p.abort()
			return nil, fmt.Errorf("procgroup: setting the memory limit (RLIMIT_AS) of pid %d: %w", p.pid, err)
		}
		_ = gateW.Close() // the gate opens: the shell execs the command
	}
	return p, nil
}

// gateShell and gateScript make the gate of a command with a memory
// limit: the shell reads descriptor 3 until the parent closes its end,
// closes it and execs the command ($0) with its arguments.
const (
	gateShell  = "/bin/sh"
	gateScript = `read -r _ <&3; exec 3<&-; exec "$0" "$@"`
)

// closeAll closes the files that are not nil.
func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

// abort kills and reaps a leader that must not run (its setup failed
// after it started) and closes its pipes.
func (p *process) abort() {
	signalGroup(p.pid, unix.SIGKILL)
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	unregister(p.pid)
	_ = p.out.Close()
	if p.errOut != nil {
		_ = p.errOut.Close()
	}
}

// watch starts the pipe readers and the leader's exit watcher, which
// notices the exit without reaping, so the leader's pid (the group id)
// stays reserved until the group has been killed.
func (p *process) watch(c Command) {
	p.readDone = make(chan struct{})
	go func() {
		defer close(p.readDone)
		var errDone chan struct{}
		if p.errOut != nil {
			errDone = make(chan struct{})
			go func() {
				defer close(errDone)
				p.errBytes = drain(p.errOut, c.Stderr)
			}()
		}
		p.outBytes = drain(p.out, c.Output)
		if errDone != nil {
			<-errDone
		}
	}()
	p.exited = make(chan struct{})
	go func() {
		defer close(p.exited)
		waitExit(p.pid)
	}()
}

// terminate asks the group and every process tagged tag to stop (TERM),
// waits until the leader has exited and the output is drained or grace
// passes (a deadline that comes during the grace cuts it short), then
// KILLs the group.
func (p *process) terminate(tag string, grace time.Duration, deadline <-chan time.Time) {
	signalGroup(p.pid, unix.SIGTERM)
	signalGroup(p.pid, unix.SIGCONT) // a stopped process cannot act on TERM
	signalTagged(tag, unix.SIGTERM)
	awaitBoth(p.exited, p.readDone, grace, deadline)
	signalGroup(p.pid, unix.SIGKILL)
}

// reap collects the leader's exit status into st once it has exited
// (reaped); otherwise it marks st Unreaped and leaves a goroutine to reap
// the leader whenever it exits. It returns the error of the wait.
func (p *process) reap(st *Status, reaped bool) error {
	if !reaped {
		st.Unreaped = true
		go func() {
			<-p.exited
			_ = p.cmd.Wait()
			unregister(p.pid)
		}()
		return nil
	}
	err := p.cmd.Wait()
	unregister(p.pid)
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok {
		switch {
		case ws.Exited():
			st.Exited, st.Code = true, ws.ExitStatus()
		case ws.Signaled():
			st.Signal = ws.Signal()
		}
	}
	return err
}

// closeOutput gives the output pipes grace to reach EOF, then closes them
// (which ends a read still blocked on a pipe a descendant holds) and waits
// for the readers. It reports whether the pipes reached EOF in time.
func (p *process) closeOutput(grace time.Duration) bool {
	eof := true
	t := time.NewTimer(grace)
	select {
	case <-p.readDone:
	case <-t.C:
		eof = false
	}
	t.Stop()
	_ = p.out.Close()
	if p.errOut != nil {
		_ = p.errOut.Close()
	}
	<-p.readDone
	return eof
}

// drainBufs holds drain's read buffers, a pipe's capacity each.
var drainBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// drain copies r to out until r fails, and counts the bytes. After a write
// error it keeps reading (a child blocked on a full pipe must not hang)
// and discards.
func drain(r io.Reader, out io.Writer) int64 {
	bp := drainBufs.Get().(*[]byte)
	defer drainBufs.Put(bp)
	buf := *bp
	var n int64
	var werr error
	if out == nil {
		werr = errors.New("discard")
	}
	for {
		k, err := r.Read(buf)
		if k > 0 {
			n += int64(k)
			if werr == nil {
				_, werr = out.Write(buf[:k])
			}
		}
		if err != nil {
			return n
		}
	}
}

// waitExit blocks until pid has exited, leaving it unreaped.
func waitExit(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

func signalGroup(pgid int, sig unix.Signal) {
	_ = unix.Kill(-pgid, sig)
}

// awaitBoth waits until a and b are both closed (true), or grace passes or
// deadline fires (false).
func awaitBoth(a, b <-chan struct{}, grace time.Duration, deadline <-chan time.Time) bool {
	t := time.NewTimer(grace)
	defer t.Stop()
	for a != nil || b != nil {
		select {
		case <-a:
			a = nil
		case <-b:
			b = nil
		case <-t.C:
			return false
		case <-deadline:
			return false
		}
	}
	return true
}

func awaitOrTimeout(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// WithTag returns env with TagVar set for a run tagged tag: an inherited
// TagVar is replaced by one whose list starts with tag and keeps the
// inherited tags.
func WithTag(env []string, tag string) []string {
	out := make([]string, 0, len(env)+1)
	value := tag
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, TagVar+"="); ok {
			if v != "" {
				value += "," + v
			}
			continue
		}
		out = append(out, kv)
	}
	return append(out, TagVar+"="+value)
}
