package ndjson

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/scv-cli/scv/scv-server/internal/provider"
	"github.com/scv-cli/scv/scv-server/internal/session"
	"github.com/scv-cli/scv/shared/protocol"
)

// maxListedModels bounds session.model's list: a provider may list
// hundreds, and the answer must stay well within a server frame.
const maxListedModels = 500

// Catalog is what the server knows of every configured provider's
// models (the runtime's).
type Catalog interface {
	// List returns the models of every provider a session may use, those
	// of the provider first named first, each with its provider, context
	// window, price and whether it can be used now.
	List(ctx context.Context, first string) []protocol.ModelInfo
	// Provider returns the provider called name, or an error a person can
	// act on saying why it cannot be used (its API key is not set).
	Provider(name string) (provider.Provider, error)
	// Price is the configured price of model on the provider name, nil
	// when none is.
	Price(name, model string) *protocol.Price
}

// price is the configured price of s's model now, nil when none is (or
// the server knows no prices).
func (c *conn) price(s *session.Session) *protocol.Price {
	if c.opts.Catalog == nil {
		return nil
	}
	return c.opts.Catalog.Price(s.Provider().Name(), s.Model())
}

// sessionModel answers session.models and session.set_model with s's
// model now and the models it may switch to.
func (c *conn) sessionModel(requestID string, s *session.Session, models []protocol.ModelInfo) error {
	ev := &protocol.SessionModel{RequestID: requestID, SessionID: s.ID(), Model: s.Model(), ContextMaxTokens: s.ContextMaxTokens(), Models: models}
	if c.opts.Catalog != nil {
		ev.Provider, ev.Price = s.Provider().Name(), c.price(s)
	}
	return c.send(ev)
}

// models lists what s may switch to. With a catalog: every configured
// provider's models, s's provider first, with s's configured and current
// models among them. Without: s's configured model first, then the
// provider's list (when it has one) without repeats; bounded either way.
func (c *conn) models(ctx context.Context, s *session.Session) []protocol.ModelInfo {
	if c.opts.Catalog != nil {
		return c.catalogModels(ctx, s)
	}
	ctxMax := s.ContextMaxTokens()
	ids := []string{s.ConfiguredModel()}
	if cur := s.Model(); cur != ids[0] {
		ids = append(ids, cur)
	}
	if c.opts.Models != nil {
		for _, id := range c.opts.Models(ctx) {
			if len(ids) >= maxListedModels {
				break
			}
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	out := make([]protocol.ModelInfo, 0, len(ids))
	for _, id := range ids {
		out = append(out, protocol.ModelInfo{ID: id, ContextMaxTokens: ctxMax})
	}
	return out
}

// catalogModels is models with a catalog.
func (c *conn) catalogModels(ctx context.Context, s *session.Session) []protocol.ModelInfo {
	cur := s.Provider().Name()
	list := c.opts.Catalog.List(ctx, cur)
	// The model the session uses may be one the endpoint stopped listing
	// (or session.start's): it is offered all the same, first.
	if findModel(list, cur, s.Model()) < 0 {
		list = slices.Insert(list, 0, protocol.ModelInfo{ID: s.Model(), Provider: cur, ContextMaxTokens: s.ContextMaxTokens(), Price: c.price(s)})
	}
	if len(list) > maxListedModels {
		list = list[:maxListedModels]
	}
	return list
}

// findModel is the index of model of provider name in list, -1 when it is
// not there.
func findModel(list []protocol.ModelInfo, name, model string) int {
	return slices.IndexFunc(list, func(m protocol.ModelInfo) bool { return m.ID == model && m.Provider == name })
}

// setModel switches s to a model (of another provider, when m names one)
// it may use.
func (c *conn) setModel(ctx context.Context, m *protocol.SetModel, s *session.Session) error {
	model := strings.TrimSpace(m.Model)
	if model == "" {
		return &session.Error{Code: protocol.ErrInvalidRequest, Message: "session.set_model needs a model: one of those session.models lists"}
	}
	cur := s.Provider().Name()
	name := strings.TrimSpace(m.Provider)
	if name == "" {
		name = cur
	}
	if c.opts.Catalog == nil && name != cur {
		return &session.Error{Code: protocol.ErrInvalidRequest, Message: fmt.Sprintf("this server cannot switch a session to another provider (%q); it uses %q", name, cur)}
	}
	models := c.models(ctx, s)
	i := slices.IndexFunc(models, func(mi protocol.ModelInfo) bool {
		return mi.ID == model && (mi.Provider == name || mi.Provider == "")
	})
	if i < 0 {
		return &session.Error{Code: protocol.ErrInvalidRequest, Message: unknownModel(models, name, model, c.opts.Catalog != nil)}
	}
	if c.opts.Catalog == nil {
		s.SetModel(model)
		return c.sessionModel(m.RequestID, s, models)
	}
	// The key is checked before anything changes: a provider that cannot
	// be used leaves the session where it was.
	p, err := c.opts.Catalog.Provider(name)
	if err != nil {
		return &session.Error{Code: protocol.ErrInvalidRequest, Message: fmt.Sprintf("the session stays on %s: %v", s.Model(), err)}
	}
	s.SetTarget(p, model)
	return c.sessionModel(m.RequestID, s, models)
}

// unknownModel says which models of provider name a session may use
// instead of model; byProvider says whether the list names providers.
func unknownModel(models []protocol.ModelInfo, name, model string, byProvider bool) string {
	var shown []string
	for _, mi := range models {
		if (mi.Provider == name || mi.Provider == "") && len(shown) < 5 {
			shown = append(shown, mi.ID)
		}
	}
	if !byProvider {
		return fmt.Sprintf("unknown model %q: this session may use %s (session.models lists them all)", model, strings.Join(shown, ", "))
	}
	if len(shown) == 0 {
		var names []string
		for _, mi := range models {
			if mi.Provider != "" && !slices.Contains(names, mi.Provider) {
				names = append(names, mi.Provider)
			}
		}
		return fmt.Sprintf("unknown provider %q: this session may use %s (session.models lists their models)", name, strings.Join(names, ", "))
	}
	return fmt.Sprintf("unknown model %q of provider %q: this session may use %s (session.models lists them all)", model, name, strings.Join(shown, ", "))
}
