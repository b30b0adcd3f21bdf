// Package runner is the one-process-per-turn backend of delegated agents:
// each call starts the agent's CLI once (package agentadapters describes
// the command line and environment), under procgroup's process rules, with
// the run's delegation handle as its process tag; it reads stdout as it
// arrives through package output, keeps a bounded stderr tail, records the
// run in $SCV_HOME/state/delegations while it lasts, and returns the
// structured result (tools.md, "Results").
package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/output"
	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	"github.com/scv-cli/scv/shared/delegate/adapters"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/delegate/signin"
	"github.com/scv-cli/scv/shared/paths"
)

// Variables of the delegation chain (tools.md, "Tracking and cleanup").
const (
	// ParentVar is SCV_PARENT: the chain of delegations above a process,
	// each <instance>/<session>/<handle>, outermost first, separated by
	// ChainSep. The instance is the SCV_HOME of the SCV that delegated,
	// so an element is split from the right: its last two components
	// are the session and the handle.
	ParentVar = "SCV_PARENT"
	// DepthVar is SCV_DELEGATION_DEPTH, one more than the caller's.
	DepthVar = "SCV_DELEGATION_DEPTH"
	// ChainSep separates the elements of SCV_PARENT. A comma, as in
	// SCV_RUN_TAG's list, because an element holds '/' already.
	ChainSep = ","
)

// StopGrace is how long a cancelled run gets between TERM and KILL.
const StopGrace = 2 * time.Second

// StderrTail is how much of stderr a result keeps.
const StderrTail = 2 << 10

// maxError bounds a result's error text.
const maxError = 2 << 10

// ErrUnavailable is wrapped by Plan's error when the agent cannot run at
// all (its executable is missing): the `agent` tool then adds the
// fallback sentence, as for an unavailable result.
var ErrUnavailable = delegate.ErrUnavailable

// Options configure a Runner.
type Options struct {
	// Home is SCV_HOME (absolute): private homes go under Home/agents,
	// records under Home/state.
	Home string
	// Env is the server's environment for finding executables (HOME and
	// PATH); nil is the process environment.
	Env paths.Env
	// BaseEnv is the environment a delegated agent inherits before the
	// scrub (KEY=value); nil is the process environment at each run.
	BaseEnv []string
	// Permissions maps an agent to "full" for permissions = "full".
	Permissions map[string]string
	// OutputLimit bounds a reply (tools.output_limit_bytes); 0 uses
	// output.DefaultLimit.
	OutputLimit int
	// Instance names this SCV instance in SCV_PARENT; empty is Home.
	Instance string
	// Adapters replaces the adapter table (tests run a fake agent
	// script through /bin/bash with it); nil is adapters.All().
	Adapters []adapters.Adapter
	// Logger receives warnings (a record that could not be written);
	// nil discards.
	Logger *slog.Logger
}

// Runner starts delegated agent CLIs, one process per turn.
type Runner struct {
	opts  Options
	table []adapters.Adapter
	// backends are made once, one per adapter, so Plan and Run of a call
	// meet on the same backend whichever way it was obtained.
	backends []*backend
	log      *slog.Logger
}

// New returns a Runner.
func New(opts Options) *Runner {
	r := &Runner{opts: opts, table: opts.Adapters, log: opts.Logger}
	if r.table == nil {
		r.table = adapters.All()
	}
	if r.opts.Env == nil {
		r.opts.Env = paths.OSEnv()
	}
	if r.opts.Instance == "" {
		r.opts.Instance = opts.Home
	}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	for _, a := range r.table {
		r.backends = append(r.backends, &backend{r: r, a: a})
	}
	return r
}

// Backend returns the backend of the agent name, whether or not it is
// installed (Plan reports a missing executable).
func (r *Runner) Backend(name string) (delegate.Backend, bool) {
	for _, b := range r.backends {
		if b.a.Name == name {
			return b, true
		}
	}
	return nil, false
}

// Offered returns the backends a session starting now offers, in adapter
// order: the agents whose executable resolves in env (nil: the runner's
// Env), minus those whose sign-in SCV checks from a file and finds signed
// out (signin.Check).
func (r *Runner) Offered(env paths.Env) []delegate.Backend {
	if env == nil {
		env = r.opts.Env
	}
	var out []delegate.Backend
	for _, b := range r.backends {
		if _, err := b.a.Lookup(env); err != nil {
			continue
		}
		if st := signin.Check(r.opts.Home, b.a.Name, env); st.Checked && !st.SignedIn {
			continue
		}
		out = append(out, b)
	}
	return out
}

// InstanceID returns a short stable id of an SCV home, for callers that
// want SCV_PARENT without the home's path (Options.Instance).
func InstanceID(home string) string {
	sum := sha256.Sum256([]byte(home))
	return "scv-" + hex.EncodeToString(sum[:6])
}

// maxPlanned bounds the launches remembered between Plan and Run (calls
// that were planned but never run, such as denied ones, are forgotten
// oldest first).
const maxPlanned = 32

// backend runs one agent.
type backend struct {
	r *Runner
	a adapters.Adapter

	mu sync.Mutex
	// planned holds the executable Plan resolved for a handle, so Run
	// starts the program the approval showed even if PATH or the install
	// directories changed in between.
	planned map[string]string
	order   []string
}

func (b *backend) remember(handle, exe string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.planned == nil {
		b.planned = map[string]string{}
	}
	if _, ok := b.planned[handle]; !ok {
		b.order = append(b.order, handle)
	}
	b.planned[handle] = exe
	for len(b.order) > maxPlanned {
		delete(b.planned, b.order[0])
		b.order = b.order[1:]
	}
}

func (b *backend) take(handle string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	exe, ok := b.planned[handle]
	if ok {
		delete(b.planned, handle)
		b.order = slices.DeleteFunc(b.order, func(h string) bool { return h == handle })
	}
	return exe, ok
}

// Descriptor implements agents.Backend.
func (b *backend) Descriptor() delegate.Descriptor {
	return delegate.Descriptor{
		Name:         b.a.Name,
		Product:      b.a.Product,
		Summary:      b.a.Summary,
		ModelFamily:  b.a.ModelFamily,
		TakesModel:   b.a.TakesModel(),
		TakesEffort:  b.a.TakesEffort(),
		TakesSession: b.a.TakesSession(),
	}
}

func (b *backend) fullPermissions() bool {
	return b.r.opts.Permissions[b.a.Name] == "full"
}

// outputFile is the file Codex writes its final message to: in the
// private tmp directory of its agent home, named after the run's handle.
func (b *backend) outputFile(call delegate.Call) (string, error) {
	if !slices.ContainsFunc(b.a.OutputArgs, func(s string) bool { return strings.Contains(s, adapters.OutputFilePlaceholder) }) {
		return "", nil
	}
	dir, err := b.a.TmpDir(b.r.opts.Home)
	if err != nil {
		return "", err
	}
	if call.Handle == "" || strings.ContainsAny(call.Handle, "/\x00") || call.Handle == "." || call.Handle == ".." {
		return "", fmt.Errorf("delegation handle %q cannot name a file", call.Handle)
	}
	return filepath.Join(dir, call.Handle+".last-message.txt"), nil
}

// Plan implements agents.Backend: the absolute executable, the argument
// vector and the directory Run would start. A missing executable wraps
// ErrUnavailable; a selection the agent does not take wraps
// adapters.ErrUnsupportedOption.
//
// Run starts the executable Plan resolved for the same handle, so what
// runs is what the approval showed.
func (b *backend) Plan(call delegate.Call) (delegate.Launch, error) {
	l, err := b.plan(call, "")
	if err == nil && call.Handle != "" {
		b.remember(call.Handle, l.Executable)
	}
	return l, err
}

// plan builds the launch of call; exe, when set, is the executable Plan
// resolved before the approval, which is not looked up again.
func (b *backend) plan(call delegate.Call, exe string) (delegate.Launch, error) {
	if call.Agent != "" && call.Agent != b.a.Name {
		return delegate.Launch{}, fmt.Errorf("call for %s handed to the %s backend", call.Agent, b.a.Name)
	}
	if exe == "" {
		var err error
		if exe, err = b.a.Lookup(b.r.opts.Env); err != nil {
			return delegate.Launch{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	if !filepath.IsAbs(call.Dir) {
		return delegate.Launch{}, fmt.Errorf("the directory to run %s in, %q, is not an absolute path", b.a.Name, call.Dir)
	}
	ofile, err := b.outputFile(call)
	if err != nil {
		return delegate.Launch{}, err
	}
	state, err := b.a.StatePath(b.r.opts.Home)
	if err != nil {
		return delegate.Launch{}, err
	}
	args, err := b.a.Args(adapters.Invocation{
		Prompt:          call.Prompt,
		Model:           call.Model,
		Effort:          call.Effort,
		NewSession:      call.NewCLISession,
		ResumeSession:   call.ResumeCLISession,
		FullPermissions: b.fullPermissions(),
		OutputFile:      ofile,
		StateDir:        state,
	})
	if err != nil {
		return delegate.Launch{}, err
	}
	return delegate.Launch{Executable: exe, Args: args, Dir: call.Dir, FullPermissions: b.fullPermissions()}, nil
}

// env returns the agent's environment for call.
func (b *backend) env(call delegate.Call) ([]string, error) {
	base := b.r.opts.BaseEnv
	if base == nil {
		base = os.Environ()
	}
	env, err := b.a.PrivateEnv(base, b.r.opts.Home)
	if err != nil {
		return nil, err
	}
	if b.fullPermissions() {
		env = append(env, b.a.FullPermissionsEnv...)
	}
	self := b.r.opts.Instance + "/" + call.SessionID + "/" + call.Handle
	chain := self
	out := env[:0]
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, ParentVar+"="):
			if v := strings.TrimPrefix(kv, ParentVar+"="); v != "" {
				chain = v + ChainSep + self
			}
		case strings.HasPrefix(kv, DepthVar+"="):
		default:
			out = append(out, kv)
		}
	}
	return append(out, ParentVar+"="+chain, DepthVar+"="+strconv.Itoa(call.Depth+1)), nil
}

// Run implements agents.Backend.
func (b *backend) Run(ctx context.Context, call delegate.Call, progress func(string)) delegate.Result {
	res := delegate.Result{Agent: b.a.Name, Session: call.Conversation, Turn: call.Turn}
	fail := func(kind delegate.ErrorKind, format string, a ...any) delegate.Result {
		res.Status, res.Kind = delegate.StatusFailed, kind
		res.Error = fmt.Sprintf(format, a...)
		b.hint(&res)
		return res
	}
	// Start what the approval showed; if it is gone, the start fails.
	approved, _ := b.take(call.Handle)
	launch, err := b.plan(call, approved)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return fail(delegate.ErrorUnavailable, "%s", strings.TrimPrefix(err.Error(), ErrUnavailable.Error()+": "))
		}
		return fail(delegate.ErrorNone, "%s", err.Error())
	}
	home := b.r.opts.Home
	if err := b.a.EnsureDirs(home); err != nil {
		return fail(delegate.ErrorNone, "cannot prepare the private home of %s: %v", b.a.Name, err)
	}
	ofile, _ := b.outputFile(call)
	if ofile != "" {
		if err := paths.EnsureDir(filepath.Dir(ofile)); err != nil {
			return fail(delegate.ErrorNone, "cannot prepare the private tmp directory of %s: %v", b.a.Name, err)
		}
		_ = os.Remove(ofile) // a stale file must not pass for this run's reply
		defer os.Remove(ofile)
	}
	env, err := b.env(call)
	if err != nil {
		return fail(delegate.ErrorNone, "cannot build the environment of %s: %v", b.a.Name, err)
	}

	parser := output.New(b.a.Format, output.Options{Limit: b.r.opts.OutputLimit, Progress: progress})
	stderr := &output.Tail{Max: StderrTail}
	// The CLI session known before the run: the one resumed, or the one
	// SCV chose for a CLI that takes it (Codex picks its own).
	cli := call.ResumeCLISession
	if cli == "" && b.a.ChoosesSession() {
		cli = call.NewCLISession
	}
	owner, ownerErr := records.Self()
	if ownerErr != nil {
		b.r.log.Warn("delegation record without owner identity", "handle", call.Handle, "err", ownerErr)
	}
	recorded := false
	onStart := func(pid int) {
		proc, err := records.ProcessOf(pid)
		if err != nil {
			// The leader exited already; record the pid alone.
			proc = records.Process{PID: pid}
		}
		rec := records.Record{
			Handle: call.Handle, Agent: b.a.Name, Session: call.SessionID, Cwd: call.Dir,
			Depth: call.Depth + 1, AgentProcess: proc, Owner: owner, StartedUnix: time.Now().Unix(),
			Conversation: call.Conversation, Turn: call.Turn, Background: call.Background,
		}
		if err := records.Write(home, rec); err != nil {
			b.r.log.Warn("cannot write the delegation record", "handle", call.Handle, "err", err)
		} else {
			recorded = true
		}
		if cli != "" {
			if err := records.MarkConversation(home, cli, owner); err != nil {
				b.r.log.Warn("cannot mark the conversation", "handle", call.Handle, "err", err)
			}
		}
	}
	st, runErr := procgroup.Run(ctx, procgroup.Command{
		Path:      launch.Executable,
		Args:      launch.Args,
		Dir:       launch.Dir,
		Env:       env,
		Tag:       call.Handle,
		Output:    parser,
		Stderr:    stderr,
		Timeout:   call.Timeout,
		TermGrace: StopGrace,
		OnStart:   onStart,
	})
	killed := false
	if recorded {
		// `scv agents kill` marks the record before it stops the run, so
		// a run it stopped reads as cancelled, not as a failure.
		if rec, err := records.Read(home, call.Handle); err == nil && rec.KillRequestedUnix != 0 {
			killed = true
		}
		if err := records.Remove(home, call.Handle); err != nil {
			b.r.log.Warn("cannot remove the delegation record", "handle", call.Handle, "err", err)
		}
	}
	if st.Survivors > 0 {
		b.r.log.Warn("processes of a delegated run survived the sweep", "handle", call.Handle, "survivors", st.Survivors)
	}
	out := parser.Close()
	if ofile != "" && out.Reply == "" && !out.Failed {
		if reply, truncated, ok := readBounded(ofile, b.r.opts.OutputLimit); ok {
			out.Reply, out.Truncated = reply, truncated
		}
	}

	res.Reply, res.Truncated, res.Usage = out.Reply, out.Truncated, out.Usage
	res.StderrTail = strings.TrimRight(stderr.String(), "\n")
	if stderr.Total() > int64(StderrTail) {
		res.Truncated = true
	}
	res.CLISession = b.cliSession(call, out.CLISession)
	switch {
	case cli != "" && (call.Conversation == "" || res.CLISession == ""):
		// A one-off run has no conversation to keep, and a first turn
		// that ended before the CLI reported its session left none to
		// resume.
		if err := records.UnmarkConversation(home, cli); err != nil {
			b.r.log.Warn("cannot unmark the conversation", "handle", call.Handle, "err", err)
		}
	case call.Conversation != "" && res.CLISession != "" && res.CLISession != cli:
		// Codex reports its thread id only in the stream.
		if err := records.MarkConversation(home, res.CLISession, owner); err != nil {
			b.r.log.Warn("cannot mark the conversation", "handle", call.Handle, "err", err)
		}
	}
	if st.Exited {
		code := st.Code
		res.ExitCode = &code
	}

	switch {
	case runErr != nil:
		res.Reply, res.CLISession = "", ""
		return fail(delegate.ErrorUnavailable, "%s could not be started (%s): %v", b.a.Product, launch.Executable, runErr)
	case st.Cancelled:
		res.Status = delegate.StatusCancelled
		res.Error = fmt.Sprintf("the %s run was cancelled and its processes were stopped", b.a.Product)
		return res
	case killed:
		res.Status = delegate.StatusCancelled
		res.Error = fmt.Sprintf("the %s run was stopped with `scv agents kill %s`", b.a.Product, call.Handle)
		return res
	case st.TimedOut:
		res.Status = delegate.StatusTimeout
		res.Error = fmt.Sprintf("%s did not finish within %s, so its processes were stopped; raise timeout_seconds for long work", b.a.Product, call.Timeout)
		return res
	case out.Declined:
		res.Status = delegate.StatusDeclined
		return res
	case out.Failed || !st.Exited || st.Code != 0:
		res.Status = delegate.StatusFailed
	default:
		res.Status = delegate.StatusCompleted
		return res
	}

	// A failed run: what the CLI reported, else a plain-text run's
	// closing output, else the end of stderr, else how it ended.
	msg := out.Error
	if msg == "" {
		msg = out.ClosingOutput
	}
	if msg == "" {
		msg = output.Last(res.StderrTail, 512)
	}
	switch {
	case msg != "":
	case !st.Exited:
		msg = fmt.Sprintf("%s was killed by signal %s", b.a.Product, st.Signal)
	default:
		msg = fmt.Sprintf("%s exited with code %d", b.a.Product, st.Code)
	}
	if !out.Failed && st.Exited && st.Code != 0 && !strings.Contains(msg, "exit") {
		msg = fmt.Sprintf("%s exited with code %d: %s", b.a.Product, st.Code, msg)
	}
	res.Error, _ = output.Bound(msg, maxError)
	// The fallback decision reads only what the CLI reported as an error
	// and stderr, never the reply.
	res.Kind = output.Classify(out.Error + "\n" + out.ClosingOutput + "\n" + res.StderrTail)
	if res.Kind == delegate.ErrorNone && st.OutputBytes == 0 && st.Exited && st.Code != 0 {
		// It exited at once, before writing anything: it could not run.
		res.Kind = delegate.ErrorUnavailable
	}
	b.hint(&res)
	return res
}

// cliSession returns the CLI session a run leaves to resume, given the
// session id its stream reported ("" when none).
//
// A CLI that takes SCV's id (Claude, pi) runs in the session SCV resumed,
// or in the one it chose once the stream reported a session at all: pi's
// session header carries an id pi made up, not the name of the file SCV
// passed, so a reported id only tells that the session exists. A first
// turn whose CLI exited before reporting one (signed out, crashed,
// stopped early) has no session. Codex's thread id comes from the stream,
// else it is the thread resumed.
func (b *backend) cliSession(call delegate.Call, reported string) string {
	switch {
	case !b.a.ChoosesSession() && reported != "":
		return reported
	case call.ResumeCLISession != "":
		return call.ResumeCLISession
	case b.a.ChoosesSession() && reported != "":
		return call.NewCLISession
	}
	return ""
}

// hint adds the sign-in hint to a signed-out result.
func (b *backend) hint(res *delegate.Result) {
	if res.Kind == delegate.ErrorSignedOut {
		res.Hint = delegate.SignInHint(b.a.Product, b.a.Name)
	}
}

// readBounded reads at most limit bytes of a file (the Codex -o file),
// cut on a character boundary.
func readBounded(path string, limit int) (string, bool, bool) {
	if limit <= 0 {
		limit = output.DefaultLimit
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false, false
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return "", false, false
	}
	s, cut := output.Bound(strings.TrimSpace(string(buf)), limit)
	if len(buf) > limit {
		cut = true
		s = strings.TrimSuffix(s, "\uFFFD")
	}
	return s, cut, s != ""
}
