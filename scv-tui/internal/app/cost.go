package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/scv-cli/scv/shared/protocol"

	"github.com/scv-cli/scv/scv-tui/internal/ui/status"
)

// spend is what the session used of one model, with the model's price as
// the server reported it (nil: none configured).
type spend struct {
	provider, model string
	price           *protocol.Price
	usage           protocol.Usage
}

// addSpend counts u against the session's model now.
func (m *Model) addSpend(u protocol.Usage) {
	for i := range m.spends {
		s := &m.spends[i]
		if s.provider == m.provider && s.model == m.model {
			s.usage.Add(u)
			s.price = m.price
			return
		}
	}
	m.spends = append(m.spends, spend{provider: m.provider, model: m.model, price: m.price, usage: u})
}

// money is what u costs at price, in US dollars. Input tokens read from
// the provider's cache cost the cached price where one is configured, the
// input price otherwise (an upper bound).
func money(u protocol.Usage, p *protocol.Price) float64 {
	cached := min(cachedTokens(u), u.InputTokens)
	cachedPrice := p.InputPerMTok
	if p.CachedInputPerMTok != nil {
		cachedPrice = *p.CachedInputPerMTok
	}
	return (float64(u.InputTokens-cached)*p.InputPerMTok + float64(cached)*cachedPrice + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}

// cachedTokens is how many of u's input tokens the provider read from its
// cache; 0 when it did not say.
func cachedTokens(u protocol.Usage) int64 {
	if u.CachedInputTokens == nil {
		return 0
	}
	return *u.CachedInputTokens
}

// dollars formats an amount: cents, or more digits below a cent so a
// small session does not read as free.
func dollars(v float64) string {
	switch {
	case v == 0:
		return "$0.00"
	case v < 0.01:
		return fmt.Sprintf("$%.4f", v)
	default:
		return fmt.Sprintf("$%.2f", v)
	}
}

// moneyText is /cost's money: the sum over the models with a configured
// price, and for each model without one how to configure it. The model
// in use is always named, even before its first turn.
func (m *Model) moneyText() string {
	spends := m.spends
	if !slices.ContainsFunc(spends, func(s spend) bool { return s.provider == m.provider && s.model == m.model }) && m.model != "" {
		spends = append(slices.Clip(spends), spend{provider: m.provider, model: m.model, price: m.price})
	}
	var total float64
	var priced, parts []string
	for _, s := range spends {
		if s.price != nil {
			total += money(s.usage, s.price)
			at := fmt.Sprintf("%s at $%g/$%g per million input/output tokens", s.model, s.price.InputPerMTok, s.price.OutputPerMTok)
			switch {
			case s.price.CachedInputPerMTok != nil:
				at += fmt.Sprintf(", $%g cached", *s.price.CachedInputPerMTok)
			case cachedTokens(s.usage) > 0:
				at += fmt.Sprintf(", cached input at the input price: add cached_input_price to [providers.%s.models.%q] for the lower figure", s.provider, s.model)
			}
			priced = append(priced, at)
			continue
		}
		if s.model == demoModel {
			parts = append(parts, "The demo model runs locally and costs nothing.")
			continue
		}
		name := s.provider
		if name == "" {
			name = "<name>"
		}
		parts = append(parts, fmt.Sprintf("No price configured for %s: add [providers.%s.models.%q] with input_price and output_price (US dollars per million tokens) to config.toml (scv config path shows where) to see the money.", s.model, name, s.model))
	}
	if len(priced) > 0 {
		parts = slices.Insert(parts, 0, fmt.Sprintf("Cost: %s (%s).", dollars(total), strings.Join(priced, "; ")))
	}
	return strings.Join(parts, " ")
}

// costText is /cost: the session's tokens so far, the money where a price
// is configured, and the context in use.
func (m *Model) costText() string {
	input := status.Tokens(m.usage.InputTokens)
	if c := cachedTokens(m.usage); c > 0 {
		input += fmt.Sprintf(" input (%s of them cached)", status.Tokens(c))
	} else {
		input += " input"
	}
	text := fmt.Sprintf("This session has used %s and %s output tokens", input, status.Tokens(m.usage.OutputTokens))
	switch {
	case m.turnsDone == 1:
		text += " (1 turn completed here)"
	case m.turnsDone > 1:
		text += fmt.Sprintf(" (%d turns completed here)", m.turnsDone)
	}
	text += "."
	if mt := m.moneyText(); mt != "" {
		text += " " + mt
	}
	if m.ctxMax > 0 {
		text += fmt.Sprintf(" The context holds about %s of %s tokens (%d%%).", status.Tokens(m.ctxUsed), status.Tokens(m.ctxMax), m.ctxUsed*100/m.ctxMax)
	}
	return text
}
