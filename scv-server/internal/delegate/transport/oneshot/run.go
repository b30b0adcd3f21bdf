package oneshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/output"
	"github.com/scv-cli/scv/scv-server/internal/procgroup"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/paths"
	"github.com/scv-cli/scv/shared/statefile"

	"github.com/scv-cli/scv/shared/textcut"
)

// Run implements delegate.Backend: it prepares the launch the approval
// showed, starts it under procgroup with its record written while it
// runs, reads its output, and turns how it ended into the result.
func (b *backend) Run(ctx context.Context, call delegate.Call, progress func(string)) delegate.Result {
	res := delegate.Result{Agent: b.a.Name, Session: call.Conversation, Turn: call.Turn}
	l, kind, err := b.prepare(call)
	if err != nil {
		return b.fail(res, kind, err.Error())
	}
	if l.outputFile != "" {
		defer os.Remove(l.outputFile)
	}

	parser := output.New(b.a.Format, output.Options{Limit: b.r.opts.OutputLimit, Progress: progress})
	stderr := &output.Tail{Max: StderrTail}
	book := b.bookkeeping(call)
	st, runErr := procgroup.Run(ctx, procgroup.Command{
		Path:      l.Executable,
		Args:      l.Args,
		Dir:       l.Dir,
		Env:       l.env,
		Tag:       call.Handle,
		Output:    parser,
		Stderr:    stderr,
		Timeout:   call.Timeout,
		TermGrace: StopGrace,
		OnStart:   book.start,
	})
	killed := book.finish()
	if st.Survivors > 0 {
		b.r.log.Warn("processes of a delegated run survived the sweep", "handle", call.Handle, "survivors", st.Survivors)
	}
	out := parser.Close()
	if l.outputFile != "" && out.Reply == "" && !out.Failed {
		if reply, truncated, ok := readBounded(l.outputFile, b.r.opts.OutputLimit); ok {
			out.Reply, out.Truncated = reply, truncated
		}
	}

	res.Reply, res.Truncated, res.Usage = out.Reply, out.Truncated, out.Usage
	res.StderrTail = strings.TrimRight(stderr.String(), "\n")
	if stderr.Total() > int64(StderrTail) {
		res.Truncated = true
	}
	res.CLISession = b.cliSession(call, out.CLISession)
	book.settleConversation(res.CLISession)
	if st.Exited {
		code := st.Code
		res.ExitCode = &code
	}
	return b.conclude(res, call, l.Executable, st, runErr, out, killed)
}

// launch is a prepared run: what starts, its environment, and the file
// of its final message (Codex's -o), if any.
type launch struct {
	delegate.Launch
	env        []string
	outputFile string
}

// prepare builds the launch of call from the executable Plan resolved for
// its handle (what the approval showed; if it is gone, the start fails),
// and prepares the agent's private directories. A failure comes with its
// kind for the fallback decision.
func (b *backend) prepare(call delegate.Call) (launch, delegate.ErrorKind, error) {
	approved, _ := b.take(call.Handle)
	l, err := b.plan(call, approved)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return launch{}, delegate.ErrorUnavailable, errors.New(strings.TrimPrefix(err.Error(), ErrUnavailable.Error()+": "))
		}
		return launch{}, delegate.ErrorNone, err
	}
	if err := b.a.EnsureDirs(b.r.opts.Home); err != nil {
		return launch{}, delegate.ErrorNone, fmt.Errorf("cannot prepare the private home of %s: %v", b.a.Name, err)
	}
	ofile, _ := b.outputFile(call)
	if ofile != "" {
		if err := paths.EnsureDir(filepath.Dir(ofile)); err != nil {
			return launch{}, delegate.ErrorNone, fmt.Errorf("cannot prepare the private tmp directory of %s: %v", b.a.Name, err)
		}
		_ = os.Remove(ofile) // a stale file must not pass for this run's reply
	}
	env, err := b.env(call)
	if err != nil {
		return launch{}, delegate.ErrorNone, fmt.Errorf("cannot build the environment of %s: %v", b.a.Name, err)
	}
	return launch{Launch: l, env: env, outputFile: ofile}, delegate.ErrorNone, nil
}

// fail returns res as a failure of kind with the error msg.
func (b *backend) fail(res delegate.Result, kind delegate.ErrorKind, msg string) delegate.Result {
	res.Status, res.Kind = delegate.StatusFailed, kind
	res.Error = msg
	b.hint(&res)
	return res
}

// bookkeeping is what a run keeps on disk while it lasts: its delegation
// record (for `scv agents ps|kill` and the reconcile of orphans), and the
// marker that keeps `scv agents gc` off its conversation's transcript.
type bookkeeping struct {
	b    *backend
	call delegate.Call
	// cli is the CLI session known before the run: the one resumed, or
	// the one SCV chose for a CLI that takes it (Codex picks its own).
	cli      string
	owner    records.Process
	recorded bool
}

func (b *backend) bookkeeping(call delegate.Call) *bookkeeping {
	k := &bookkeeping{b: b, call: call, cli: call.ResumeCLISession}
	if k.cli == "" && b.a.ChoosesSession() {
		k.cli = call.NewCLISession
	}
	owner, err := records.Self()
	if err != nil {
		b.r.log.Warn("delegation record without owner identity", "handle", call.Handle, "err", err)
	}
	k.owner = owner
	return k
}

// start records the run once its process leader pid has started, and
// marks the conversation it continues or starts.
func (k *bookkeeping) start(pid int) {
	call, home, log := k.call, k.b.r.opts.Home, k.b.r.log
	proc, err := records.ProcessOf(pid)
	if err != nil {
		// The leader exited already; record the pid alone.
		proc = records.Process{PID: pid}
	}
	rec := records.Record{
		Handle: call.Handle, Agent: k.b.a.Name, Session: call.SessionID, Cwd: call.Dir,
		Depth: call.Depth + 1, AgentProcess: proc, Owner: k.owner, StartedUnix: time.Now().Unix(),
		Conversation: call.Conversation, Turn: call.Turn, Background: call.Background,
	}
	if err := records.Write(home, rec); err != nil {
		log.Warn("cannot write the delegation record", "handle", call.Handle, "err", err)
	} else {
		k.recorded = true
	}
	if k.cli != "" {
		if err := records.MarkConversation(home, k.cli, k.owner); err != nil {
			log.Warn("cannot mark the conversation", "handle", call.Handle, "err", err)
		}
	}
}

// finish removes the run's record and reports whether `scv agents kill`
// asked for the stop: it marks the record before it stops the run, so a
// run it stopped reads as cancelled, not as a failure.
func (k *bookkeeping) finish() (killed bool) {
	if !k.recorded {
		return false
	}
	home := k.b.r.opts.Home
	if rec, err := records.Read(home, k.call.Handle); err == nil && rec.KillRequestedUnix != 0 {
		killed = true
	}
	if err := records.Remove(home, k.call.Handle); err != nil {
		k.b.r.log.Warn("cannot remove the delegation record", "handle", k.call.Handle, "err", err)
	}
	return killed
}

// settleConversation leaves the conversation marker on the CLI session
// the run leaves to resume (cliSession), and on no other.
func (k *bookkeeping) settleConversation(cliSession string) {
	call, home, log := k.call, k.b.r.opts.Home, k.b.r.log
	switch {
	case k.cli != "" && (call.Conversation == "" || cliSession == ""):
		// A one-off run has no conversation to keep, and a first turn
		// that ended before the CLI reported its session left none to
		// resume.
		if err := records.UnmarkConversation(home, k.cli); err != nil {
			log.Warn("cannot unmark the conversation", "handle", call.Handle, "err", err)
		}
	case call.Conversation != "" && cliSession != "" && cliSession != k.cli:
		// Codex reports its thread id only in the stream.
		if err := records.MarkConversation(home, cliSession, k.owner); err != nil {
			log.Warn("cannot mark the conversation", "handle", call.Handle, "err", err)
		}
	}
}

// conclude sets the status of a run that has ended (exe is what ran) and,
// for a failure, its error, kind and hint.
func (b *backend) conclude(res delegate.Result, call delegate.Call, exe string, st procgroup.Status, runErr error, out output.Result, killed bool) delegate.Result {
	switch {
	case runErr != nil:
		res.Reply, res.CLISession = "", ""
		return b.fail(res, delegate.ErrorUnavailable, fmt.Sprintf("%s could not be started (%s): %v", b.a.Product, exe, runErr))
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
	res.Error, _ = output.Bound(b.failureMessage(st, out, res.StderrTail), maxError)
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

// failureMessage is the error of a failed run: what the CLI reported,
// else a plain-text run's closing output, else the end of stderr, else
// how it ended; with the exit code when the message does not say it.
func (b *backend) failureMessage(st procgroup.Status, out output.Result, stderrTail string) string {
	msg := out.Error
	if msg == "" {
		msg = out.ClosingOutput
	}
	if msg == "" {
		msg = textcut.Suffix(stderrTail, 512)
	}
	switch {
	case msg != "":
	case !st.Exited:
		msg = fmt.Sprintf("%s was killed by signal %s", b.a.Product, st.SignalName())
	default:
		msg = fmt.Sprintf("%s exited with code %d", b.a.Product, st.Code)
	}
	if !out.Failed && st.Exited && st.Code != 0 && !strings.Contains(msg, "exit") {
		msg = fmt.Sprintf("%s exited with code %d: %s", b.a.Product, st.Code, msg)
	}
	return msg
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
// cut on a character boundary. The agent wrote it, so it is opened as a
// state file: never through a link, never blocking on a FIFO.
func readBounded(path string, limit int) (string, bool, bool) {
	if limit <= 0 {
		limit = output.DefaultLimit
	}
	f, err := statefile.Open(filepath.Dir(path), filepath.Base(path), os.O_RDONLY, 0, statefile.NoLinks)
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
