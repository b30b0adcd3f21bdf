package loop

import (
	"context"
	"sync"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/tools"
)

// DefaultWarmAfter is how long a model request goes unanswered before the
// sessions' turns warm their tools up: longer than a local or scripted
// model takes to answer (so a turn that needs no warm-up pays nothing for
// one), far shorter than a hosted model's first token.
const DefaultWarmAfter = 20 * time.Millisecond

// warmups are a turn's warm-ups (tools.Warmer): at most one per tool,
// started while a call waits for approval or while a slow model request
// is outstanding, and cancelled and joined when the turn ends. Each runs
// in a goroutine of its own with the turn's context; the zero turn (a nil
// *warmups, outside Run) starts none.
type warmups struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	started map[string]bool // guarded by mu
	stopped bool            // guarded by mu: the turn ended; nothing starts
}

func newWarmups(ctx context.Context) *warmups {
	ctx, cancel := context.WithCancel(ctx)
	return &warmups{ctx: ctx, cancel: cancel, started: map[string]bool{}}
}

// start warms up the named tools of reg that are Warmers and were not
// warmed in this turn yet.
func (w *warmups) start(reg *tools.Registry, env tools.Env, names ...string) {
	if w == nil || reg == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	for _, name := range names {
		t, ok := reg.Lookup(name)
		tw, warms := t.(tools.Warmer)
		if !ok || !warms || w.started[name] {
			continue
		}
		w.started[name] = true
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			tw.Warm(w.ctx, env)
		}()
	}
}

// after starts the named tools' warm-ups once d has passed, unless the
// returned stop is called first (the model answered). It does nothing for
// a d of 0 or no names.
func (w *warmups) after(d time.Duration, reg *tools.Registry, env tools.Env, names []string) (stop func()) {
	if w == nil || d <= 0 || len(names) == 0 {
		return func() {}
	}
	w.wg.Add(1) // the timer's own, so stop joins a callback in progress
	t := time.AfterFunc(d, func() {
		defer w.wg.Done()
		w.start(reg, env, names...)
	})
	return func() {
		if t.Stop() {
			w.wg.Done()
		}
	}
}

// stop cancels the turn's warm-ups and waits for them; none starts after.
func (w *warmups) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.cancel()
	w.wg.Wait()
}

// warmCandidates are the tools offered to the model that warm up and were
// not warmed in this turn yet; nil when no warm-up may start.
func (l *loop) warmCandidates() []string {
	if l.warm == nil || l.cfg.WarmAfter <= 0 || l.cfg.Tools == nil {
		return nil
	}
	l.warm.mu.Lock()
	defer l.warm.mu.Unlock()
	var out []string
	for _, s := range l.specs {
		if t, ok := l.cfg.Tools.Lookup(s.Name); ok && !l.warm.started[s.Name] {
			if _, warms := t.(tools.Warmer); warms {
				out = append(out, s.Name)
			}
		}
	}
	return out
}
