package config

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Bounds of the [web] keys.
const (
	minFetchBytes    = 1 << 10
	maxFetchBytes    = 64 << 20
	maxRedirectLimit = 20
	maxFetchSeconds  = 3600
	maxSearchResults = 20
)

var searchBackends = []string{SearchProvider, SearchSearXNG, SearchBrave}

// validateWeb checks the [web] table.
func (v *validator) validateWeb() {
	w := v.c.Web
	v.intRange("web.fetch_max_bytes", w.FetchMaxBytes, minFetchBytes, maxFetchBytes, "a number of bytes")
	v.intRange("web.max_redirects", int64(w.MaxRedirects), 0, maxRedirectLimit, "a number of redirects")
	v.intRange("web.fetch_timeout_seconds", int64(w.FetchTimeoutSeconds), 1, maxFetchSeconds, "a number of seconds")
	v.intRange("web.max_search_results", int64(w.MaxSearchResults), 1, maxSearchResults, "a number of results")
	if len(w.AllowedPorts) == 0 {
		v.fail("web.allowed_ports", "is empty, so web_fetch could connect to no port; list ports such as \"80\", \"443\" and \"8000-8999\", or leave the key out for those defaults")
	}
	for _, p := range w.AllowedPorts {
		if _, err := ParsePortRange(p); err != nil {
			v.fail("web.allowed_ports", "lists %q, which %v; list ports such as \"443\" or ranges such as \"8000-8999\", from 1 to 65535", p, err)
		}
	}
	for _, d := range w.AutoApproveDomains {
		if !validDomainPattern(d) {
			v.fail("web.auto_approve_domains", "lists %q, which is not a host name; list bare host names such as \"docs.rs\" (or \".example.com\" or \"*.example.com\" for every subdomain), without scheme, port or path", d)
		}
	}
	if w.Search != SearchOff {
		v.oneOf("web.search", w.Search, searchBackends, "a web search backend (leave it unset for none)")
	}
	switch w.Search {
	case SearchSearXNG:
		if w.SearXNGURL == "" {
			v.fail("web.search", "is \"searxng\", but web.searxng_url is not set; set it to your SearXNG instance, such as \"http://127.0.0.1:8888\"")
		}
	case SearchBrave:
		if !validEnvName(w.BraveAPIKeyEnv) {
			v.fail("web.brave_api_key_env", "is %q, which is not an environment variable name; use letters, digits and underscores, such as \"BRAVE_API_KEY\"", w.BraveAPIKeyEnv)
		}
	case SearchProvider:
		if name, p, isDemo := v.c.ActiveProvider(); !isDemo && p.WireAPI != WireResponses {
			v.fail("web.search", "is \"provider\", but the active provider %q uses wire_api = %q; hosted search needs wire_api = \"responses\" (or use \"searxng\" or \"brave\")", name, p.WireAPI)
		}
	}
	if w.SearXNGURL != "" {
		u, err := url.Parse(w.SearXNGURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			v.fail("web.searxng_url", "is %q, which is not an http:// or https:// URL; use the base URL of your instance, such as \"http://127.0.0.1:8888\"", w.SearXNGURL)
		case u.User != nil:
			v.fail("web.searxng_url", "contains a user name or password; remove them from the URL")
		}
	}
}

// validDomainPattern reports whether d is a lower-case host name or IPv4
// address, optionally with a leading "." or "*." (that domain's subdomains
// too), as web_fetch reads the allowlist.
func validDomainPattern(d string) bool {
	if rest, ok := strings.CutPrefix(d, "*."); ok {
		d = rest
	} else {
		d = strings.TrimPrefix(d, ".")
	}
	if d == "" || len(d) > 253 || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") || strings.Contains(d, "..") {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// PortRange is an inclusive range of TCP ports, one entry of
// web.allowed_ports; Lo == Hi for one port.
type PortRange struct{ Lo, Hi uint16 }

// ParsePortRange parses an entry of web.allowed_ports: a port ("443") or
// an inclusive range ("8000-8999"), from 1 to 65535. Its error completes
// the sentence "the entry ...".
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, isRange := strings.Cut(strings.TrimSpace(s), "-")
	a, err := parsePort(lo)
	if err != nil {
		return PortRange{}, err
	}
	if !isRange {
		return PortRange{a, a}, nil
	}
	b, err := parsePort(hi)
	if err != nil {
		return PortRange{}, err
	}
	if b < a {
		return PortRange{}, fmt.Errorf("is a range whose end %d is below its start %d", b, a)
	}
	return PortRange{a, b}, nil
}

func parsePort(s string) (uint16, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("is not a port number")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("is not a port number")
		}
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, errors.New("is outside 1 to 65535")
	}
	return uint16(n), nil
}

// Ports returns web.allowed_ports parsed, leaving out entries that do not
// parse (Load refuses a configuration with any).
func (w WebConfig) Ports() []PortRange {
	out := make([]PortRange, 0, len(w.AllowedPorts))
	for _, p := range w.AllowedPorts {
		if r, err := ParsePortRange(p); err == nil {
			out = append(out, r)
		}
	}
	return out
}
