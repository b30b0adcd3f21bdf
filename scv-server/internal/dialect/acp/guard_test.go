package acp

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
)

func TestGuardTurnsAPanicIntoAnInternalError(t *testing.T) {
	t.Parallel()
	a := &agent{log: slog.New(slog.DiscardHandler)}
	_, err := guard(a, "Prompt", func() (acpsdk.PromptResponse, error) { panic("boom") })
	var re *acpsdk.RequestError
	if !errors.As(err, &re) || re.Code != -32603 || !strings.Contains(re.Message, "Prompt") || !strings.Contains(re.Message, "boom") {
		t.Fatalf("err = %v", err)
	}
	r, err := guard(a, "Prompt", func() (acpsdk.PromptResponse, error) { return acpsdk.PromptResponse{StopReason: "end_turn"}, nil })
	if err != nil || r.StopReason != "end_turn" {
		t.Fatalf("without a panic: %+v, %v", r, err)
	}
}
