package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

// Bounds of the model listing (GET /models). It is asked for while a
// client waits for a new session, so it is short, and it is a list of
// names, so it is small.
const (
	// ModelsTimeout bounds the whole listing request.
	ModelsTimeout = 3 * time.Second
	// maxModelsBody bounds the listing body read.
	maxModelsBody = 1 << 20
	// maxModels bounds how many ids are kept: a picker of more is of no
	// use, and the list travels in every session/new answer.
	maxModels = 500
	// maxModelID bounds one id; longer ones are skipped.
	maxModelID = 256
)

var _ provider.ModelLister = (*Provider)(nil)

// modelList is the cached outcome of the first listing.
type modelList struct {
	done bool
	ids  []string
	err  error
}

// ListModels returns the models of GET BaseURL/models, sorted. The first
// call asks the endpoint (ModelsTimeout, same headers and key as a model
// request, no retries); its outcome, an error included, is kept for the
// life of the Provider, so an endpoint without the listing costs one
// request per server process, not one per session.
func (p *Provider) ListModels(ctx context.Context) ([]string, error) {
	p.modelsMu.Lock()
	defer p.modelsMu.Unlock()
	if !p.models.done {
		// Not the caller's cancellation: the outcome is shared by every
		// later caller, so one that gave up must not decide it.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.modelsTimeout)
		ids, err := p.fetchModels(lctx)
		cancel()
		p.models = modelList{done: true, ids: ids, err: err}
		if err != nil {
			p.log.Debug("The provider lists no models; clients get no model choice", "error", err.Error())
		} else {
			p.log.Debug("The provider lists its models", "count", len(ids))
		}
	}
	return slices.Clone(p.models.ids), p.models.err
}

// fetchModels asks the endpoint once.
func (p *Provider) fetchModels(ctx context.Context) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.cfg.BaseURL+"/models", nil)
	if err != nil {
		return nil, p.errorf(provider.CodeProviderError, "listing models failed: cannot build the request for %s", redactURL(p.cfg.BaseURL))
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", p.cfg.UserAgent)
	for k, v := range p.cfg.Headers {
		req.Header.Set(k, v)
	}
	if p.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+p.cfg.APIKey)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, p.errorf(provider.CodeProviderError, "listing models failed: no answer within %s", seconds(p.modelsTimeout))
		}
		return nil, p.wrapf(provider.CodeProviderError, err, "listing models failed: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody+1))
	if err != nil {
		return nil, p.wrapf(provider.CodeProviderError, err, "listing models failed: reading the answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, p.errorf(provider.CodeProviderError, "listing models failed: GET /models answered HTTP %d", resp.StatusCode)
	}
	if len(body) > maxModelsBody {
		return nil, p.errorf(provider.CodeResponseLimit, "listing models failed: the answer exceeds %d bytes", maxModelsBody)
	}
	return p.parseModels(body)
}

// parseModels reads an OpenAI model list, {"data":[{"id":"..."}, ...]}.
func (p *Provider) parseModels(body []byte) ([]string, error) {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, p.errorf(provider.CodeProviderError, "listing models failed: the answer is not an OpenAI model list: %v", err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" && len(m.ID) <= maxModelID {
			ids = append(ids, m.ID)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) == 0 {
		return nil, p.errorf(provider.CodeProviderError, "listing models failed: the list is empty")
	}
	if len(ids) > maxModels {
		return nil, p.errorf(provider.CodeResponseLimit, "listing models failed: %d models, more than the %d a client is offered", len(ids), maxModels)
	}
	return ids, nil
}
