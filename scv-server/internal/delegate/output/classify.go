package output

import (
	"regexp"
	"sync"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
)

// lazyRE compiles expr on first use: compiling these expressions in the
// package's init cost every server start 0.4 ms before `initialized`
// (GODEBUG=inittrace=1), for output that only delegated agents produce.
func lazyRE(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

var (
	// signedOutRE matches errors that read like a missing or lapsed
	// sign-in.
	signedOutRE = lazyRE(`(?i)not (?:logged|signed) in|logged out|signed out|please (?:run )?/?log ?in|run /login|/login\b|\blog ?in (?:again|first|required)|\bsign ?in (?:again|first|required)|login required|missing_credential|missing credential|no credentials|credentials? (?:not found|missing|expired)|authentication(?:_error| failed| required| error)?\b|unauthenticated|invalid[ _-]?api[ _-]?key|api[ _-]?key (?:is )?(?:missing|not (?:set|found|configured)|invalid|required)|no api[ _-]?key|incorrect api key|oauth token (?:has )?expired|token (?:has )?expired|refresh token|codex login|auth\.json`)
	// unavailableRE matches provider failures another agent could avoid:
	// HTTP 401, 403, 404, 429 and 5xx, quota and rate limits, unknown
	// models, and an unreachable provider.
	unavailableRE = lazyRE(`(?i)(?:status(?: code)?|http(?:/\d(?:\.\d)?)?|api error|error code|code|response)\W{0,3}(?:401|403|404|429|5\d\d)\b|\b(?:401|403|404|429|5\d\d) (?:unauthorized|forbidden|not found|too many requests|internal server error|bad gateway|service unavailable|gateway timeout)|\bunauthorized\b|\bforbidden\b|too many requests|rate[ _-]?limit|overloaded|quota|insufficient[ _]credits?|credit balance|billing|usage limit|(?:unknown|invalid|unsupported|no such) model|not a valid model|model[ _](?:not[ _]found|does not exist|is not supported|not available)|\bmodel\W+\S+\W+(?:does not exist|not found|is not supported|is not available)|issue with the selected model|model_not_found|not_found_error|(?:internal server|bad gateway|service unavailable|gateway timeout)|connection refused|could not resolve host|network error|stream disconnected`)
)

// Classify returns the error kind of a reported error (a structured error
// field or the stderr tail, never the reply): signed_out when it reads
// like a missing sign-in, unavailable for a provider failure another
// agent could avoid, otherwise none.
func Classify(text string) delegate.ErrorKind {
	switch {
	case text == "":
		return delegate.ErrorNone
	case signedOutRE().MatchString(text):
		return delegate.ErrorSignedOut
	case unavailableRE().MatchString(text):
		return delegate.ErrorUnavailable
	}
	return delegate.ErrorNone
}
