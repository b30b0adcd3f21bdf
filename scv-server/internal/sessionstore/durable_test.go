package sessionstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
)

// TestNothingDurableBeforeTheFirstTurnBoundary: Create and TurnStarted
// leave the fsyncs to the turn's end (issue 23), which also syncs the
// log's directory (started by Create) once; the summary appears with the
// first turn.
func TestNothingDurableBeforeTheFirstTurnBoundary(t *testing.T) {
	t.Parallel()
	st, l := newLogIn(t)
	defer l.Close()
	sum := filepath.Join(st.SessionDir(l.id), SummaryName)
	if _, err := os.Stat(sum); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a session without a turn has a summary: %v", err)
	}
	if l.dirSynced == nil {
		t.Fatal("Create waited for the fsync of the log's directory")
	}
	if err := l.TurnStarted("t", "r", nil, "first prompt"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sum); err != nil {
		t.Fatalf("no summary after the first turn started: %v", err)
	}
	if l.dirSynced == nil {
		t.Fatal("TurnStarted waited for the fsync of the log's directory")
	}
	if err := l.TurnEnded("t", End{Outcome: OutcomeCompleted}); err != nil {
		t.Fatal(err)
	}
	if l.dirSynced != nil {
		t.Fatal("the turn's end did not wait for the fsync of the log's directory")
	}
	got, err := st.List("/w", 0)
	if err != nil || len(got) != 1 || got[0].Turns != 1 || got[0].Title != "first prompt" {
		t.Fatalf("List = %+v, %v; want the session with 1 turn", got, err)
	}
}

// TestListWithoutASummary: a summary lost to a power loss (it is written
// without fsync) lists the session from its log.
func TestListWithoutASummary(t *testing.T) {
	t.Parallel()
	st, l := newLogIn(t)
	for _, step := range []func() error{
		func() error { return l.TurnStarted("t", "r", nil, "p") },
		func() error { return l.TurnEnded("t", End{Outcome: OutcomeCompleted}) },
		l.Close,
		func() error { return os.WriteFile(filepath.Join(st.SessionDir(l.id), SummaryName), nil, FileMode) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := st.List("/w", 0)
	if err != nil || len(got) != 1 || got[0].Turns != 1 {
		t.Fatalf("List = %+v, %v; want the session with 1 turn from its log", got, err)
	}
}

// newLogIn creates a store in a temporary directory and a session of
// workspace /w in it.
func newLogIn(t *testing.T) (*Store, *Log) {
	t.Helper()
	st := New(t.TempDir())
	l, err := st.Create(Meta{ID: uuid.NewString(), Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	return st, l
}
