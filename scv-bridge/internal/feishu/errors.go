package feishu

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Error codes of the open platform that the adapter acts on (from the
// platform's error code lists; docs/channels.md).
const (
	CodeRateLimited     = 99991400 // over a frequency limit: wait and retry
	CodeTokenInvalid    = 99991661 // malformed or missing access token
	CodeTokenExpired    = 99991663 // tenant access token expired or invalid
	CodeTokenInvalidApp = 99991668 // token of another app or revoked
	CodeBadParam        = 230001
	CodeBotNotInChat    = 230002
	CodeBotDisabled     = 230006
	CodeRecalled        = 230011
	CodeCardRateLimited = 230020 // card/message operations too frequent
	CodeTooLong         = 230025
	CodeNoPermission    = 230027
	CodeDLPBlocked      = 230028 // content blocked by the tenant's audit: never retried
	CodeTooOld          = 230031
	CodeCardBuildFailed = 230099
	CodeUploadTooLarge  = 234006
	CodeUploadEmpty     = 234010
)

// ErrClosed is returned by a Stream used after Close.
var ErrClosed = errors.New("the stream is already closed")

// APIError is an answer of the open platform that is not a success: an
// HTTP status other than 200, or HTTP 200 with a non-zero code.
type APIError struct {
	// Op names the call, such as "send message".
	Op string
	// HTTPStatus is the response's status code.
	HTTPStatus int
	// Code and Msg are the platform's code and message (0, "" when the
	// body was not the platform's JSON).
	Code int
	Msg  string
	// RetryAfter is the wait the platform asked for (x-ogw-ratelimit-reset),
	// zero when it named none.
	RetryAfter time.Duration
}

// Error says what failed and, for the codes a person can fix, how.
func (e *APIError) Error() string {
	s := fmt.Sprintf("feishu %s failed: HTTP %d, code %d", e.Op, e.HTTPStatus, e.Code)
	if e.Msg != "" {
		s += " (" + e.Msg + ")"
	}
	if hint := codeHint(e.Code); hint != "" {
		s += ": " + hint
	}
	return s
}

func codeHint(code int) string {
	switch code {
	case CodeRateLimited, CodeCardRateLimited:
		return "rate limited by the platform"
	case CodeTokenInvalid, CodeTokenExpired, CodeTokenInvalidApp:
		return "the tenant access token was refused; check app_id and the app secret"
	case CodeBotNotInChat:
		return "the bot is not a member of that chat"
	case CodeBotDisabled:
		return "the app's bot capability is off; enable it in the developer console and publish a version"
	case CodeNoPermission:
		return "the app lacks a permission; add the scopes listed in docs/channels.md and publish a version"
	case CodeDLPBlocked:
		return "the tenant's content audit blocked the message; it is not retried"
	case CodeTooLong:
		return "the message is too long"
	case CodeTooOld:
		return "the message is older than 14 days and can no longer be changed"
	case CodeUploadTooLarge:
		return "the file is larger than the platform accepts"
	case CodeUploadEmpty:
		return "the file is empty"
	}
	return ""
}

// Retryable reports whether the same call may succeed later unchanged:
// rate limits and server errors. Bad input, missing permissions, content
// refused by audit and recalled or expired messages are final.
func (e *APIError) Retryable() bool {
	switch {
	case e.HTTPStatus == 429, e.Code == CodeRateLimited, e.Code == CodeCardRateLimited:
		return true
	case e.Code == 0 && e.HTTPStatus >= 500:
		return true
	}
	return false
}

// IsRetryable reports whether err is an APIError that may succeed later,
// or a transport failure (the request may not have reached the platform;
// the idempotency key makes the retry safe).
func IsRetryable(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.Retryable()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return err != nil && !errors.Is(err, errBadInput)
}

// errBadInput marks errors found before any request was made.
var errBadInput = errors.New("bad input")

func tokenCode(code int) bool {
	return code == CodeTokenInvalid || code == CodeTokenExpired || code == CodeTokenInvalidApp
}
