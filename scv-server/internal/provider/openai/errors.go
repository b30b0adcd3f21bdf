package openai

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/scv-cli/scv/scv-server/internal/oneline"

	"github.com/scv-cli/scv/scv-server/internal/provider"
)

// maxMessageBytes bounds an error message: enough to act on, small enough
// for a turn.failed frame and a log line.
const maxMessageBytes = 1024

// errorf returns a *provider.Error whose message names the provider, is
// redacted and bounded.
func (p *Provider) errorf(code provider.Code, format string, args ...any) *provider.Error {
	return &provider.Error{Code: code, Message: p.message(fmt.Sprintf(format, args...))}
}

// wrapf is errorf keeping err as the cause, so errors.Is still reaches it.
func (p *Provider) wrapf(code provider.Code, err error, format string, args ...any) *provider.Error {
	e := p.errorf(code, format, args...)
	e.Err = err
	return e
}

// message prefixes s with the provider name, removes secrets and control
// characters, and truncates it to maxMessageBytes.
func (p *Provider) message(s string) string {
	return bound(p.redact(p.cfg.Name + ": " + s))
}

func (p *Provider) redact(s string) string {
	for _, sec := range p.secrets {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	return s
}

// bound makes s one line (a provider's HTML or pretty-printed JSON must fit
// one log line) of at most maxMessageBytes.
func bound(s string) string { return oneline.Bound(s, maxMessageBytes) }

// seconds renders d as "120 seconds" or "0.2 seconds".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " seconds"
}

// redactURL drops any userinfo from a URL before it is shown.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}
