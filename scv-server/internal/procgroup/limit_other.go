//go:build !linux

package procgroup

// ProcessLimit bounds the processes of the runs sharing it (Linux only;
// elsewhere Run is unsupported).
type ProcessLimit struct{ max int }

// NewProcessLimit returns a limit of n processes (at least 1).
func NewProcessLimit(n int) *ProcessLimit { return &ProcessLimit{max: max(n, 1)} }

// Max returns the limit.
func (l *ProcessLimit) Max() int { return l.max }
