package daemon

import (
	"fmt"
	"io"
	"time"

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
}

// printStatus writes the text status. The asking connection is one of the
// clients; it is left out of the count.
func printStatus(w io.Writer, st *protocol.DaemonStatusReported, now time.Time) {
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
}
