// Package status is the one-line status bar: model, workspace, context
// use, turn state with elapsed time, queued count, and warnings.
package status

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-tui/internal/ui/styles"
	"github.com/scv-cli/scv/scv-tui/internal/ui/wrap"
)

// Bar is what the status bar shows. The app fills it; View is a pure
// function of it.
type Bar struct {
	Model         string
	Demo          bool
	Workspace     string
	ContextTokens int64 // estimated tokens in use; 0 = unknown
	ContextMax    int64
	Turn          string        // "idle", "running", "waiting for approval", "cancelling", "starting", ...
	Elapsed       time.Duration // of the running turn
	Queued        int
	Paused        bool
	Warning       string // a seq gap or duplicate, a server problem
	// Stopped says the server is not running (the turn segment says how
	// to restart it).
	Stopped bool
}

// View renders the bar at exactly width cells. Segments are dropped from
// the least important when the width is small; the warning stays.
func (b Bar) View(st styles.Styles, width int) string {
	var segs []string
	turn := b.Turn
	if turn == "" {
		turn = "idle"
	}
	if b.Elapsed > 0 {
		turn += " " + formatElapsed(b.Elapsed)
	}
	segs = append(segs, turn)
	if b.Queued > 0 || b.Paused {
		q := fmt.Sprintf("%d queued", b.Queued)
		if b.Paused {
			q += " (paused)"
		}
		segs = append(segs, q)
	}
	if b.ContextMax > 0 {
		pct := b.ContextTokens * 100 / b.ContextMax
		segs = append(segs, fmt.Sprintf("ctx %s/%s %d%%", Tokens(b.ContextTokens), Tokens(b.ContextMax), pct))
	}
	// No model yet: the turn segment already says what the TUI waits for
	// (starting the server, connecting).
	model := b.Model
	if b.Demo && model != "" {
		model += " (demo)"
	}
	if model != "" {
		segs = append(segs, model)
	}
	if b.Workspace != "" {
		segs = append(segs, filepath.Base(b.Workspace))
	}
	warn := ""
	if b.Warning != "" {
		warn = "⚠ " + wrap.OneLine(b.Warning)
	}
	// Drop trailing (least important) segments until everything fits.
	for len(segs) > 1 && wrap.Width(" "+strings.Join(segs, " · ")+" "+warn) > width {
		segs = segs[:len(segs)-1]
	}
	text := " " + strings.Join(segs, " · ")
	if warn != "" {
		room := width - wrap.Width(text) - 3
		if room < 10 {
			text = ""
			room = width - 2
		}
		text += " " + st.StatusWarn.Render(wrap.Truncate(warn, room))
	}
	text = wrap.Truncate(text, width)
	return st.Status.Render(wrap.Pad(text, width))
}

func formatElapsed(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s < 60 {
		return fmt.Sprintf("%ds", s)
	}
	if s < 3600 {
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
}

// Tokens writes n tokens the way people read them: 950, 12.4k, 128k,
// 1.2M (the status bar's context, /cost).
func Tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%dk", n/1000)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprint(n)
}
