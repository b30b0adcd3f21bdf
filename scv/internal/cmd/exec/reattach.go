package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/client"
	"github.com/scv-cli/scv/shared/protocol"
	"golang.org/x/sync/errgroup"
)

// ErrTurnLostToRestart is wrapped by the error of a run whose turn was
// running when the daemon restarted: a restart cancels what still runs
// when it closes the connections (at once with --force, else after
// daemon.restart_timeout_seconds), and the next daemon does not run it
// again.
var ErrTurnLostToRestart = errors.New("the daemon restarted before the turn ended and cancelled it")

// reattach follows the run's session into a daemon that comes back after
// a planned restart (docs/daemon.md#through-a-planned-restart): it waits up to
// client.ReattachTimeout (Options.ReattachTimeout in tests) for the daemon
// to listen, attaches after the last seq the run printed (from the start
// of the ring on a new instance, whose numbering restarted) and returns
// the new server and its frames. It returns no server when there is
// nothing to follow (no session yet, an interrupted run, a stop or crash
// rather than a restart, no daemon in time): the caller then reports the
// closed connection; err is set when the run has another outcome.
func (r *run) reattach(ctx context.Context, g *errgroup.Group, gctx context.Context, home string, sigs <-chan os.Signal) (*server, <-chan frame, error) {
	if r.sessionID == "" || r.interrupted || !client.RestartUnderway(home) {
		return nil, nil, nil
	}
	fmt.Fprintf(r.opts.IO.ErrOut, "scv: the daemon is restarting; re-attaching to session %s\n", r.sessionID)
	rctx, cancel := context.WithTimeout(ctx, durationOr(r.opts.ReattachTimeout, client.ReattachTimeout))
	defer cancel()
	// Ctrl-C while waiting ends the wait; the watcher ends with it.
	stop, done := make(chan struct{}), make(chan struct{})
	interrupted := false
	go func() {
		defer close(done)
		select {
		case <-sigs:
			interrupted = true
			cancel()
		case <-stop:
		}
	}()
	dc, att, err := client.Reattach(rctx, home, ClientName, r.sessionID, client.Position{Instance: r.instance, Seq: r.lastSeq}, 100*time.Millisecond)
	close(stop)
	<-done
	if interrupted {
		if dc != nil {
			_ = dc.Close()
		}
		return nil, nil, &cli.InterruptedError{Msg: "interrupted while re-attaching to the daemon"}
	}
	if err != nil {
		fmt.Fprintf(r.opts.IO.ErrOut, "scv: could not re-attach (waited up to %s): %v\n", durationOr(r.opts.ReattachTimeout, client.ReattachTimeout), err)
		return nil, nil, nil
	}
	restarted := r.instance != "" && dc.Instance != r.instance
	r.instance = dc.Instance
	if restarted {
		r.lastSeq = 0
		if done, lostErr := r.lostToRestart(att); done {
			_ = dc.Close()
			r.view.endLine()
			return nil, nil, lostErr
		}
	}
	if r.opts.JSON {
		if b, err := protocol.EncodeEvent(att); err == nil {
			if _, err := r.opts.IO.Out.Write(append(b, '\n')); err != nil {
				_ = dc.Close()
				return nil, nil, err
			}
		}
	}
	uc := dc.Socket()
	return daemonServer(uc, home, dc.Instance), r.read(g, gctx, dc.Conn), nil
}

// lostToRestart decides, on a daemon that restarted, whether the run's
// turn is gone with the old one: a turn that was running was cancelled;
// one that was queued survives (restart.json keeps queues) unless it is
// neither in the queue nor among the replayed events. done reports that
// the run ends, with err its outcome.
func (r *run) lostToRestart(att *protocol.SessionAttached) (done bool, err error) {
	if r.waitingJobs {
		// The restart stopped the background jobs with their session's
		// turns; their reports will not come.
		fmt.Fprintf(r.opts.IO.ErrOut, "scv: warning: the daemon restarted before %d background job(s) reported; their reports are lost\n", len(r.jobs))
		return true, r.userOutcome
	}
	if r.turnID != "" {
		return true, fmt.Errorf("%w (scv restart --force, or the turn outlasted daemon.restart_timeout_seconds); session %s is open in the daemon with the prompt in its history: `scv exec --continue` goes on from there", ErrTurnLostToRestart, r.sessionID)
	}
	queued := r.queuedID != "" && slices.ContainsFunc(att.Queue, func(e protocol.QueueEntry) bool { return e.QueueID == r.queuedID })
	if queued {
		return false, nil // it runs when its turn comes
	}
	if att.Replayed > 0 && !att.ReplayTruncated {
		// Its turn.started, if it ran, is among the replayed events; the
		// last of them decides (replayDone).
		r.replayEnd = att.LastSeq
		return false, nil
	}
	return true, r.promptLost()
}

// replayDone checks, once the replay after a restart has been applied,
// that the run's turn was among it; a prompt neither queued nor started
// by then is gone (a turn.start the old daemon never read).
func (r *run) replayDone() error {
	if r.replayEnd == 0 || r.lastSeq < r.replayEnd {
		return nil
	}
	r.replayEnd = 0
	if r.turnID == "" && !r.waitingJobs {
		return r.promptLost()
	}
	return nil
}

func (r *run) promptLost() error {
	return fmt.Errorf("%w: the prompt was neither running nor queued in session %s after the restart (`scv exec --continue` goes on from the session)", ErrTurnLostToRestart, r.sessionID)
}
