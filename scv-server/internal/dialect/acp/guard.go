package acp

import (
	"context"
	"fmt"
	"runtime/debug"

	acpsdk "github.com/coder/acp-go-sdk"
)

// The methods of acpsdk.Agent. Each runs its handler through guard: the
// SDK runs handlers on goroutines of their own without recovering, so a
// panic (a bug) would end the process and every session in it; here it
// fails the one request with -32603, the server goes on, and the panic and
// its stack go to the log.

// guard runs f, turning a panic into an internal error.
func guard[T any](a *agent, method string, f func() (T, error)) (resp T, err error) {
	defer func() {
		if r := recover(); r != nil {
			a.log.Error("An ACP handler panicked; the request gets an internal error and the server goes on",
				"method", method, "panic", r, "stack", string(debug.Stack()))
			var zero T
			resp, err = zero, &acpsdk.RequestError{Code: -32603,
				Message: fmt.Sprintf("SCV failed unexpectedly while handling %s (%v); it goes on, and its log has the details", method, r)}
		}
	}()
	return f()
}

// Initialize implements acpsdk.Agent.
func (a *agent) Initialize(ctx context.Context, p acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	return guard(a, "Initialize", func() (acpsdk.InitializeResponse, error) { return a.initialize(ctx, p) })
}

// Authenticate implements acpsdk.Agent.
func (a *agent) Authenticate(ctx context.Context, p acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	return guard(a, "Authenticate", func() (acpsdk.AuthenticateResponse, error) { return a.authenticate(ctx, p) })
}

// NewSession implements acpsdk.Agent.
func (a *agent) NewSession(ctx context.Context, p acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	return guard(a, "NewSession", func() (acpsdk.NewSessionResponse, error) { return a.newSession(ctx, p) })
}

// LoadSession implements acpsdk.Agent.
func (a *agent) LoadSession(ctx context.Context, p acpsdk.LoadSessionRequest) (acpsdk.LoadSessionResponse, error) {
	return guard(a, "LoadSession", func() (acpsdk.LoadSessionResponse, error) { return a.loadSession(ctx, p) })
}

// ResumeSession implements acpsdk.Agent.
func (a *agent) ResumeSession(ctx context.Context, p acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	return guard(a, "ResumeSession", func() (acpsdk.ResumeSessionResponse, error) { return a.resumeSession(ctx, p) })
}

// ListSessions implements acpsdk.Agent.
func (a *agent) ListSessions(ctx context.Context, p acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	return guard(a, "ListSessions", func() (acpsdk.ListSessionsResponse, error) { return a.listSessions(ctx, p) })
}

// CloseSession implements acpsdk.Agent.
func (a *agent) CloseSession(ctx context.Context, p acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	return guard(a, "CloseSession", func() (acpsdk.CloseSessionResponse, error) { return a.closeSession(ctx, p) })
}

// SetSessionMode implements acpsdk.Agent.
func (a *agent) SetSessionMode(ctx context.Context, p acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	return guard(a, "SetSessionMode", func() (acpsdk.SetSessionModeResponse, error) { return a.setSessionMode(ctx, p) })
}

// SetSessionConfigOption implements acpsdk.Agent.
func (a *agent) SetSessionConfigOption(ctx context.Context, p acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	return guard(a, "SetSessionConfigOption", func() (acpsdk.SetSessionConfigOptionResponse, error) { return a.setSessionConfigOption(ctx, p) })
}

// Prompt implements acpsdk.Agent.
func (a *agent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	return guard(a, "Prompt", func() (acpsdk.PromptResponse, error) { return a.prompt(ctx, p) })
}

// Cancel implements acpsdk.Agent.
func (a *agent) Cancel(ctx context.Context, p acpsdk.CancelNotification) error {
	_, err := guard(a, "Cancel", func() (struct{}, error) { return struct{}{}, a.cancelNotification(ctx, p) })
	return err
}
