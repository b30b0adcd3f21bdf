// Package bash is the bash tool: a shell command run in the workspace with
// what `/bin/bash -lc` would give it (a `bash -c` that sources the
// session's login-shell snapshot, see snapshot.go), under the process rules of package procgroup (a new
// session and process group, TERM then KILL on cancel, KILL at the
// deadline, every leftover process killed when the command ends), with its
// combined output bounded to the output limit (head and tail) and, when it
// does not fit, copied in full (up to the spill bound) to a file in the
// session's state directory.
//
// The first call makes the server a child subreaper (see procgroup), so
// processes a command leaves behind reparent to the server and are reaped
// by it. Linux only.
package bash

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/scv-server/internal/tools/spill"
	"github.com/scv-cli/scv/shared/childenv"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/shared/textcut"
)

//go:embed description.md
var description string

// Shell is the program commands run with.
const Shell = "/bin/bash"

// Defaults used when Options and Env leave a value unset; they match the
// configuration's defaults.
const (
	DefaultTimeout = 600 * time.Second
	DefaultCeiling = 14400 * time.Second
	// defaultOutputLimit is the output limit when Env has none.
	defaultOutputLimit = 64 << 10
	// DefaultMaxProcesses is the process limit when Options sets none.
	DefaultMaxProcesses = 512
	// summaryMax bounds the command shown in the approval summary.
	summaryMax = 200
)

// Options configure the tool of one session.
type Options struct {
	// DefaultTimeout is the timeout of a call that asks for none
	// (tools.command_timeout_seconds), as the schema describes it. A
	// call's Env.Timeout decides when set.
	DefaultTimeout time.Duration
	// MaxTimeout is the largest timeout a call may ask for
	// (tools.max_timeout_seconds): the schema's maximum. A call's
	// Env.MaxTimeout decides when set.
	MaxTimeout time.Duration
	// SpillMaxBytes bounds the file that keeps a truncated output in full
	// (tools.spill_max_bytes); zero keeps no file.
	SpillMaxBytes int64
	// MaxProcesses bounds the processes the session's commands may have
	// alive at once, all calls of this tool instance (one per session)
	// together (tools.max_processes); a command whose processes go past it
	// is killed whole. Zero means DefaultMaxProcesses.
	MaxProcesses int
	// MemoryLimitMB is the address-space limit (RLIMIT_AS) of every
	// process of a command, in MiB (tools.memory_limit_mb); zero sets
	// none.
	MemoryLimitMB int64
	// HideEnv are variables removed from the server's environment before
	// a command gets it: the variables holding SCV's own secrets
	// (config.SecretEnvNames: the providers' api_key_env, the active
	// provider's whatever its name).
	HideEnv []string
	// TreesDir is where each command's process tree is recorded while it
	// runs (records.TreesDir), so that the next server or the daemon
	// reaps the tree of a server killed with SIGKILL; "" records nothing.
	TreesDir string
	// SnapshotTimeout bounds the login shell that takes the session's
	// login-shell snapshot (see snapshot.go); zero means
	// DefaultSnapshotTimeout, below zero runs every call with `bash -lc`
	// and takes no snapshot.
	SnapshotTimeout time.Duration
	// Logger receives the warning of a profile that could not be
	// captured; nil logs nothing.
	Logger *slog.Logger
}

// Tool is the bash tool.
type Tool struct {
	opts Options
	spec tools.Spec
	// procs counts the processes of every call of this instance.
	procs *procgroup.ProcessLimit
	// snap is the session's login-shell snapshot.
	snap *snapshot
}

// New returns the bash tool.
func New(o Options) *Tool {
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = DefaultCeiling
	}
	if o.MaxProcesses <= 0 {
		o.MaxProcesses = DefaultMaxProcesses
	}
	if o.SnapshotTimeout == 0 {
		o.SnapshotTimeout = DefaultSnapshotTimeout
	}
	o.MaxTimeout = max(o.MaxTimeout, time.Second)
	o.DefaultTimeout = min(o.DefaultTimeout, o.MaxTimeout)
	def, ceil := seconds(o.DefaultTimeout), seconds(o.MaxTimeout)
	desc := strings.NewReplacer("DEFAULT", strconv.FormatInt(def, 10), "MAX", strconv.FormatInt(ceil, 10)).
		Replace(strings.TrimSpace(description))
	schema := fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The shell command (bash syntax; several lines are fine)."},
    "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Seconds the command may run before it is killed (default %d)."}
  },
  "required": ["command"],
  "additionalProperties": false
}`, ceil, def)
	return &Tool{opts: o, spec: tools.Spec{Name: "bash", Description: desc, Schema: json.RawMessage(schema)},
		procs: procgroup.NewProcessLimit(o.MaxProcesses), snap: &snapshot{timeout: o.SnapshotTimeout}}
}

// Spec describes the tool.
func (t *Tool) Spec() tools.Spec { return t.spec }

type args struct {
	Command        string `json:"command"`
	TimeoutSeconds *int64 `json:"timeout_seconds"`
}

// Prepare checks the command and the timeout; a timeout above the ceiling
// is refused here, before approval.
func (t *Tool) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	var a args
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("bash arguments: %w", err)
	}
	if strings.TrimSpace(a.Command) == "" {
		return nil, errors.New("command is empty: give the shell command to run")
	}
	if i := strings.IndexByte(a.Command, 0); i >= 0 {
		return nil, fmt.Errorf("command has a NUL byte at position %d, which no shell command can hold; remove it", i)
	}
	def, ceiling := t.timeouts(env)
	timeout := def
	if a.TimeoutSeconds != nil {
		s := *a.TimeoutSeconds
		switch {
		case s < 1:
			return nil, fmt.Errorf("timeout_seconds is %d; it must be at least 1", s)
		case s > seconds(ceiling):
			return nil, fmt.Errorf("timeout_seconds %d is above the ceiling of %d s (tools.max_timeout_seconds); ask for at most %d, or leave it out for the default of %d s",
				s, seconds(ceiling), seconds(ceiling), seconds(def))
		}
		timeout = time.Duration(s) * time.Second
	}
	summary := "Run shell command: " + summarize(a.Command)
	if timeout != def {
		summary += fmt.Sprintf(" (timeout %d s)", seconds(timeout))
	}
	rule, keys := sessionRule(a.Command)
	return &tools.Plan{
		Risk:    protocol.RiskProcess,
		Summary: summary,
		Rule:    rule,
		Keys:    keys,
		Run: func(ctx context.Context) (tools.Result, error) {
			return t.run(ctx, env, a.Command, timeout)
		},
	}, nil
}

// timeouts returns a call's default timeout and ceiling.
func (t *Tool) timeouts(env tools.Env) (def, ceiling time.Duration) {
	def, ceiling = env.Timeout, env.MaxTimeout
	if ceiling <= 0 {
		ceiling = t.opts.MaxTimeout
	}
	if def <= 0 {
		def = t.opts.DefaultTimeout
	}
	return min(def, ceiling), ceiling
}

func seconds(d time.Duration) int64 { return int64(d / time.Second) }

// summarize is the command's first line, bounded, with a note of the lines
// not shown.
func summarize(cmd string) string {
	cmd = strings.TrimSpace(cmd)
	first, rest, multi := strings.Cut(cmd, "\n")
	first = strings.TrimRight(first, "\r \t")
	if len(first) > summaryMax {
		first = textcut.Prefix(first, summaryMax) + "…"
	}
	if multi {
		n := strings.Count(rest, "\n") + 1
		first += fmt.Sprintf(" [+%d more line%s]", n, plural(n))
	}
	return first
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (t *Tool) run(ctx context.Context, env tools.Env, command string, timeout time.Duration) (tools.Result, error) {
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	limit := env.OutputLimit
	if limit <= 0 {
		limit = defaultOutputLimit
	}
	tag := uuid.NewString()
	var spillPath string
	if env.StateDir != "" && t.opts.SpillMaxBytes > 0 {
		spillPath = filepath.Join(env.StateDir, tools.SpillDir, "bash-"+tag+".log")
	}
	c := newCapture(limit, spillPath, t.opts.SpillMaxBytes)
	var fw *forwarder
	if env.Progress != nil {
		fw = startForwarder(env.Progress)
		c.onLine = fw.offer
	}
	if t.opts.TreesDir != "" {
		// Recorded before the tree starts and removed once procgroup.Run
		// has stopped it: a SIGKILL of this server in between leaves a
		// record whose owner is gone, and reconcile kills the tree.
		if self, err := records.Self(); err == nil {
			if err := records.WriteTree(t.opts.TreesDir, records.Tree{Tag: tag, Owner: self, What: "bash"}); err != nil {
				c.discard()
				if fw != nil {
					fw.stop()
				}
				return tools.Failed(fmt.Sprintf("could not record the command's process tree: %v", err)), nil
			}
			defer func() { _ = records.RemoveTree(t.opts.TreesDir, tag) }()
		}
	}
	pc, err := t.snap.prepare(ctx, t.childEnv(), env.Workspace, env.StateDir, command, t.procs)
	if err != nil {
		c.discard()
		if fw != nil {
			fw.stop()
		}
		return tools.Result{}, err
	}
	if pc.warning != "" && t.opts.Logger != nil {
		t.opts.Logger.Warn("The login profile could not be captured; bash calls of this session start a login shell each", "warning", pc.warning)
	}
	st, err := procgroup.Run(ctx, procgroup.Command{
		Path:        Shell,
		Args:        pc.args,
		Dir:         env.Workspace,
		Env:         pc.env,
		Tag:         tag,
		Output:      c,
		Timeout:     timeout,
		Limit:       t.procs,
		MemoryLimit: t.opts.MemoryLimitMB << 20,
	})
	if fw != nil {
		fw.stop()
	}
	if st.Cancelled {
		c.discard()
		if err := ctx.Err(); err != nil {
			return tools.Result{}, err
		}
		return tools.Result{}, context.Canceled
	}
	if err != nil {
		c.discard()
		return tools.Failed(fmt.Sprintf("could not run %s in %s: %v", Shell, env.Workspace, err)), nil
	}
	res := render(st, c, timeout, limit, t.limits(), pc.warning)
	_ = c.close()
	return res, nil
}

// childEnv is the environment a command starts from: the server's, less
// the secrets the configuration names.
func (t *Tool) childEnv() []string { return childenv.Without(os.Environ(), t.opts.HideEnv...) }

// Warm takes the session's login-shell snapshot before the first call
// needs it (tools.Warmer): the loop calls it while a call waits for
// approval, so a slow profile runs while the user reads.
func (t *Tool) Warm(ctx context.Context, env tools.Env) {
	t.snap.warm(ctx, t.childEnv(), env.Workspace, env.StateDir, t.procs)
}

// limits are the process and memory limits a result may name.
type limits struct {
	maxProcesses  int
	memoryLimitMB int64
}

func (t *Tool) limits() limits {
	return limits{maxProcesses: t.procs.Max(), memoryLimitMB: t.opts.MemoryLimitMB}
}

// status is the first line of a result.
func status(st procgroup.Status, timeout time.Duration) string {
	switch {
	case st.ProcessLimited:
		return "killed: too many processes"
	case st.TimedOut:
		return fmt.Sprintf("timed out after %d s (killed)", seconds(timeout))
	case st.Exited:
		return "exit " + strconv.Itoa(st.Code)
	case st.Signal != 0:
		return "killed by signal " + st.SignalName()
	}
	return "ended without an exit status"
}

// render is the result the model reads: the status line, the bounded
// output, then notes (truncation, spill file, processes killed), the
// whole within limit bytes.
func render(st procgroup.Status, c *capture, timeout time.Duration, limit int, lim limits, warning string) tools.Result {
	head := status(st, timeout) + "\n"
	var notes []string
	if warning != "" {
		notes = append(notes, warning)
	}
	if st.ProcessLimited {
		notes = append(notes, fmt.Sprintf("[the command was stopped: this session's commands had more than %d processes alive at once (tools.max_processes), as a fork loop would; every process of the command was killed. Start fewer processes at once, or ask the user to raise tools.max_processes]",
			lim.maxProcesses))
	}
	if lim.memoryLimitMB > 0 && !(st.Exited && st.Code == 0) && outOfMemory(c) {
		notes = append(notes, fmt.Sprintf("[the command ran out of memory: each of its processes may use at most %d MiB of address space (tools.memory_limit_mb); use less memory (smaller inputs, streaming), or ask the user to raise tools.memory_limit_mb]",
			lim.memoryLimitMB))
	}
	if st.Swept > 0 {
		notes = append(notes, fmt.Sprintf("[%d process%s the command left running %s killed when it ended; a command cannot leave processes behind]",
			st.Swept, pluralES(st.Swept), wasWere(st.Swept)))
	}
	if st.Survivors > 0 {
		notes = append(notes, fmt.Sprintf("[%d process%s of the command could not be killed]", st.Survivors, pluralES(st.Survivors)))
	}
	if st.PipeHeld {
		notes = append(notes, "[a process out of reach (without the run's environment marker) kept the output open; output after the command ended is lost]")
	}
	if st.Unreaped {
		notes = append(notes, "[the shell did not die after KILL (uninterruptible sleep?); it is reaped when it does]")
	}
	res := tools.Result{Success: st.Exited && st.Code == 0 && !st.TimedOut}

	if all, ok := c.memory(); ok {
		out := spill.Valid(all)
		if len(all) == 0 {
			out = "(no output)"
		}
		text := spill.Join(head, out, notes)
		if len(text) <= limit {
			res.Output = text
			return res
		}
		// Fits in memory but not in the limit (notes, or bytes that grew
		// when made valid): keep it in full in the spill file.
		c.startSpill(all)
	}

	res.Truncated = true
	t := spill.Truncated{Head: head, First: c.head, Last: c.tail(), Total: c.total, Notes: notes,
		SpillNote: spill.Note(c.spill, c.total, "[the full output was not kept; rerun the command with less output, for example through head, tail or grep, or redirect it to a file and read that]")}
	if all, ok := c.memory(); ok {
		t.First, t.Last = all, all
	}
	res.Output = t.Render(limit)
	return res
}

// oomPhrases are what programs print when an allocation fails, in lower
// case: the C library's ENOMEM message, bash's xmalloc, Python's
// MemoryError, C++'s bad_alloc, the Go runtime, V8 and the JVM.
var oomPhrases = []string{
	"cannot allocate", "memoryerror", "bad_alloc",
	"runtime: out of memory", "fatal error: out of memory", "out of memory", "failed to reserve",
	"outofmemoryerror", "allocation failed",
}

// outOfMemory reports whether the captured output (its head and tail)
// says an allocation failed.
func outOfMemory(c *capture) bool {
	for _, b := range [][]byte{c.head, c.tail()} {
		low := strings.ToLower(string(b))
		for _, p := range oomPhrases {
			if strings.Contains(low, p) {
				return true
			}
		}
	}
	return false
}

func pluralES(n int) string {
	if n == 1 {
		return ""
	}
	return "es"
}

func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// forwarder hands the latest output line to Env.Progress from its own
// goroutine, so a slow client never stalls the pipe's reader. Lines that
// come while one is being forwarded are replaced by newer ones.
type forwarder struct {
	progress func(string)
	mu       sync.Mutex
	line     string // guarded by mu
	kick     chan struct{}
	done     chan struct{}
}

func startForwarder(progress func(string)) *forwarder {
	f := &forwarder{progress: progress, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for range f.kick {
			f.mu.Lock()
			line := f.line
			f.mu.Unlock()
			f.progress(line)
		}
	}()
	return f
}

func (f *forwarder) offer(line string) {
	f.mu.Lock()
	f.line = line
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// stop ends forwarding after a pending line and waits for the goroutine.
func (f *forwarder) stop() {
	close(f.kick)
	<-f.done
}
