package server

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scv-cli/scv/shared/atomicfile"
)

// oldTemp leaves a temporary file of an interrupted write, two hours old,
// in dir.
func oldTemp(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, atomicfile.TempPrefix+name)
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	return p
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// TestTempSweepAtMostHourly: a start sweeps when the last sweep is an hour
// old or more (or never was), and skips the walk otherwise.
func TestTempSweepAtMostHourly(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	first := oldTemp(t, state, "a")
	sweepTempsIfDue(state, log)
	if exists(first) {
		t.Fatal("the first sweep left an hour-old temporary file")
	}
	stamp := filepath.Join(state, tempSweepStamp)
	if !exists(stamp) {
		t.Fatal("the sweep was not recorded")
	}
	second := oldTemp(t, state, "b")
	sweepTempsIfDue(state, log)
	if !exists(second) {
		t.Fatal("a start within the hour swept again")
	}
	old := time.Now().Add(-tempSweepEvery - time.Minute)
	if err := os.Chtimes(stamp, old, old); err != nil {
		t.Fatal(err)
	}
	sweepTempsIfDue(state, log)
	if exists(second) {
		t.Fatal("a start over an hour after the last sweep did not sweep")
	}
	future := time.Now().Add(24 * time.Hour) // a clock set back since
	if err := os.Chtimes(stamp, future, future); err != nil {
		t.Fatal(err)
	}
	third := oldTemp(t, state, "c")
	sweepTempsIfDue(state, log)
	if exists(third) {
		t.Fatal("a sweep stamped in the future stopped sweeping")
	}
}

// BenchmarkHousekeepSweep is the temporary-file part of a server's
// Housekeep with 300 stored sessions (a log, a summary and a spill
// directory of three files each): a due sweep walks them all, a start
// within the hour only reads the stamp.
func BenchmarkHousekeepSweep(b *testing.B) {
	state := b.TempDir()
	for i := range 300 {
		spill := filepath.Join(state, "sessions", fmt.Sprintf("s%03d", i), "spill")
		if err := os.MkdirAll(spill, 0o700); err != nil {
			b.Fatal(err)
		}
		for _, f := range []string{"../log.jsonl", "../summary.json", "1", "2", "3"} {
			if err := os.WriteFile(filepath.Join(spill, f), []byte("x"), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	stamp := filepath.Join(state, tempSweepStamp)
	for _, mode := range []string{"due", "within-the-hour"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if mode == "due" {
					_ = os.Remove(stamp)
				}
				sweepTempsIfDue(state, log)
			}
		})
	}
}
