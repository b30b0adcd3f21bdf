// Package reconcile cleans up after SCV processes that are gone: it stops
// the delegated runs whose owning SCV process no longer runs (orphans, such
// as those of an `scv exec` server that was SIGKILLed), removes their
// records, and removes conversation markers of exited owners. A
// `scv server --stdio` runs it once at start; the daemon will run it at
// start and every 60 seconds.
package reconcile

import (
	"context"
	"log/slog"
	"time"

	"github.com/scv-cli/scv/shared/delegate/records"
)

// Run reconciles the delegation records of the instance directory home
// once and logs what it did. It never fails the caller: a record it
// cannot clean up is logged and left for the next pass or for
// `scv agents kill`. It returns how many orphaned runs it stopped.
func Run(ctx context.Context, home string, log *slog.Logger) int {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "reconcile")
	start := time.Now()
	stopped, err := records.Reconcile(ctx, home, log)
	if err != nil {
		log.Warn("delegation reconcile incomplete", "stopped", stopped, "err", err)
	}
	if stopped > 0 {
		log.Info("stopped orphaned delegations", "stopped", stopped, "took", time.Since(start))
	} else {
		log.Debug("no orphaned delegations", "took", time.Since(start))
	}
	return stopped
}
