package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, OK},
		{"plain", errors.New("boom"), Failure},
		{"usage", UsageErrorf("bad flag"), Usage},
		{"wrapped usage", fmt.Errorf("exec: %w", UsageErrorf("bad flag")), Usage},
		{"interrupted", &InterruptedError{Msg: "turn cancelled"}, Interrupted},
		{"reported keeps code", Reported(&InterruptedError{Msg: "x"}), Interrupted},
		{"reported plain", Reported(errors.New("x")), Failure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := For(tt.err); got != tt.want {
				t.Errorf("For(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestReported(t *testing.T) {
	t.Parallel()
	if Reported(nil) != nil {
		t.Error("Reported(nil) != nil")
	}
	err := Reported(errors.New("x"))
	if !IsReported(err) || !IsReported(fmt.Errorf("w: %w", err)) {
		t.Error("IsReported lost the mark")
	}
	if IsReported(errors.New("x")) {
		t.Error("IsReported of an unmarked error")
	}
}
