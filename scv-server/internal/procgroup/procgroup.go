// Package procgroup runs a child process tree under SCV's process rules:
// the child starts in a new session (and so a new process group) with
// stdin on /dev/null, every process of the tree carries a marker
// SCV_RUN_TAG=<tag> in its environment, cancellation sends TERM to the
// group and KILLs what remains after a grace, a deadline KILLs at once, and
// when the leader exits everything still carrying the marker is killed,
// including processes that left the group (setsid, double fork). Output is
// one pipe shared by stdout and stderr (or two, when the caller asks for
// stderr apart), drained by the package and handed to the caller's
// writers; a process that keeps the pipe open cannot hold
// Run past the leader's exit plus a short grace.
//
// The package makes the server process a child subreaper
// (PR_SET_CHILD_SUBREAPER, once, on first use), so orphans of a run
// reparent to the server instead of init and can be reaped here. Reaping
// is by pid only, never wait4(-1): the leaders this package starts are
// registered and left to os/exec, and only unregistered zombie children
// (adopted orphans) are reaped. Every child process of a server that uses
// this package must therefore be started through it (Run): a child started
// with os/exec elsewhere in the same process could have its exit status
// reaped here.
//
// The marker is an environment variable, which env -i drops; so each run
// is also followed by ancestry while it runs (every 50 ms: children of its
// processes, and orphans adopted by the server), and what survives the
// marker sweep is killed by that view too. The same scans count the run's
// processes against a ProcessLimit shared by a session's runs, which stops
// a fork loop. Command.MemoryLimit sets RLIMIT_AS on the leader.
//
// Linux only: other systems get ErrUnsupported from Run.
package procgroup

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// TagVar is the environment variable that marks every process of a run.
// Its value is a comma-separated list of run tags, the run's own first:
// a run started inside another run (a nested SCV) keeps the outer tags, so
// the outer run's sweep still finds the inner run's processes.
const TagVar = "SCV_RUN_TAG"

// Defaults of Command's graces.
const (
	DefaultTermGrace = 2 * time.Second
	DefaultPipeGrace = 200 * time.Millisecond
)

// ErrUnsupported is returned by Run on systems other than Linux.
var ErrUnsupported = errors.New("procgroup: running commands is supported on Linux only")

// Command is one process tree to run.
type Command struct {
	// Path is the program; Args are its arguments after argv[0], which is
	// Path.
	Path string
	Args []string
	// Dir is the working directory.
	Dir string
	// Env is the environment, without the marker: Run adds TagVar (and
	// replaces an inherited TagVar with the extended list).
	Env []string
	// Tag is the run's marker value; empty means a new random one. It must
	// not contain a comma, NUL or '='.
	Tag string
	// Output receives the combined stdout and stderr, from a single
	// goroutine, while the command runs; when Stderr is set, only stdout.
	// Run returns only after its last Write. A Write error stops
	// delivery; draining goes on. Nil discards.
	Output io.Writer
	// Stderr, when set, receives stderr through a pipe of its own, from
	// another goroutine than Output's (so stdout stays a clean stream for
	// a parser). Nil keeps the single combined pipe, whose order of
	// interleaved output a terminal-like reader such as the bash tool
	// depends on.
	Stderr io.Writer
	// OnStart, when set, is called with the leader's pid once it has
	// started, before Run waits for it (to record the run while it
	// lasts). Run does not return before OnStart does.
	OnStart func(pid int)
	// Timeout is the deadline, measured from the start; reaching it KILLs
	// the group at once. Zero means none.
	Timeout time.Duration
	// TermGrace is how long cancellation waits after TERM before KILL
	// (default DefaultTermGrace).
	TermGrace time.Duration
	// Limit, when set, bounds the processes alive at once of every run
	// sharing it (a session's calls); a run that goes past it is killed
	// whole and its Status says ProcessLimited.
	Limit *ProcessLimit
	// MemoryLimit, when above zero, is the address-space limit
	// (RLIMIT_AS, soft and hard) of the leader, set with prlimit right
	// after it starts, and so of every process it starts later.
	MemoryLimit int64
	// PipeGrace is how long Run waits for the output pipe to reach EOF once
	// the leader has exited and the tree has been killed (default
	// DefaultPipeGrace). A process out of reach that still holds the pipe
	// is then abandoned: Run closes its read end.
	PipeGrace time.Duration
}

// Status is how a run ended.
type Status struct {
	// Tag is the run's marker value.
	Tag string
	// Pid is the leader's process id.
	Pid int
	// Exited reports a normal exit with Code; otherwise Signal ended the
	// leader.
	Exited bool
	Code   int
	Signal syscall.Signal
	// TimedOut is set when the deadline killed the run; Cancelled when the
	// context did.
	TimedOut  bool
	Cancelled bool
	// ProcessLimited is set when the run was killed because the runs
	// sharing its Command.Limit had more processes alive than it allows.
	ProcessLimited bool
	// Swept counts processes of the run still alive after the leader
	// exited, which were killed: those carrying the marker, and those
	// found by ancestry (a descendant, or an orphan adopted by the server
	// as a subreaper) that dropped it (env -i). Survivors counts those
	// that were still alive after the last sweep (unkillable, or out of
	// reach).
	Swept     int
	Survivors int
	// PipeHeld is set when something still held the output pipe after the
	// pipe grace (a process that dropped the marker, such as one run under
	// env -i, or outside the server's reach).
	PipeHeld bool
	// Unreaped is set when the leader did not die within a bound after
	// KILL (uninterruptible sleep); it is reaped in the background when it
	// finally exits.
	Unreaped bool
	// OutputBytes is the number of bytes read from the output pipe;
	// StderrBytes from the stderr pipe when Command.Stderr was set.
	OutputBytes int64
	StderrBytes int64
	// Elapsed is the time from start to the leader's exit.
	Elapsed time.Duration
}

// SignalName is the status's signal as people write it without the SIG
// prefix ("KILL", "TERM"); syscall.Signal's own String is a description
// ("killed") that reads badly after "killed by signal".
func (st Status) SignalName() string {
	if name := unix.SignalName(st.Signal); name != "" {
		return strings.TrimPrefix(name, "SIG")
	}
	return strconv.Itoa(int(st.Signal))
}
