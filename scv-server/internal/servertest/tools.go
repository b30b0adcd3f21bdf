package servertest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/server"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/scv-server/internal/tools"
	"github.com/scv-cli/scv/shared/protocol"
)

// Waiter is a test tool, "wait": it reports progress lines (as fast as it
// can, for Lines lines) and then waits until its call is cancelled or its
// "ms" argument passes. It stands in for a long-running tool.
type Waiter struct {
	Lines int
}

// Spec implements tools.Tool.
func (w *Waiter) Spec() tools.Spec {
	return tools.Spec{Name: "wait", Description: "Waits.", Schema: json.RawMessage(
		`{"type":"object","properties":{"ms":{"type":"integer","minimum":0}},"additionalProperties":false}`)}
}

// Prepare implements tools.Tool.
func (w *Waiter) Prepare(env tools.Env, raw json.RawMessage) (*tools.Plan, error) {
	var a struct {
		MS *int `json:"ms"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	return &tools.Plan{Risk: protocol.RiskReadOnly, Summary: "Wait", Run: func(ctx context.Context) (tools.Result, error) {
		for i := range w.Lines {
			if env.Progress != nil {
				env.Progress(fmt.Sprintf("line %d", i))
			}
		}
		if a.MS == nil {
			<-ctx.Done()
			return tools.Result{}, ctx.Err()
		}
		select {
		case <-time.After(time.Duration(*a.MS) * time.Millisecond):
			return tools.Result{Success: true, Output: "waited"}, nil
		case <-ctx.Done():
			return tools.Result{}, ctx.Err()
		}
	}}, nil
}

// WithTools returns a ToolsFunc of the built-in tools plus extra.
func WithTools(extra ...tools.Tool) session.ToolsFunc {
	return func(ws string) (*tools.Registry, error) {
		reg, err := server.Tools(ws)
		if err != nil {
			return nil, err
		}
		for _, t := range extra {
			if err := reg.Register(t); err != nil {
				return nil, err
			}
		}
		return reg, nil
	}
}
