package sessionstore

import (
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/google/uuid"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

// TestWriteFailureStopsTheLog writes to a device that is always full, the
// way a full disk fails a write.
func TestWriteFailureStopsTheLog(t *testing.T) {
	t.Parallel()
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full on this system")
	}
	st := New(t.TempDir())
	l, err := st.Create(Meta{ID: uuid.NewString(), Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.TurnStarted("t", "r", nil, "p"); err != nil {
		t.Fatal(err)
	}
	good := l.f
	l.f = full
	err = l.Message("t", provider.Message{Role: provider.RoleUser, Content: "p"}, false)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), l.path) {
		t.Fatalf("write to a full disk = %v", err)
	}
	if err := l.TurnEnded("t", End{Outcome: OutcomeCompleted}); !errors.Is(err, ErrStopped) {
		t.Fatalf("write after a failure = %v, want ErrStopped", err)
	}
	l.f = good
	_ = full.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// What was written before the failure is still a valid log.
	s, err := st.Load(l.id)
	if err != nil || s.Turns != 1 || s.Interrupted != "t" {
		t.Fatalf("Load = %+v, %v", s, err)
	}
}
