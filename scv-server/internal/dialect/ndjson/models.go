package ndjson

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/protocol"
)

// maxListedModels bounds session.model's list: a provider may list
// hundreds, and the answer must stay well within a server frame.
const maxListedModels = 500

// sessionModel answers session.models and session.set_model with s's
// model now and the models it may switch to.
func (c *conn) sessionModel(requestID string, s *session.Session, models []string) error {
	ctxMax := s.ContextMaxTokens()
	list := make([]protocol.ModelInfo, 0, len(models))
	for _, id := range models {
		list = append(list, protocol.ModelInfo{ID: id, ContextMaxTokens: ctxMax})
	}
	return c.send(&protocol.SessionModel{RequestID: requestID, SessionID: s.ID(), Model: s.Model(), ContextMaxTokens: ctxMax, Models: list})
}

// models lists what s may switch to: its configured model first, then
// the provider's list (when it has one) without repeats, bounded.
func (c *conn) models(ctx context.Context, s *session.Session) []string {
	out := []string{s.ConfiguredModel()}
	if cur := s.Model(); cur != out[0] {
		out = append(out, cur)
	}
	if c.opts.Models == nil {
		return out
	}
	for _, id := range c.opts.Models(ctx) {
		if len(out) >= maxListedModels {
			break
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// setModel switches s to model when it is one s may use.
func (c *conn) setModel(ctx context.Context, m *protocol.SetModel, s *session.Session) error {
	model := strings.TrimSpace(m.Model)
	if model == "" {
		return &session.Error{Code: protocol.ErrInvalidRequest, Message: "session.set_model needs a model: one of those session.models lists"}
	}
	models := c.models(ctx, s)
	if !slices.Contains(models, model) {
		shown := models
		if len(shown) > 5 {
			shown = shown[:5]
		}
		return &session.Error{Code: protocol.ErrInvalidRequest, Message: fmt.Sprintf("unknown model %q: this session may use %s (session.models lists them all)", model, strings.Join(shown, ", "))}
	}
	s.SetModel(model)
	return c.sessionModel(m.RequestID, s, models)
}
