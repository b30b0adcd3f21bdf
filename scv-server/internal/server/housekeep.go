package server

import (
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/scv-cli/scv/shared/atomicfile"
)

// Temporary files of interrupted writes are swept at most once an hour
// per state directory: the walk visits every file of every stored session
// (hundreds of directories for a real user), and each `scv exec` starts a
// server whose Housekeep runs beside its first model request and is
// awaited before it exits (issue 23). A sweep only removes files an hour
// old, so sweeping more often finds next to nothing.
const (
	tempSweepEvery = time.Hour
	// tempSweepStamp, in the state directory, is written after a sweep;
	// its modification time is that of the last sweep.
	tempSweepStamp = ".temp-sweep"
)

// sweepTempsIfDue sweeps the leftover temporary files under stateDir
// when the last sweep is over tempSweepEvery ago (or in the future, as
// after a clock change), and records the sweep.
func sweepTempsIfDue(stateDir string, log *slog.Logger) {
	stamp := filepath.Join(stateDir, tempSweepStamp)
	if fi, err := os.Lstat(stamp); err == nil && fi.Mode().IsRegular() {
		if age := time.Since(fi.ModTime()); age >= 0 && age < tempSweepEvery {
			return
		}
	}
	// Temporary files of writes a crash interrupted; an hour old, so a
	// write of another live process is never touched.
	if n, err := atomicfile.SweepTemps(stateDir, time.Hour); err != nil {
		log.Warn("Could not sweep every leftover temporary file", "removed", n, "err", err)
		return // try again at the next start
	} else if n > 0 {
		log.Info("Removed leftover temporary files", "removed", n)
	}
	if _, err := os.Stat(stateDir); err != nil {
		return // nothing stored yet: nothing to record the sweep in
	}
	// A rename replaces a link there rather than following it.
	if err := atomicfile.WriteFileNoSync(stamp, nil, 0o600); err != nil {
		log.Debug("Could not record the sweep of temporary files", "err", err)
	}
}
