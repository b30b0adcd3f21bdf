// Package delegation holds the tracking records of delegated agent runs:
// $SCV_HOME/state/delegations/<handle>.json, one per running delegation,
// written atomically with mode 0600 in a 0700 directory, and the
// conversation markers in $SCV_HOME/state/conversations. The server writes
// them; `scv agents ps|kill|gc` and the orphan reconcile read them. A record
// names both the agent process and the SCV process that owns it by PID and
// start time, so a reused PID never matches.
package records

// Process identifies one process across PID reuse.
type Process struct {
	PID int `json:"pid"`
	// StartTime is the process start time in clock ticks since boot
	// (field 22 of /proc/<pid>/stat).
	StartTime uint64 `json:"start_time"`
}

// Record is one running delegation.
type Record struct {
	// Handle is the delegation's handle, unique in the instance, such as
	// "codex-3f9a2c"; it is also the run's process tag.
	Handle string `json:"handle"`
	Agent  string `json:"agent"`
	// Session is the parent SCV session's id.
	Session string `json:"session"`
	Cwd     string `json:"cwd"`
	Depth   int    `json:"depth"`
	// AgentProcess is the agent's process (the group leader); Owner the
	// SCV process running it.
	AgentProcess Process `json:"agent_process"`
	Owner        Process `json:"owner"`
	// StartedUnix is when the run started.
	StartedUnix int64 `json:"started_unix"`
	// Conversation and Turn are set for a run serving a conversation
	// ("codex-2", turn 3).
	Conversation string `json:"conversation,omitempty"`
	Turn         int    `json:"turn,omitempty"`
	// IdleSinceUnix is set while a live agent (nested SCV, ACP) waits
	// between turns.
	IdleSinceUnix int64 `json:"idle_since_unix,omitempty"`
	// BackgroundJobs counts a nested SCV's own unfinished jobs.
	BackgroundJobs int `json:"background_jobs,omitempty"`
	// Background is set for a background job's run.
	Background bool `json:"background,omitempty"`
	// KillRequestedUnix is set by `scv agents kill` on the record of a run
	// whose owner still runs, just before it stops the run's processes, so
	// the owner can report the run as cancelled; the owner removes the
	// record as for any run that ends.
	KillRequestedUnix int64 `json:"kill_requested_unix,omitempty"`
}

// States of a run as `scv agents ps` and `scv status` show it.
const (
	StateRunning    = "running"
	StateIdle       = "idle"
	StateBackground = "background"
	StateOrphan     = "orphan"
)

// State is how a run is shown: orphan when its owner is gone, background
// while a nested SCV's own jobs run between turns, idle while a live agent
// waits between turns, running otherwise. `scv agents ps` and `scv status`
// both use it, so they never disagree.
func (r Record) State() string {
	switch {
	case !r.Owner.Alive():
		return StateOrphan
	case r.IdleSinceUnix > 0 && r.BackgroundJobs > 0:
		return StateBackground
	case r.IdleSinceUnix > 0:
		return StateIdle
	}
	return StateRunning
}
