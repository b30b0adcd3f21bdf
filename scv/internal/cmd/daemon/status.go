package daemon

import (
	"fmt"
	"io"
	"time"

	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/scv-cli/scv/shared/protocol"
)

// statusJSON is `scv daemon status --json`.
type statusJSON struct {
	Running        bool                   `json:"running"`
	Pid            int                    `json:"pid"`
	Version        string                 `json:"version"`
	StartedAt      string                 `json:"started_at"`
	Socket         string                 `json:"socket"`
	Clients        int                    `json:"clients"`
	Sessions       []protocol.LiveSession `json:"sessions"`
	OrphansStopped int64                  `json:"orphans_stopped"`
	Draining       bool                   `json:"draining,omitempty"`
	// Delegations are the delegated runs of this SCV_HOME that `scv agents
	// ps` lists (orphans left out: OrphansStopped counts those reconcile
	// stopped, `scv agents ps --all` lists those still waiting).
	Delegations []delegation `json:"delegations"`
}

// delegation is one delegated run in the status.
type delegation struct {
	Handle       string `json:"handle"`
	Agent        string `json:"agent"`
	Session      string `json:"session,omitempty"`
	Conversation string `json:"conversation,omitempty"`
	Turn         int    `json:"turn,omitempty"`
	// State is running, idle or background, as `scv agents ps` shows it.
	State       string `json:"state"`
	Background  bool   `json:"background,omitempty"`
	StartedUnix int64  `json:"started_unix"`
	Cwd         string `json:"cwd"`
}

// delegations reads the delegation records of home the way `scv agents
// ps` does: every live run of any SCV process there, orphans left out. A
// record it cannot read is a warning, not a failed status.
func delegations(home string, warn io.Writer) []delegation {
	recs, err := records.List(home)
	if err != nil {
		fmt.Fprintf(warn, "warning: %v\n", err)
	}
	out := []delegation{}
	for _, r := range recs {
		st := r.State()
		if st == records.StateOrphan {
			continue
		}
		out = append(out, delegation{Handle: r.Handle, Agent: r.Agent, Session: r.Session, Conversation: r.Conversation,
			Turn: r.Turn, State: st, Background: r.Background, StartedUnix: r.StartedUnix, Cwd: r.Cwd})
	}
	return out
}

// printStatus writes the text status. The asking connection is one of the
// clients; it is left out of the count.
func printStatus(w io.Writer, st *protocol.DaemonStatusReported, dels []delegation, now time.Time) {
	uptime := "unknown"
	if t, err := time.Parse(time.RFC3339, st.StartedAt); err == nil {
		uptime = now.Sub(t).Truncate(time.Second).String()
	}
	fmt.Fprintf(w, "daemon    running, pid %d, version %s\n", st.Pid, st.Version)
	fmt.Fprintf(w, "uptime    %s (since %s)\n", uptime, st.StartedAt)
	fmt.Fprintf(w, "socket    %s\n", st.Socket)
	fmt.Fprintf(w, "clients   %d\n", max(st.Clients-1, 0))
	fmt.Fprintf(w, "orphans   %d stopped\n", st.OrphansStopped)
	if st.Draining {
		fmt.Fprintln(w, "restart   waiting for running turns to finish")
	}
	fmt.Fprintf(w, "sessions  %d\n", len(st.Sessions))
	for _, s := range st.Sessions {
		state := "idle"
		if s.TurnID != "" {
			state = "turn " + s.TurnID
		}
		extra := ""
		if s.Queued > 0 {
			extra += fmt.Sprintf(", %d queued", s.Queued)
			if s.Paused {
				extra += " (paused)"
			}
		}
		if s.PendingApprovals > 0 {
			extra += fmt.Sprintf(", %d awaiting approval", s.PendingApprovals)
		}
		fmt.Fprintf(w, "  %s  %s  %d client(s), %s%s\n", s.SessionID, s.Cwd, s.Clients, state, extra)
	}
	counts := map[string]int{}
	for _, d := range dels {
		counts[d.State]++
	}
	fmt.Fprintf(w, "agents    %d running, %d idle", counts[records.StateRunning], counts[records.StateIdle])
	if n := counts[records.StateBackground]; n > 0 {
		fmt.Fprintf(w, ", %d background", n)
	}
	fmt.Fprintln(w)
	for _, d := range dels {
		conv := ""
		if d.Conversation != "" {
			conv = fmt.Sprintf("  %s turn %d", d.Conversation, d.Turn)
		}
		state := d.State
		if d.Background {
			state += " (background job)"
		}
		fmt.Fprintf(w, "  %s  %s  session %s%s  %s, %s  %s\n", d.Handle, d.Agent, orDash(d.Session), conv, state,
			now.Sub(time.Unix(d.StartedUnix, 0)).Truncate(time.Second), d.Cwd)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
