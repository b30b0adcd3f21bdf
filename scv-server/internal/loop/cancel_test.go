package loop

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
)

// finishingTool writes its file, then the turn is cancelled before Run
// returns (the user pressed cancel as the rename landed).
type finishingTool struct {
	path   string
	cancel context.CancelFunc
}

func (f *finishingTool) Spec() tools.Spec {
	return tools.Spec{Name: "put", Schema: json.RawMessage(`{"type":"object"}`)}
}

func (f *finishingTool) Prepare(tools.Env, json.RawMessage) (*tools.Plan, error) {
	return &tools.Plan{Risk: protocol.RiskFilesystem, Summary: "put", Run: func(context.Context) (tools.Result, error) {
		if err := os.WriteFile(f.path, []byte("new"), 0o600); err != nil {
			return tools.Result{}, err
		}
		f.cancel()
		return tools.Result{Success: true, Output: "wrote " + f.path}, nil
	}}, nil
}

// TestResultAfterCancelIsReported: a call that completed (its file is on
// disk) while the turn was being cancelled is reported as done, in
// tool.completed and in the history, and the turn still stops (issue 14,
// item 18).
func TestResultAfterCancelIsReported(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ft := &finishingTool{path: filepath.Join(t.TempDir(), "f"), cancel: cancel}
	reg := tools.NewRegistry()
	if err := reg.Register(ft); err != nil {
		t.Fatal(err)
	}
	sink := &approvingSink{approvals: approval.NewPending()}
	l := newLoop(Config{Policy: approval.Auto, Tools: reg, Approvals: sink.approvals}, sink)
	res, err := l.runCall(ctx, provider.ToolCall{ID: "c1", Name: "put", Arguments: "{}"})
	if err != nil {
		t.Fatalf("runCall: %v; want the completed result", err)
	}
	if !res.Success {
		t.Fatalf("result %+v; want success", res)
	}
	if _, err := os.Stat(ft.path); err != nil {
		t.Fatal(err)
	}
	var done *protocol.ToolCompleted
	for _, ev := range sink.events {
		if ev, ok := ev.(*protocol.ToolCompleted); ok {
			done = ev
		}
	}
	if done == nil || !done.Success || done.Output != "wrote "+ft.path {
		t.Fatalf("tool.completed %+v; want the write reported as done", done)
	}
}
