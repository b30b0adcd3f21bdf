package records

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"time"

	"github.com/scv-cli/scv/shared/proctag"
)

// StopGrace is how long a stopped run's processes get between SIGTERM and
// SIGKILL.
const StopGrace = 2 * time.Second

// StopResult says what stopping a run did.
type StopResult struct {
	// Group is set when the agent's process group was signalled: its
	// leader still ran with the recorded start time.
	Group bool
	// Killed counts the distinct tagged processes signalled; Survivors
	// those still alive at the end.
	Killed, Survivors int
}

// StopRun stops the processes of r's run: its agent's process group, when
// the recorded agent process still runs (same pid and start time, so a
// reused pid is never signalled), and every process tagged with r's handle,
// including those that left the group with setsid: TERM, then KILL after
// grace. It does not remove the record.
func StopRun(r Record, grace time.Duration) StopResult {
	var res StopResult
	pgid := 0
	if r.AgentProcess.Alive() {
		if st, ok := proctag.ReadStat(r.AgentProcess.PID); ok && st.PGRP == r.AgentProcess.PID {
			pgid = st.PGRP
		}
	}
	if pgid > 0 && syscall.Kill(-pgid, syscall.SIGTERM) == nil {
		res.Group = true
	}
	start := time.Now()
	res.Killed, res.Survivors = proctag.Stop(r.Handle, grace)
	// Members of the group that carry no tag (an agent that cleared its
	// environment) go with the group: the leader gets what is left of the
	// grace, then the group is KILLed. The leader is re-checked each time,
	// so a group whose leader has exited, and whose pid may have been
	// reused, is never signalled.
	if pgid > 0 {
		for r.AgentProcess.Alive() && time.Since(start) < grace {
			time.Sleep(leaderPoll)
		}
		if r.AgentProcess.Alive() {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	return res
}

// leaderPoll is how often StopRun checks whether a TERMed group leader
// that carries no tag has exited.
const leaderPoll = 20 * time.Millisecond

// Reconcile cleans up after SCV processes that are gone. A record whose
// owner no longer runs is an orphan: its run is stopped (StopRun) and the
// record removed. Conversation markers whose owner no longer runs are
// removed too. Corrupt records are logged and left for `scv agents kill`,
// never deleted silently. It returns how many orphan runs and trees it stopped; err
// joins what it could not do (corrupt files included).
func Reconcile(ctx context.Context, home string, logger *slog.Logger) (stopped int, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	recs, listErr := List(home)
	var errs []error
	if listErr != nil {
		errs = append(errs, listErr)
		var ce *CorruptError
		for _, e := range unjoin(listErr) {
			if errors.As(e, &ce) {
				logger.Warn("corrupt delegation record left in place", "path", ce.Path, "err", ce.Err, "fix", "scv agents kill "+ce.Handle)
			}
		}
	}
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return stopped, errors.Join(append(errs, err)...)
		}
		if r.Owner.Alive() {
			continue
		}
		res := StopRun(r, StopGrace)
		if res.Survivors > 0 {
			errs = append(errs, fmt.Errorf("orphaned delegation %s: %d tagged processes survived SIGKILL; its record is kept for the next pass", r.Handle, res.Survivors))
			logger.Warn("orphaned delegation not fully stopped", "handle", r.Handle, "survivors", res.Survivors)
			continue
		}
		if err := Remove(home, r.Handle); err != nil {
			errs = append(errs, err)
			continue
		}
		stopped++
		logger.Info("stopped orphaned delegation", "handle", r.Handle, "agent", r.Agent,
			"owner_pid", r.Owner.PID, "group", res.Group, "tagged_killed", res.Killed)
	}
	// The tagged process trees (bash commands) of owners that are gone.
	reaped, tErr := reapTrees(TreesDir(home), logger.Info)
	if tErr != nil {
		errs = append(errs, tErr)
	}
	stopped += reaped
	ms, mErr := Markers(home)
	if mErr != nil {
		errs = append(errs, mErr)
	}
	for _, m := range ms {
		if m.Owner.Alive() {
			continue
		}
		if err := UnmarkConversation(home, m.CLISession); err != nil {
			errs = append(errs, err)
			continue
		}
		logger.Debug("removed conversation marker of an exited owner", "cli_session", m.CLISession, "owner_pid", m.Owner.PID)
	}
	return stopped, errors.Join(errs...)
}

// unjoin flattens an errors.Join tree one level.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
